// The FMA chains that measure the CPU's FMA rate, and the probe behind common/microkernel.h's
// Avx512DoublesFma and TilesUseAvx512.
#include "common/microkernel.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <algorithm>
#include <chrono>

namespace paddlec::ops {
namespace {

/// Multiply-adds per chain per timing: about 10-20 us of one core.
constexpr int64_t kSteps = 4096;

template <class F>
double BestNanos(F&& f) {
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// The chains' results go to a volatile sink, so the loops are not optimised away.
volatile float g_sink;

}  // namespace

// Two copies of one loop: GCC will not inline an AVX-512 intrinsic into a helper compiled for AVX2.
float FmaChains256(int64_t steps) {
  __m256 acc[kFmaChains];
  for (int c = 0; c < kFmaChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  const __m256 m = _mm256_set1_ps(0.999f), a = _mm256_set1_ps(1e-3f);
  for (int64_t i = 0; i < steps; ++i)
#pragma GCC unroll 12  // kFmaChains: the accumulators must live in registers
    for (int c = 0; c < kFmaChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], m, a);
  for (int c = 1; c < kFmaChains; ++c) acc[0] = _mm256_add_ps(acc[0], acc[c]);
  return _mm256_cvtss_f32(acc[0]);
}

__attribute__((target("avx512f"))) float FmaChains512(int64_t steps) {
  __m512 acc[kFmaChains];
  for (int c = 0; c < kFmaChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 m = _mm512_set1_ps(0.999f), a = _mm512_set1_ps(1e-3f);
  for (int64_t i = 0; i < steps; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kFmaChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
  for (int c = 1; c < kFmaChains; ++c) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc[0]);
  return lanes[0];
}

double Avx512FmaTimeRatio() {
  static const double ratio = [] {
    if (!HasAvx512()) return 0.0;
    // Alternating, best of six each (about 0.2 ms in all), so that a burst of another process's load or a frequency
    // change hits both. One 512-bit FMA unit, or two 256-bit halves, take twice as long for the
    // 16-lane chains; two units take as long as for the 8-lane ones.
    double narrow = 1e30, wide = 1e30;
    for (int round = 0; round < 2; ++round) {
      narrow = std::min(narrow, BestNanos([] { g_sink = FmaChains256(kSteps); }));
      wide = std::min(wide, BestNanos([] { g_sink = FmaChains512(kSteps); }));
    }
    return wide / narrow;
  }();
  return ratio;
}

bool Avx512DoublesFma() { return HasAvx512() && Avx512FmaTimeRatio() < 1.5; }

bool Avx512KeepsFmaRate() { return HasAvx512() && Avx512FmaTimeRatio() < 2.2; }

}  // namespace paddlec::ops
#endif
