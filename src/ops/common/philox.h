// Philox4x32-10: a counter-based random generator (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3", SC'11).
//
// Element i of draw number `step` is a pure function of (seed, step, i), so random kernels give
// bit-identical results for a given seed whatever the thread count or chunking, and the CUDA twin
// can produce the same stream.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

// The same generator runs in CUDA kernels (the .cu files include this header), so a GPU draws the
// bits the CPU draws.
#ifdef __CUDACC__
#define PC_HOST_DEVICE __host__ __device__
#else
#define PC_HOST_DEVICE
#endif

namespace paddlec::ops {

class Philox {
 public:
  PC_HOST_DEVICE explicit Philox(uint64_t seed) : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)} {}

  /// Four 32-bit random words for counter (hi, lo).
  PC_HOST_DEVICE std::array<uint32_t, 4> Block(uint64_t hi, uint64_t lo) const {
    std::array<uint32_t, 4> c = {static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32),
                                 static_cast<uint32_t>(hi), static_cast<uint32_t>(hi >> 32)};
    std::array<uint32_t, 2> k = key_;
    for (int r = 0; r < 10; ++r) {
      uint64_t p0 = uint64_t{0xD2511F53} * c[0];
      uint64_t p1 = uint64_t{0xCD9E8D57} * c[2];
      c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    return c;
  }

  /// Uniform in [0, 1) with 24 random bits (exactly representable in float).
  PC_HOST_DEVICE static float ToUnitFloat(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }
  /// Uniform in [0, 1) with 53 random bits.
  PC_HOST_DEVICE static double ToUnitDouble(uint32_t a, uint32_t b) {
    uint64_t x = (static_cast<uint64_t>(a) << 21) ^ (b >> 11);
    return static_cast<double>(x & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
  }

  /// Uniform [0, 1) float for element `i` of draw `step`.
  PC_HOST_DEVICE float UniformFloat(uint64_t step, uint64_t i) const { return ToUnitFloat(Block(step, i / 4)[i % 4]); }
  /// Uniform [0, 1) double for element `i` of draw `step`.
  PC_HOST_DEVICE double UniformDouble(uint64_t step, uint64_t i) const {
    auto b = Block(step, i / 2);
    return ToUnitDouble(b[2 * (i % 2)], b[2 * (i % 2) + 1]);
  }
  /// Standard normal for element `i` of draw `step` (Box-Muller on one counter block).
  PC_HOST_DEVICE double Normal(uint64_t step, uint64_t i) const {
    auto b = Block(step, i / 2);
    double u1 = ToUnitDouble(b[0], b[1]), u2 = ToUnitDouble(b[2], b[3]);
    if (u1 < 1e-300) u1 = 1e-300;
    double r = std::sqrt(-2.0 * std::log(u1));
    constexpr double kTwoPi = 6.283185307179586;
    return (i % 2 == 0) ? r * std::cos(kTwoPi * u2) : r * std::sin(kTwoPi * u2);
  }

 private:
  std::array<uint32_t, 2> key_;
};

}  // namespace paddlec::ops
