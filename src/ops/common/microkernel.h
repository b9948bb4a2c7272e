// The register tile the CPU's own GEMM-shaped loops share (Winograd's 16 products in
// nn/winograd.cc, the tiled float32 GEMM in math/gemm.cc): 6 rows x 16 columns, or fewer rows for
// the last rows of a product, and a pair of such tiles side by side (6 x 32; 8 x 32 on AVX-512). The
// build targets AVX2 + FMA (x86-64-v3), where a 6 x 16 tile is 12 accumulators of 8 floats. Where
// AVX-512 runs at least AVX2's flop rate (Avx512KeepsFmaRate: twice it on Intel's server cores, the
// same on AMD Zen 4, which splits 512-bit operations in two), the tiles run on AVX-512 instead,
// chosen at run time: 32 registers hold an 8 x 32 tile that issues half the instructions and fewer
// loads per multiply-add. On a Zen 4 VM the AVX2 tiles ran MLP inference at batch 64 at 77 % of the
// FMA peak, the AVX-512 ones at 97 % (docs/performance.md, "Where the tiles run on AVX-512").
#pragma once

#include <cstdint>
#include <string_view>

#include "paddlec/core/env.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace paddlec::ops {

inline constexpr int kTileRows = 6;
inline constexpr int kTileCols = 16;

/// What happens to the tile after the products: stored as is, or plus a bias per column then
/// clamped at zero when `relu`.
struct TileEpilogue {
  const float* bias = nullptr;  // the tile's 16 columns' bias, or none
  bool relu = false;
};

/// One row of a register tile, kept when kActive (a row MicroTile has) and compiled away otherwise:
/// its two accumulators loaded from C, or increased by A's value times B's 16 columns.
template <bool kActive>
inline void LoadTileRow(const float* c, __m256& lo, __m256& hi) {
  if constexpr (kActive) {
    lo = _mm256_loadu_ps(c);
    hi = _mm256_loadu_ps(c + 8);
  }
}
template <bool kActive>
inline void FmaTileRow(const float* a, __m256 b0, __m256 b1, __m256& lo, __m256& hi) {
  if constexpr (kActive) {
    const __m256 v = _mm256_broadcast_ss(a);
    lo = _mm256_fmadd_ps(v, b0, lo);
    hi = _mm256_fmadd_ps(v, b1, hi);
  }
}

/// Whether the CPU and the OS run AVX-512F.
inline bool HasAvx512() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return has;
}

/// Independent FMA chains FmaChains256/512 run: enough to cover the FMA units' latency x throughput on
/// current x86 cores (4 cycles x 2 units = 8), so the loop runs at the units' peak.
inline constexpr int kFmaChains = 12;
/// `steps` rounds of kFmaChains independent 8-lane multiply-adds (2 x 8 x kFmaChains x steps
/// flops), at the CPU's AVX2 FMA peak; returns a value of the result, for the caller to keep.
float FmaChains256(int64_t steps);
/// The same on 16 lanes, at the AVX-512 peak; only where HasAvx512().
float FmaChains512(int64_t steps);

/// The time of a number of 16-lane FMAs over that of as many 8-lane ones, measured once (about
/// 0.2 ms: common/microkernel.cc): about 1 with two 512-bit FMA units (Intel's server cores), 2 with
/// one (Intel's client cores) or with 256-bit halves (AMD Zen 4), more where AVX-512 lowers the
/// clock. 0 without AVX-512.
double Avx512FmaTimeRatio();
/// Whether an AVX-512 multiply-add does twice the work of an AVX2 one here (a ratio under 1.5). What
/// oneDNN's direct convolutions gain over paddlec's Winograd transforms depends on it.
bool Avx512DoublesFma();
/// Whether AVX-512 runs at about AVX2's flop rate or more here (a ratio under 2.2), so that the
/// AVX-512 tiles, with fewer instructions and loads, gain even where the rate is the same.
bool Avx512KeepsFmaRate();

