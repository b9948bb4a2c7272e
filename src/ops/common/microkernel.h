// The AVX2 + FMA register tile the CPU's own GEMM-shaped loops share (Winograd's 16 products in
// nn/winograd.cc, the tiled float32 GEMM in math/gemm.cc): 6 rows x 16 columns in 12
// accumulators, or fewer rows for the last rows of a product.
#pragma once

#include <cstdint>

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

}  // namespace paddlec::ops

#endif
