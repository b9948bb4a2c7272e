// The maps from Philox words to uniform_random and gaussian_random values that the CUDA kernels
// (random.cu) apply, written as __host__ __device__ code so that a host test (random_map_test.cc)
// checks them bit for bit against the CPU kernels of random.cc: the GPU draws the CPU's values.
//
// Contraction. random.cc is built for x86-64-v3, where GCC contracts `lo + span * u` into
// fma(span, u, lo) and `mean + std * z` into fma(z, std, mean) (checked in its disassembly); the
// maps write those fmas explicitly, and every other product here feeds no addition, so neither
// compiler can fuse anything else. A build of random.cc without FMA would round differently: the
// host test then fails, as it should (the GPU would no longer match that CPU).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/philox.h"

namespace paddlec::ops::random_map {

/// Counter-block words per element: float takes one 32-bit word, double two.
template <class T>
inline constexpr int kPerBlock = sizeof(T) == 4 ? 4 : 2;

/// The uniform [0, 1) value of element j (< kPerBlock<T>) of counter block `w`, as a double.
template <class T, class Words>
PC_HOST_DEVICE inline double UnitAt(const Words& w, int j) {
  if constexpr (sizeof(T) == 4)
    return static_cast<double>(Philox::ToUnitFloat(w[j]));
  else
    return Philox::ToUnitDouble(w[2 * j], w[2 * j + 1]);
}

/// UniformKernel's map: T(lo + span * u), moved to `below_hi` when it rounds up to `hi`.
template <class T>
PC_HOST_DEVICE inline T UniformValue(double u, double lo, double span, T hi, T below_hi) {
  T v = static_cast<T>(fma(u, span, lo));
  return v >= hi && span > 0 ? below_hi : v;
}

/// uniform_random's diagonal: element i is overwritten when i = j * (diag_step + 1) for j < diag_num.
PC_HOST_DEVICE inline bool OnDiagonal(int64_t i, int64_t diag_num, int64_t diag_step) {
  return diag_num > 0 && i % (diag_step + 1) == 0 && i / (diag_step + 1) < diag_num;
}

/// GaussianKernel's Box-Muller pair of counter block `w`: out0 = T(mean + std * r cos(2 pi u2)),
/// out1 = T(mean + std * r sin(2 pi u2)), r = sqrt(-2 log u1), with r = r_floor when u1 < 1e-300.
/// log, sin and cos are the device's or glibc's: the one place where the two may differ (random.cu).
template <class T, class Words>
PC_HOST_DEVICE inline void GaussianPair(const Words& w, double mean, double std, double r_floor, T* out0, T* out1) {
  constexpr double kTwoPi = 6.283185307179586;
  const double u1 = Philox::ToUnitDouble(w[0], w[1]), u2 = Philox::ToUnitDouble(w[2], w[3]);
  const double r = u1 < 1e-300 ? r_floor : sqrt(-2.0 * log(u1));
  const double a = kTwoPi * u2;
  const double z0 = r * cos(a), z1 = r * sin(a);
  *out0 = static_cast<T>(fma(z0, std, mean));
  *out1 = static_cast<T>(fma(z1, std, mean));
}

}  // namespace paddlec::ops::random_map