/// Whether MicroTile runs on AVX-512: where it keeps AVX2's flop rate (Avx512KeepsFmaRate), unless
/// PADDLEC_AVX512 is `off`; `on` takes it wherever the CPU has AVX-512 (for tests and comparisons).
inline bool TilesUseAvx512() {
  static const bool use = [] {
    const std::string_view choice = EnvChoice(kAvx512Switch).value_or("auto");
    if (choice == "off" || !HasAvx512()) return false;
    return choice == "on" || Avx512KeepsFmaRate();
  }();
  return use;
}

#define PADDLEC_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline

/// MicroTile512's row: as FmaTileRow, one 16-float accumulator.
template <bool kActive>
PADDLEC_AVX512_INLINE void FmaTileRow512(const float* a, __m512 b, __m512& acc) {
  if constexpr (kActive) acc = _mm512_fmadd_ps(_mm512_set1_ps(*a), b, acc);
}

/// MicroTile on AVX-512: a row of 16 columns is one register, so the tile sums even and odd k in
/// separate accumulators, 12 independent FMA chains as on AVX2 (six would leave the FMA units
/// waiting on their latency), and adds the two at the end.
template <bool kTransposedA, int kRows>
__attribute__((target("avx512f"))) void MicroTile512(int64_t depth, const float* a, int64_t lda, const float* b,
                                                     int64_t ldb, float* c, int64_t ldc, TileEpilogue e,
                                                     bool accumulate) {
  __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
  __m512 d0 = c0, d1 = c0, d2 = c0, d3 = c0, d4 = c0, d5 = c0;
  if (accumulate) {
    c0 = _mm512_loadu_ps(c);
    if constexpr (kRows > 1) c1 = _mm512_loadu_ps(c + ldc);
    if constexpr (kRows > 2) c2 = _mm512_loadu_ps(c + 2 * ldc);
    if constexpr (kRows > 3) c3 = _mm512_loadu_ps(c + 3 * ldc);
    if constexpr (kRows > 4) c4 = _mm512_loadu_ps(c + 4 * ldc);
    if constexpr (kRows > 5) c5 = _mm512_loadu_ps(c + 5 * ldc);
  }
  const int64_t row = kTransposedA ? 1 : lda, col = kTransposedA ? lda : 1;
  const float* a0 = a;
  const float* a1 = kRows > 1 ? a + row : a;
  const float* a2 = kRows > 2 ? a + 2 * row : a;
  const float* a3 = kRows > 3 ? a + 3 * row : a;
  const float* a4 = kRows > 4 ? a + 4 * row : a;
  const float* a5 = kRows > 5 ? a + 5 * row : a;
  int64_t k = 0;
  for (; k + 2 <= depth; k += 2, b += 2 * ldb) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + ldb);
    const int64_t q = k * col, r = q + col;
    FmaTileRow512<true>(a0 + q, b0, c0);
    FmaTileRow512<(kRows > 1)>(a1 + q, b0, c1);
    FmaTileRow512<(kRows > 2)>(a2 + q, b0, c2);
    FmaTileRow512<(kRows > 3)>(a3 + q, b0, c3);
    FmaTileRow512<(kRows > 4)>(a4 + q, b0, c4);
    FmaTileRow512<(kRows > 5)>(a5 + q, b0, c5);
    FmaTileRow512<true>(a0 + r, b1, d0);
    FmaTileRow512<(kRows > 1)>(a1 + r, b1, d1);
    FmaTileRow512<(kRows > 2)>(a2 + r, b1, d2);
    FmaTileRow512<(kRows > 3)>(a3 + r, b1, d3);
    FmaTileRow512<(kRows > 4)>(a4 + r, b1, d4);
    FmaTileRow512<(kRows > 5)>(a5 + r, b1, d5);
  }
  if (k < depth) {
    const __m512 b0 = _mm512_loadu_ps(b);
    const int64_t q = k * col;
    FmaTileRow512<true>(a0 + q, b0, c0);
    FmaTileRow512<(kRows > 1)>(a1 + q, b0, c1);
    FmaTileRow512<(kRows > 2)>(a2 + q, b0, c2);
    FmaTileRow512<(kRows > 3)>(a3 + q, b0, c3);
    FmaTileRow512<(kRows > 4)>(a4 + q, b0, c4);
    FmaTileRow512<(kRows > 5)>(a5 + q, b0, c5);
  }
  __m512 acc[kTileRows] = {_mm512_add_ps(c0, d0), _mm512_add_ps(c1, d1), _mm512_add_ps(c2, d2),
                           _mm512_add_ps(c3, d3), _mm512_add_ps(c4, d4), _mm512_add_ps(c5, d5)};
  const __m512 bias = e.bias ? _mm512_loadu_ps(e.bias) : _mm512_setzero_ps();
  for (int r = 0; r < kRows; ++r) {
    __m512 v = acc[r];
    if (e.bias) v = _mm512_add_ps(v, bias);
    // The all-lanes masked form: GCC 12's _mm512_max_ps warns of its own undefined operand.
    if (e.relu) v = _mm512_maskz_max_ps(static_cast<__mmask16>(0xFFFF), v, _mm512_setzero_ps());
    _mm512_storeu_ps(c + r * ldc, v);
  }
}

/// MicroTilePair512's row: one broadcast of A's value into both halves' accumulators.
template <bool kActive>
PADDLEC_AVX512_INLINE void FmaPairRow512(const float* a, __m512 lo, __m512 hi, __m512& acc_lo, __m512& acc_hi) {
  if constexpr (kActive) {
    const __m512 v = _mm512_set1_ps(*a);
    acc_lo = _mm512_fmadd_ps(v, lo, acc_lo);
    acc_hi = _mm512_fmadd_ps(v, hi, acc_hi);
  }
}

/// Rows of MicroTilePair512's tile: 8, sixteen accumulators. Each broadcast of A feeds two registers
/// of B, so a multiply-add loads 0.63 operands (6 rows: 0.67; MicroTile512: 1.17, which kept that one
/// at about 65 % of the FMA peak). One thread, 64 x 784 x 32 with A and B in L1/L2, GFLOP/s of 175:
/// 168-172 in 8-row tiles, 159-163 in 6-row ones (ten and a 4-row tile, which has only 8 FMA chains).
inline constexpr int kPairTileRows512 = 8;

/// A's rows are read with no software prefetch: the one this tile had (each row two cache lines
/// ahead, every 16 k), measured useful for a fresh A before the tile grew to 8 rows over the whole
/// depth, cost time in every case since. 2-core Xeon VM, `paddlec_bench inference --opt-level 2`, 3
/// alternating runs, ms, with / without: MLP b64 0.178-0.180 / 0.171, with its input rewritten
/// before every step (--fresh-feeds) 0.194-0.195 / 0.190; b256 0.753-0.757 / 0.730-0.732; LeNet b64
/// 1.200-1.209 / 1.152-1.172, fresh 1.219-1.243 / 1.158-1.164.
template <bool kTransposedA, int kRows>
__attribute__((target("avx512f"))) void MicroTilePair512(int64_t depth, const float* a, int64_t lda, const float* b_lo,
                                                         const float* b_hi, int64_t ldb, float* c, int64_t ldc,
                                                         TileEpilogue e, bool accumulate) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  __m512 c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  static_assert(kRows >= 1 && kRows <= kPairTileRows512);
  if (accumulate) {
    c00 = _mm512_loadu_ps(c), c01 = _mm512_loadu_ps(c + 16);
    if constexpr (kRows > 1) c10 = _mm512_loadu_ps(c + ldc), c11 = _mm512_loadu_ps(c + ldc + 16);
    if constexpr (kRows > 2) c20 = _mm512_loadu_ps(c + 2 * ldc), c21 = _mm512_loadu_ps(c + 2 * ldc + 16);
    if constexpr (kRows > 3) c30 = _mm512_loadu_ps(c + 3 * ldc), c31 = _mm512_loadu_ps(c + 3 * ldc + 16);
    if constexpr (kRows > 4) c40 = _mm512_loadu_ps(c + 4 * ldc), c41 = _mm512_loadu_ps(c + 4 * ldc + 16);
    if constexpr (kRows > 5) c50 = _mm512_loadu_ps(c + 5 * ldc), c51 = _mm512_loadu_ps(c + 5 * ldc + 16);
    if constexpr (kRows > 6) c60 = _mm512_loadu_ps(c + 6 * ldc), c61 = _mm512_loadu_ps(c + 6 * ldc + 16);
    if constexpr (kRows > 7) c70 = _mm512_loadu_ps(c + 7 * ldc), c71 = _mm512_loadu_ps(c + 7 * ldc + 16);
  }
  const int64_t row = kTransposedA ? 1 : lda, col = kTransposedA ? lda : 1;
  const float* a0 = a;
  const float* a1 = kRows > 1 ? a + row : a;
  const float* a2 = kRows > 2 ? a + 2 * row : a;
  const float* a3 = kRows > 3 ? a + 3 * row : a;
  const float* a4 = kRows > 4 ? a + 4 * row : a;
  const float* a5 = kRows > 5 ? a + 5 * row : a;
  const float* a6 = kRows > 6 ? a + 6 * row : a;
  const float* a7 = kRows > 7 ? a + 7 * row : a;
  for (int64_t k = 0; k < depth; ++k, b_lo += ldb, b_hi += ldb) {
    const __m512 lo = _mm512_loadu_ps(b_lo), hi = _mm512_loadu_ps(b_hi);
    const int64_t q = k * col;
    FmaPairRow512<true>(a0 + q, lo, hi, c00, c01);
    FmaPairRow512<(kRows > 1)>(a1 + q, lo, hi, c10, c11);
    FmaPairRow512<(kRows > 2)>(a2 + q, lo, hi, c20, c21);
    FmaPairRow512<(kRows > 3)>(a3 + q, lo, hi, c30, c31);
    FmaPairRow512<(kRows > 4)>(a4 + q, lo, hi, c40, c41);
    FmaPairRow512<(kRows > 5)>(a5 + q, lo, hi, c50, c51);
    FmaPairRow512<(kRows > 6)>(a6 + q, lo, hi, c60, c61);
    FmaPairRow512<(kRows > 7)>(a7 + q, lo, hi, c70, c71);
  }
  __m512 acc[kPairTileRows512][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                                     {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  const __m512 bias_lo = e.bias ? _mm512_loadu_ps(e.bias) : _mm512_setzero_ps();
  const __m512 bias_hi = e.bias ? _mm512_loadu_ps(e.bias + 16) : _mm512_setzero_ps();
  const __m512 zero = _mm512_setzero_ps();
  constexpr __mmask16 kAll = 0xFFFF;
  for (int r = 0; r < kRows; ++r) {
    __m512 lo = acc[r][0], hi = acc[r][1];
    if (e.bias) lo = _mm512_add_ps(lo, bias_lo), hi = _mm512_add_ps(hi, bias_hi);
    // The all-lanes masked form: GCC 12's _mm512_max_ps warns of its own undefined operand.
    if (e.relu) lo = _mm512_maskz_max_ps(kAll, lo, zero), hi = _mm512_maskz_max_ps(kAll, hi, zero);
    _mm512_storeu_ps(c + r * ldc, lo);
    _mm512_storeu_ps(c + r * ldc + 16, hi);
  }
}

/// C[R x 16] = A[R x depth] * B[depth x 16] (plus C's own values when `accumulate`), then the
/// epilogue, for R = kRows: 6, or fewer for the last rows of a product whose rows are not a
/// multiple of 6. A's rows are at stride lda (or, with kTransposedA, A is stored [depth x R] as
/// columns at stride lda: a weight gradient's X^T, copied into row tiles by math/gemm.cc's
/// PackTransposedTiles), B's rows at stride ldb, C's at stride ldc. The accumulators are named: GCC
/// stores an array of them to the stack on every iteration. Fewer rows are fewer independent FMA
/// chains, so a 4-row tile takes about 4/6 of a full tile's time (FMA latency bound) rather than
/// all of it, as a 6-row tile overlapping the rows before it did.
template <bool kTransposedA = false, int kRows = kTileRows>
inline void MicroTile(int64_t depth, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                      TileEpilogue e = {}, bool accumulate = false) {
  static_assert(kRows >= 1 && kRows <= kTileRows);
  if (TilesUseAvx512()) return MicroTile512<kTransposedA, kRows>(depth, a, lda, b, ldb, c, ldc, e, accumulate);
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  if (accumulate) {
    LoadTileRow<true>(c, c00, c01);
    LoadTileRow<(kRows > 1)>(c + ldc, c10, c11);
    LoadTileRow<(kRows > 2)>(c + 2 * ldc, c20, c21);
    LoadTileRow<(kRows > 3)>(c + 3 * ldc, c30, c31);
    LoadTileRow<(kRows > 4)>(c + 4 * ldc, c40, c41);
    LoadTileRow<(kRows > 5)>(c + 5 * ldc, c50, c51);
  }
  // Element (r, k) of A is at a + r * row + k * col; rows past kRows point at row 0, never read.
  const int64_t row = kTransposedA ? 1 : lda, col = kTransposedA ? lda : 1;
  const float* a0 = a;
  const float* a1 = kRows > 1 ? a + row : a;
  const float* a2 = kRows > 2 ? a + 2 * row : a;
  const float* a3 = kRows > 3 ? a + 3 * row : a;
  const float* a4 = kRows > 4 ? a + 4 * row : a;
  const float* a5 = kRows > 5 ? a + 5 * row : a;
  for (int64_t k = 0; k < depth; ++k, b += ldb) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    const int64_t q = k * col;
    FmaTileRow<true>(a0 + q, b0, b1, c00, c01);
    FmaTileRow<(kRows > 1)>(a1 + q, b0, b1, c10, c11);
    FmaTileRow<(kRows > 2)>(a2 + q, b0, b1, c20, c21);
    FmaTileRow<(kRows > 3)>(a3 + q, b0, b1, c30, c31);
    FmaTileRow<(kRows > 4)>(a4 + q, b0, b1, c40, c41);
    FmaTileRow<(kRows > 5)>(a5 + q, b0, b1, c50, c51);
  }
  __m256 acc[kTileRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  const __m256 bias0 = e.bias ? _mm256_loadu_ps(e.bias) : _mm256_setzero_ps();
  const __m256 bias1 = e.bias ? _mm256_loadu_ps(e.bias + 8) : _mm256_setzero_ps();
  for (int r = 0; r < kRows; ++r) {
    __m256 lo = acc[r][0], hi = acc[r][1];
    if (e.bias) {
      lo = _mm256_add_ps(lo, bias0);
      hi = _mm256_add_ps(hi, bias1);
    }
    if (e.relu) {
      lo = _mm256_max_ps(lo, _mm256_setzero_ps());
      hi = _mm256_max_ps(hi, _mm256_setzero_ps());
    }
    _mm256_storeu_ps(c + r * ldc, lo);
    _mm256_storeu_ps(c + r * ldc + 8, hi);
  }
}

/// MicroTile for `rows` (1 to 6) known only at run time.
template <bool kTransposedA = false>
inline void MicroTileRows(int rows, int64_t depth, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                          int64_t ldc, TileEpilogue e = {}, bool accumulate = false) {
  switch (rows) {
    case 1:
      return MicroTile<kTransposedA, 1>(depth, a, lda, b, ldb, c, ldc, e, accumulate);
    case 2:
      return MicroTile<kTransposedA, 2>(depth, a, lda, b, ldb, c, ldc, e, accumulate);
    case 3:
      return MicroTile<kTransposedA, 3>(depth, a, lda, b, ldb, c, ldc, e, accumulate);
    case 4:
      return MicroTile<kTransposedA, 4>(depth, a, lda, b, ldb, c, ldc, e, accumulate);
    case 5:
      return MicroTile<kTransposedA, 5>(depth, a, lda, b, ldb, c, ldc, e, accumulate);
    default:
      return MicroTile<kTransposedA, kTileRows>(depth, a, lda, b, ldb, c, ldc, e, accumulate);
  }
}

/// Rows of MicroTilePairRows' tile: kPairTileRows512 where the tiles run on AVX-512, else kTileRows.
inline int PairTileRows() { return TilesUseAvx512() ? kPairTileRows512 : kTileRows; }

/// C[R x 32] = A[R x depth] * [B_lo | B_hi] (two 16-column blocks read at the same ldb, as two
/// panels of a packed B are), then the epilogue, whose bias then holds 32 values, for `rows` 1 to
/// PairTileRows(). On AVX-512 it is one tile (MicroTilePair512), which runs at about 90 % of the FMA
/// peak where MicroTile512 reaches 65 % (6 x 784 x 32 from L2, one thread, 190 against 133 GFLOP/s of
/// 212); on AVX2 it is the two MicroTiles.
template <bool kTransposedA = false>
inline void MicroTilePairRows(int rows, int64_t depth, const float* a, int64_t lda, const float* b_lo,
                              const float* b_hi, int64_t ldb, float* c, int64_t ldc, TileEpilogue e = {},
                              bool accumulate = false) {
  if (TilesUseAvx512()) {
    switch (rows) {
      case 1:
        return MicroTilePair512<kTransposedA, 1>(depth, a, lda, b_lo, b_hi, ldb, c, ldc, e, accumulate);
      case 2:
        return MicroTilePair512<kTransposedA, 2>(depth, a, lda, b_lo, b_hi, ldb, c, ldc, e, accumulate);
      case 3:
        return MicroTilePair512<kTransposedA, 3>(depth, a, lda, b_lo, b_hi, ldb, c, ldc, e, accumulate);
      case 4:
        return MicroTilePair512<kTransposedA, 4>(depth, a, lda, b_lo, b_hi, ldb, c, ldc, e, accumulate);
      case 5:
        return MicroTilePair512<kTransposedA, 5>(depth, a, lda, b_lo, b_hi, ldb, c, ldc, e, accumulate);
      case 6:
        return MicroTilePair512<kTransposedA, 6>(depth, a, lda, b_lo, b_hi, ldb, c, ldc, e, accumulate);
      case 7:
        return MicroTilePair512<kTransposedA, 7>(depth, a, lda, b_lo, b_hi, ldb, c, ldc, e, accumulate);
      default:
        return MicroTilePair512<kTransposedA, 8>(depth, a, lda, b_lo, b_hi, ldb, c, ldc, e, accumulate);
    }
  }
  MicroTileRows<kTransposedA>(rows, depth, a, lda, b_lo, ldb, c, ldc, e, accumulate);
  const TileEpilogue hi{e.bias ? e.bias + kTileCols : nullptr, e.relu};
  MicroTileRows<kTransposedA>(rows, depth, a, lda, b_hi, ldb, c + kTileCols, ldc, hi, accumulate);
}

}  // namespace paddlec::ops

#undef PADDLEC_AVX512_INLINE

#endif
