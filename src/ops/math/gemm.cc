// Batched matrix products: float32 on TiledGemm (common/microkernel.h's register tiles) for 2-D
// products of at least 6 x 16 (where oneDNN runs AVX-512, only those whose B stays packed) and
// oneDNN's matmul otherwise, float64 on Eigen.
#include "math/gemm.h"

#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/microkernel.h"
#include "paddlec/core/env.h"
#include "paddlec/runtime/onednn.h"
#include "paddlec/runtime/threads.h"

namespace paddlec::ops::math {

namespace {

// Small products run oneDNN on the calling thread (runtime::OneDnnThreads): oneDNN's threaded GEMM
// splits a one-row product along K and joins the halves at a spinning barrier. Few-row products do
// not reach oneDNN at all (SmallRowsGemm).

/// Rows up to which SmallRowsGemm replaces oneDNN (fc and mul at batch 1..4).
constexpr int64_t kSmallRows = 4;
/// Columns per task of SmallRowsGemm: a multiple of the vector width, and enough work per task
/// (K * 64 multiply-adds) that the fork is paid back.
constexpr int64_t kColumnBlock = 64;

/// acc[0, 64) += A's row `a` (K values) times B's 64 columns at `b` (rows ldb apart), in eight
/// registers. Written as a loop over an array, GCC kept the accumulators on the stack and went
/// through memory at every k: 1 x 3136 x 128 (LeNet's fc1 at batch 1) took 28 us on 2 threads.
inline void RowTimesBlock64(int64_t k, const float* a, const float* b, int64_t ldb, float* acc) {
#if defined(__AVX2__) && defined(__FMA__)
  __m256 c0 = _mm256_loadu_ps(acc), c1 = _mm256_loadu_ps(acc + 8), c2 = _mm256_loadu_ps(acc + 16);
  __m256 c3 = _mm256_loadu_ps(acc + 24), c4 = _mm256_loadu_ps(acc + 32), c5 = _mm256_loadu_ps(acc + 40);
  __m256 c6 = _mm256_loadu_ps(acc + 48), c7 = _mm256_loadu_ps(acc + 56);
  for (int64_t q = 0; q < k; ++q, b += ldb) {
    const __m256 v = _mm256_broadcast_ss(a + q);
    c0 = _mm256_fmadd_ps(v, _mm256_loadu_ps(b), c0);
    c1 = _mm256_fmadd_ps(v, _mm256_loadu_ps(b + 8), c1);
    c2 = _mm256_fmadd_ps(v, _mm256_loadu_ps(b + 16), c2);
    c3 = _mm256_fmadd_ps(v, _mm256_loadu_ps(b + 24), c3);
    c4 = _mm256_fmadd_ps(v, _mm256_loadu_ps(b + 32), c4);
    c5 = _mm256_fmadd_ps(v, _mm256_loadu_ps(b + 40), c5);
    c6 = _mm256_fmadd_ps(v, _mm256_loadu_ps(b + 48), c6);
    c7 = _mm256_fmadd_ps(v, _mm256_loadu_ps(b + 56), c7);
  }
  _mm256_storeu_ps(acc, c0), _mm256_storeu_ps(acc + 8, c1), _mm256_storeu_ps(acc + 16, c2);
  _mm256_storeu_ps(acc + 24, c3), _mm256_storeu_ps(acc + 32, c4), _mm256_storeu_ps(acc + 40, c5);
  _mm256_storeu_ps(acc + 48, c6), _mm256_storeu_ps(acc + 56, c7);
#else
  for (int64_t q = 0; q < k; ++q)
    for (int64_t j = 0; j < kColumnBlock; ++j) acc[j] += a[q] * b[q * ldb + j];
#endif
}

#if defined(__AVX2__) && defined(__FMA__)
/// acc[M][64] (rows 64 apart) += A's M rows (lda apart) times a packed panel of B: K rows of 16 * V
/// contiguous columns (V = 4 but in a last, narrower panel). One pass over the panel serves every
/// row, V zmm accumulators a row; a single row keeps a second set for odd k, so 2V sums are in
/// flight. The panel streams from L2 a cache line per load: 0.8 MB (half of LeNet's fc1) took 4.4 us
/// on one core of a Xeon with two AVX-512 FMA units, against 6.9-8.4 us for RowTimesBlock64 on the
/// unpacked rows.
template <int M, int V>
__attribute__((target("avx512f"))) void RowsTimesPanel512(int64_t k, const float* a, int64_t lda, const float* p,
                                                          float* acc) {
  constexpr int64_t kWidth = 16 * V;
  __m512 c[M][V], d[V];
  for (int i = 0; i < M; ++i)
    for (int v = 0; v < V; ++v) c[i][v] = _mm512_loadu_ps(acc + i * kColumnBlock + 16 * v);
  for (int v = 0; v < V; ++v) d[v] = _mm512_setzero_ps();
  int64_t q = 0;
  if constexpr (M == 1) {
    for (; q + 1 < k; q += 2, p += 2 * kWidth) {
      const __m512 x0 = _mm512_set1_ps(a[q]), x1 = _mm512_set1_ps(a[q + 1]);
      for (int v = 0; v < V; ++v) {
        c[0][v] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(p + 16 * v), c[0][v]);
        d[v] = _mm512_fmadd_ps(x1, _mm512_loadu_ps(p + kWidth + 16 * v), d[v]);
      }
    }
  }
  for (; q < k; ++q, p += kWidth) {
    __m512 w[V];
    for (int v = 0; v < V; ++v) w[v] = _mm512_loadu_ps(p + 16 * v);
    for (int i = 0; i < M; ++i) {
      const __m512 x = _mm512_set1_ps(a[i * lda + q]);
      for (int v = 0; v < V; ++v) c[i][v] = _mm512_fmadd_ps(x, w[v], c[i][v]);
    }
  }
  for (int i = 0; i < M; ++i)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(acc + i * kColumnBlock + 16 * v, _mm512_add_ps(c[i][v], d[v]));
}

using PanelKernel512 = void (*)(int64_t, const float*, int64_t, const float*, float*);
template <int M>
constexpr PanelKernel512 kPanelWidths512[4] = {RowsTimesPanel512<M, 1>, RowsTimesPanel512<M, 2>,
                                               RowsTimesPanel512<M, 3>, RowsTimesPanel512<M, 4>};
/// By rows (1..kSmallRows), then by the panel's width in 16-column vectors (1..4).
constexpr const PanelKernel512* kRowsTimesPanel512[kSmallRows] = {kPanelWidths512<1>, kPanelWidths512<2>,
                                                                  kPanelWidths512<3>, kPanelWidths512<4>};
#endif

/// Width of the packed panel of B's columns from j0: a 64-column block, or the last block's columns
/// rounded up to a vector. Padded to 64, fc's 10-class output layer read 6 times its weights.
int64_t SmallRowsPanelWidth(int64_t n, int64_t j0) { return std::min(kColumnBlock, (n - j0 + 15) / 16 * 16); }

/// Room SmallRowsGemm's packed B takes: K rows of every panel (SmallRowsPanelWidth).
int64_t SmallRowsPackedSize(const GemmShape& s) {
  const int64_t last = (s.n - 1) / kColumnBlock * kColumnBlock;
  return (last + SmallRowsPanelWidth(s.n, last)) * s.k;
}

/// B [K, N] as SmallRowsGemm reads it packed: each panel's K rows contiguous, so that a thread's
/// slice of B is one sequential stream. Panel j0 starts at j0 * K (only the last is narrower).
void PackSmallRowsB(const GemmShape& s, const float* b, float* packed) {
  for (int64_t j0 = 0; j0 < s.n; j0 += kColumnBlock) {
    const int64_t w = std::min(kColumnBlock, s.n - j0), width = SmallRowsPanelWidth(s.n, j0);
    float* panel = packed + j0 * s.k;
    for (int64_t q = 0; q < s.k; ++q) {
      float* row = panel + q * width;
      std::memcpy(row, b + q * s.n + j0, static_cast<size_t>(w) * sizeof(float));
      std::fill(row + w, row + width, 0.0f);
    }
  }
}

/// C [M, N] = epilogue(A [M, K] * B [K, N]) for a few rows, split by columns over the pool: each
/// thread streams its own slice of B, always the same one, so at batch 1 the weights of an fc layer
/// stay in the threads' L2 caches between steps (784x512 floats are 1.6 MB, half per core) and the
/// product runs at cache speed. `packed` is B packed by PackSmallRowsB (a B kept between calls: an
/// inference's weights), or null to read B as it is. The only synchronisation is the pool's fork and
/// join, which sleep after a bounded spin (runtime/threads.h), so a busy machine slows it down
/// gracefully.
///
/// One thread running every block goes through them `backwards` on every other call. The MLP's
/// weights (2.15 MB packed) overflow one core's 2 MiB L2 by a little: read in the same order at
/// every step, each block had been evicted just before its turn came, and every read came from L3;
/// read back the other way, a step starts on the blocks the last one read most recently. MLP
/// inference at batch 1 on one thread (paddlec_bench, ms a step, 3 rotating runs): 0.043-0.051 in
/// one order, 0.030-0.035 alternating, 0.027-0.031 with the last panel narrowed too
/// (SmallRowsPanelWidth); LeNet 0.081-0.084 before both, 0.070-0.074 after. On two threads each core
/// keeps its own half, and the order stays.
void SmallRowsGemm(const GemmShape& s, GemmEpilogue e, const float* a, const float* b, const float* packed,
                   const float* bias, float* c, bool backwards) {
  const int64_t m = s.m, k = s.k, n = s.n;
  const int64_t blocks = (n + kColumnBlock - 1) / kColumnBlock;
#if defined(__AVX2__) && defined(__FMA__)
  const bool wide = packed != nullptr && TilesUseAvx512();
#endif
  // Worth a thread: about 64K multiply-adds, ~5 us of one core.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / (k * m * kColumnBlock));
  runtime::ParallelFor(blocks, grain, [&](int64_t b0, int64_t b1) {
    const bool rev = backwards && b0 == 0 && b1 == blocks;
    for (int64_t t = b0; t < b1; ++t) {
      const int64_t j0 = (rev ? blocks - 1 - t : t) * kColumnBlock;
      const int64_t w = std::min(kColumnBlock, n - j0);
      // The block's rows accumulate in registers while B's rows stream by; C is written once.
      float acc[kSmallRows][kColumnBlock];
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < kColumnBlock; ++j) acc[i][j] = e.bias && j < w ? bias[j0 + j] : 0.0f;
#if defined(__AVX2__) && defined(__FMA__)
      if (wide) {
        kRowsTimesPanel512[m - 1][SmallRowsPanelWidth(n, j0) / 16 - 1](k, a, k, packed + j0 * k, acc[0]);
      } else
#endif
        for (int64_t i = 0; i < m; ++i) {
          const float* ai = a + i * k;
          // B's columns j0.. as stored: packed (rows `ldb` apart) or in place.
          const float* bj = packed != nullptr ? packed + j0 * k : b + j0;
          const int64_t ldb = packed != nullptr ? SmallRowsPanelWidth(n, j0) : n;
          if (w == kColumnBlock) {
            RowTimesBlock64(k, ai, bj, ldb, acc[i]);
          } else {
            for (int64_t q = 0; q < k; ++q) {
              const float* bq = bj + q * ldb;
              const float aiq = ai[q];
              for (int64_t j = 0; j < w; ++j) acc[i][j] += aiq * bq[j];
            }
          }
        }
      for (int64_t i = 0; i < m; ++i) {
        float* ci = c + i * n + j0;
        for (int64_t j = 0; j < w; ++j) ci[j] = e.relu ? std::max(acc[i][j], 0.0f) : acc[i][j];
      }
    }
  });
}

/// The oneDNN view of a logical [batch..., rows, cols] operand stored [batch..., rows, cols]
/// row-major, or [batch..., cols, rows] when `trans`: the transpose is just a pair of strides.
dnnl::memory::desc MatrixDesc(const Dims& batch, int64_t rows, int64_t cols, bool trans) {
  const int r = batch.rank();
  dnnl::memory::dims dims(r + 2), strides(r + 2);
  dims[r] = rows;
  dims[r + 1] = cols;
  strides[r] = trans ? 1 : cols;
  strides[r + 1] = trans ? rows : 1;
  int64_t step = rows * cols;
  for (int i = r - 1; i >= 0; --i) {
    dims[i] = batch[i];
    strides[i] = step;
    step *= batch[i];
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

/// The process-wide TiledGemmUse, as an int so that tests may set it while kernels read it.
std::atomic<int>& TiledGemmUseWord() {
  static std::atomic<int> use = [] {
    const std::string_view s = EnvChoice(kTiledGemmSwitch).value_or("auto");
    return static_cast<int>(s == "off"      ? TiledGemmUse::kNever
                            : s == "always" ? TiledGemmUse::kAlways
                                            : TiledGemmUse::kAuto);
  }();
  return use;
}

#if defined(__AVX2__) && defined(__FMA__)
/// Whether oneDNN runs AVX-512 kernels here. Its matmul then matches or beats TiledGemm's AVX2 tiles
/// on every product measured whose B is packed or copied at the call (512x512x256 0.58 ms against
/// 0.63, 64x784x512 0.24 against 0.28; docs/performance.md has the rest). Held to AVX2 it loses to
/// the tiles again, so the edge is AVX-512's; against a B kept packed, the tiles still win.
bool OneDnnRunsAvx512() {
  static const bool avx512 = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
  return avx512;
}

/// Depth of one pass over a column panel: B's kKBlock x 16 block (8 KB), copied contiguous, stays
/// in L1 while every row tile uses it. Read in place instead, its rows lie N floats apart, and with
/// N a multiple of 512 they all fall into two of L1's 64 sets: the block would not stay.
constexpr int64_t kKBlock = 128;

/// Rows above which B is packed whole before the product even when it changes at every call (a
/// training step's weights): below, copying 128-row blocks of B as the panels need them measured
/// faster.
constexpr int64_t kTiledMaxRows = 128;

/// Depth of one pass over a column panel of packed B (PackRows): the panel is contiguous, so the
/// hardware prefetcher streams it and 1024 x 16 floats (64 KB) stay in L2. MLP inference's first
/// layer (64 x 784 x 512), 2 threads, best of 15: 0.29-0.31 ms with the whole depth in one pass,
/// 0.35-0.39 in passes of 256 rows, 0.35-0.41 with each panel copied from B at every call.
constexpr int64_t kPackedKBlock = 1024;

/// Where the tiles run on AVX-512 (MicroTilePairRows' 8 x 32 tile), a task runs each pair of panels
/// over the whole depth at once, streaming it from L2 for every row tile (a 6 x 32 tile had waited on
/// L2 there, and passes of 256 rows, 32 KB of a pair, kept in L1 had been faster: Sapphire Rapids, 64
/// x 784 x 512, 155-159 us against 166). With 8-row tiles the passes cost more than they save: each
/// one reloads and stores C, restarts the streams of A and B, and K = 784 left a pass of 16 rows.
/// Emerald Rapids, B packed, 2 threads, medians of 5000 calls in alternating runs, whole depth /
/// passes of 256 rows: 64 x 784 x 512 154-159 / 160-165 us, 64 x 512 x 256 51.1 / 52.4-53.1, 64 x
/// 3136 x 128 152-153 / 160; `paddlec_bench inference`, ms: MLP batch 64 0.227-0.231 / 0.233-0.235,
/// batch 256 0.897-0.900 / 1.014-1.022; LeNet batch 64 even, batch 256 5.72-5.84 / 5.91-5.98.

/// Largest B (or transposed A) packed, in floats (16 MB): a copy kept between calls doubles the
/// weights' memory, and an operand this large is read at memory speed anyway.
constexpr int64_t kMaxPackedB = int64_t{4} << 20;

/// Deepest product on the packed path: a task's block of A (rows x depth) must stay in L2 while its
/// panels of B stream by (kRowBlockFloats), and past this depth it would hold a single row tile.
constexpr int64_t kMaxPackedDepth = 4096;

/// Most panels of packed B one task computes.
constexpr int64_t kMaxPanelGroup = 4;

/// Floats of A one task keeps in L2 (192 KB of a Zen 3 core's 512 KB).
constexpr int64_t kRowBlockFloats = int64_t{48} << 10;

/// Column panels of TiledGemm: 16 columns each, the last one overlapping the one before when N is
/// not a multiple of 16.
int64_t Panels(int64_t n) { return (n + kTileCols - 1) / kTileCols; }
int64_t PanelStart(int64_t p, int64_t n) { return std::min(p * kTileCols, n - kTileCols); }
int64_t PackedSize(const GemmShape& s) { return s.k * Panels(s.n) * kTileCols; }

/// Floats of the copy of a transposed A (PackTransposedTiles): whole row tiles of either height.
int64_t PackedASize(const GemmShape& s) {
  const int64_t rows = std::max((s.m + kTileRows - 1) / kTileRows * kTileRows,
                                (s.m + kPairTileRows512 - 1) / kPairTileRows512 * kPairTileRows512);
  return rows * s.k;
}

/// Widest product whose transposed A (a weight gradient, X^T dY) TiledGemm takes, copying it into
/// row tiles at each call (PackTransposedTiles). Wider ones measured about even with oneDNN 2.6's
/// matmul on an idle machine (2 threads, caches flushed, 300 alternating calls: 784x512x512 and
/// 1024x512x1024 1.00-1.02 of its time, 784x64x512 0.92-0.97 and 1.20 in a fifth run) and slower
/// beside two busy processes (MLP training steps, alternating runs: batch 64 2.84 ms against 2.62
/// in 12, batch 512 20.9 against 20.2 in 8). Up to this width the packed copy pays: 512x512x256
/// took 0.78 of the in-place read's time, 3136x64x128 0.82.
constexpr int64_t kTransposedAMaxCols = 256;

/// Whether TiledGemm takes `s`'s A: always untransposed, transposed up to kTransposedAMaxCols
/// columns and kMaxPackedB floats.
bool TiledTranspositionFits(const GemmShape& s) {
  return !s.trans_a || (s.n <= kTransposedAMaxCols && PackedASize(s) <= kMaxPackedB);
}

/// Whether TiledGemm computes `s` with B copied 128 rows at a time as panels need it: one 2-D
/// product of 6 to kTiledMaxRows rows and at least 16 columns, B untransposed.
bool CopiedFits(const GemmShape& s) {
  return s.c_batch.Numel() == 1 && TiledTranspositionFits(s) && !s.trans_b && s.m >= kTileRows &&
         s.m <= kTiledMaxRows && s.n >= kTileCols;
}
/// Whether TiledGemm computes `s` from a packed B (PackRows): one 2-D product of at least one whole
/// 6 x 16 tile, at most kMaxPackedDepth deep, B untransposed and A as TiledTranspositionFits says.
/// A transposed B stays on oneDNN: packed from its columns, transposed operands measured slower than
/// its matmul in 7 of the 9 transposed products of MLP (batch 64 and 512) and LeNet training.
bool PackedFits(const GemmShape& s) {
  return s.c_batch.Numel() == 1 && TiledTranspositionFits(s) && !s.trans_b && s.m >= kTileRows && s.n >= kTileCols &&
         s.k <= kMaxPackedDepth && PackedSize(s) <= kMaxPackedB;
}

/// Packs rows [q0, q1) of an untransposed B [K, N] into every panel of `packed` (panel p holds rows
/// 0..K-1 of columns PanelStart(p)..+16, 16 floats a row). B is read row by row, in order: read a
/// panel at a time instead, each of its rows is a separate cache line 4 N bytes from the last, which
/// the hardware prefetcher does not follow, and packing 784 x 512 took longer than a 64-row product.
/// Copies one 16-float row of a panel in two vector moves: std::copy_n compiled to a call to
/// memmove, which made packing 784 x 512 take 0.32 ms, an eighth of the product it served.
inline void CopyPanelRow(const float* src, float* dst) {
  _mm256_storeu_ps(dst, _mm256_loadu_ps(src));
  _mm256_storeu_ps(dst + 8, _mm256_loadu_ps(src + 8));
}

void PackRows(const GemmShape& s, const float* b, int64_t q0, int64_t q1, float* packed) {
  const int64_t k = s.k, n = s.n, panels = Panels(n);
  // Eight rows at a time, so that each panel gets 512 contiguous bytes per visit rather than 64.
  for (int64_t r0 = q0; r0 < q1; r0 += 8)
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t q = r0; q < std::min(q1, r0 + 8); ++q)
        CopyPanelRow(b + q * n + PanelStart(p, n), packed + (p * k + q) * kTileCols);
}

/// Rows of B per chunk of PackRows handed to a thread.
constexpr int64_t kPackRows = 64;

/// Row blocks per thread when each task copies its own block of a transposed A (TiledGemm): enough
/// that a thread slowed by another process hands some of its share to the other. 512x512x256, 2
/// threads, alternating runs on a quiet machine: 755 us with 4, 775 with 3, 790 with 6.
constexpr int64_t kRowBlocksPerThread = 4;

/// Bytes of one core's L2 (glibc's sysconf, from CPUID), or 1 MB where it does not say.
int64_t L2Bytes() {
  static const int64_t bytes = [] {
    const long b = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return b > 0 ? static_cast<int64_t>(b) : int64_t{1} << 20;
  }();
  return bytes;
}

/// Whether the threads split a product of packed B on AVX-512 by rows, each running a block of row
/// tiles against every panel, rather than by panels: where the packed B takes at most half of a
/// core's L2, so that every core keeps all of it between calls, and A (just written by the layer
/// before, its columns split between the cores) is then read by one core per row rather than all of
/// it by each. MLP inference's second layer, 64 x 512 x 256 after 64 x 784 x 512 (B 1.6 MB, split
/// by panels), 2 threads, medians of 4000 in 3 alternating runs: 54.0-54.6 us against 62.3-62.7;
/// `paddlec_bench inference` at batch 64, 3 alternating runs: 0.217 ms against 0.225-0.228.
bool SplitsRows(const GemmShape& s, int64_t row_tiles, int threads) {
  return threads > 1 && s.m <= kTiledMaxRows && row_tiles >= 2 * threads &&
         PackedSize(s) * static_cast<int64_t>(sizeof(float)) <= L2Bytes() / 2;
}

/// Row tiles per chunk of a transposed A copied whole, handed to a thread.
constexpr int64_t kPackTiles = 8;

/// Row tiles [t0, t1) of a transposed A ([K, M]: a weight gradient's X^T) copied into TiledGemm's
/// layout: tile t is K groups of `tile_rows` floats, its rows' values at one k (fewer in the last
/// tile). Read in
/// place, a tile's values for consecutive k lie M floats apart, and with M a multiple of 512 (a
/// layer's width) all of them fall into the same two of L1's 64 sets, so they came from L2 at every
/// k: one thread, 512x512x256 ran at 70 GF/s where the untransposed product runs at 96, and at 91
/// packed.
void PackTransposedTiles(const GemmShape& s, const float* a, int64_t t0, int64_t t1, int64_t tile_rows, float* packed) {
  const int64_t m = s.m, k = s.k;
  // Eight values of k at a time, so each tile gets 8 x tile_rows contiguous floats per visit.
  for (int64_t q0 = 0; q0 < k; q0 += 8)
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i0 = t * tile_rows, rows = std::min<int64_t>(tile_rows, m - i0);
      for (int64_t q = q0; q < std::min(k, q0 + 8); ++q) {
        const float* src = a + q * m + i0;
        float* dst = packed + (t * k + q) * tile_rows;
        if (rows == tile_rows)
          std::memcpy(dst, src, tile_rows * sizeof(float));
        else
          std::copy_n(src, rows, dst);
      }
    }
}

/// C [M, N] = epilogue(A [M, K] * B [K, N]) in 6 x 16 register tiles (common/microkernel.h; from
/// packed B where the tiles run on AVX-512, two panels at once as 8 x 32), A read in place or,
/// transposed, copied into row tiles in `packed_a` (PackTransposedTiles), the last row tile holding
/// M's remainder rows. B is either `b` itself, copied kKBlock x 16 at a time, or `packed`
/// (PackRows): given packed, or packed here first when `pack` is set (`packed` then is the room for
/// it). A task is one 16-column panel (up to kMaxPanelGroup of packed B) of a block of rows of C
/// (all of them up to kTiledMaxRows, else as many row tiles as keep that block of A in L2),
/// computed a block of B's rows at a time (all of them where the tiles run on AVX-512), or, where a
/// small packed B stays in every core's L2 (SplitsRows), a block of rows against every panel; tasks go
/// one at a time to whichever thread is free, so a thread descheduled by another process delays
/// only its task. A transposed A against packed B is the exception: a task is a block of rows
/// against every panel, and copies that block of A itself, so the copy is still in L2 when its
/// tiles run (against a pass over all of A before the product: 512x512x256, 2 threads, as fast on a
/// quiet machine, 0.88-0.91 of the time in this VM's slow spells). Otherwise a transposed A is
/// copied whole first. The last column panel overlaps the one before (N need not be a multiple of
/// 16) and writes only its new part. MLP inference at batch 64 (784-512-256-10), 2 threads, 5
/// alternating runs, B copied at each call: median 0.632 ms against 0.650 on oneDNN 2.6's matmul,
/// one thread about 1.0 against 1.2 ms.
void TiledGemm(const GemmShape& s, GemmEpilogue e, const float* a, const float* b, float* packed, bool pack,
               float* packed_a, const float* bias, float* c, int threads) {
  const int64_t m = s.m, k = s.k, n = s.n;
  const bool wide = packed != nullptr && TilesUseAvx512();
  // Row tiles of 8 where panels pair up on AVX-512 (kPairTileRows512), else 6.
  const int64_t tile_rows = wide ? kPairTileRows512 : kTileRows;
  const int64_t row_tiles = (m + tile_rows - 1) / tile_rows, panels = Panels(n);
  const int64_t k_block = !packed ? kKBlock : wide ? k : kPackedKBlock;
  // A transposed against packed B: each task copies its own block of A into row tiles and runs it
  // against every panel.
  const bool task_packs_a = s.trans_a && packed != nullptr;
  const int64_t l2_tiles = std::clamp<int64_t>(kRowBlockFloats / (tile_rows * std::min(k, k_block)), 1, row_tiles);
  const int64_t blocks_wanted = kRowBlocksPerThread * std::max(threads, 1);
  const bool split_rows = wide && !task_packs_a && SplitsRows(s, row_tiles, threads);
  const int64_t block_tiles = task_packs_a         ? std::min(l2_tiles, (row_tiles + blocks_wanted - 1) / blocks_wanted)
                              : split_rows         ? (row_tiles + threads - 1) / threads
                              : m <= kTiledMaxRows ? row_tiles
                                                   : l2_tiles;
  const int64_t row_blocks = (row_tiles + block_tiles - 1) / block_tiles;
  // Panels per task, from packed B: a row tile is computed against each in turn, so its stores fill
  // up to 4 x 64 bytes of each row of C in a row (one panel's 64 bytes, a row of C apart from the
  // next, left the stores of shallow products waiting on memory), while tasks stay at least 4 per
  // thread.
  // On AVX-512 a task holds two panels at least, so that they run as one 8 x 32 tile: LeNet's first
  // fc layer (64 x 3136 x 128, 8 panels, 2 threads) had made 8 tasks of one panel, each in 6- and
  // 2-row tiles of 16 columns at two thirds of the FMA rate: 229 us, against 160 in pairs.
  const int64_t group =
      task_packs_a || split_rows ? panels
      : packed ? std::clamp<int64_t>(row_blocks * panels / (4 * std::max(threads, 1)), wide ? 2 : 1, kMaxPanelGroup)
               : 1;
  const int64_t groups = (panels + group - 1) / group, tasks = row_blocks * groups;
  // A is read in place (rows K apart) or, transposed, from its packed copy (PackTransposedTiles).
  // An 8-row tile runs as 6 rows and the rest: single-panel tiles hold at most 6.
  auto tile = [&](int rows, int64_t depth, const float* at, const float* block, float* out, int64_t ldc,
                  TileEpilogue te, bool acc) {
    for (int r0 = 0; r0 < rows; r0 += kTileRows) {
      const int part = std::min(rows - r0, kTileRows);
      if (s.trans_a)
        MicroTileRows<true>(part, depth, at + r0, tile_rows, block, kTileCols, out + r0 * ldc, ldc, te, acc);
      else
        MicroTileRows(part, depth, at + r0 * k, k, block, kTileCols, out + r0 * ldc, ldc, te, acc);
    }
  };
  // Row tile t of C's panel p, over B's rows [k0, k0 + depth), from `block` (the panel's rows
  // there), added to C's values when `acc`, and through the epilogue when `final` (the last pass).
  auto panel_tile = [&](int64_t t, int64_t p, int64_t k0, int64_t depth, const float* block, float* edge, bool acc,
                        bool final) {
    // The last row tile holds M's remainder rows (MicroTile's kRows), not 6 rows overlapping the
    // tile before.
    const int64_t i0 = t * tile_rows;
    const int rows = static_cast<int>(std::min<int64_t>(tile_rows, m - i0));
    const float* at = s.trans_a ? packed_a + (t * k + k0) * tile_rows : a + i0 * k + k0;
    const int64_t j_new = p * kTileCols, j0 = PanelStart(p, n), cols_new = j0 + kTileCols - j_new;
    const TileEpilogue te = final ? TileEpilogue{e.bias ? bias + j0 : nullptr, e.relu} : TileEpilogue{};
    if (j0 == j_new) {
      tile(rows, depth, at, block, c + i0 * n + j0, n, te, acc);
      return;
    }
    // The last panel overlaps the one before: only its new columns are this task's; the others
    // belong to a task that may be running, so they are neither read nor written.
    const int64_t cols_skip = j_new - j0;
    if (acc) {
      std::fill_n(edge, kPairTileRows512 * kTileCols, 0.0f);
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(c + (i0 + r) * n + j_new, cols_new, edge + r * kTileCols + cols_skip);
    }
    tile(rows, depth, at, block, edge, kTileCols, te, acc);
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(edge + r * kTileCols + cols_skip, cols_new, c + (i0 + r) * n + j_new);
  };
  // Panels p and p + 1 of packed B as one 8 x 32 tile (MicroTilePairRows) where the tiles run on
  // AVX-512: both whole, p + 1 not the last panel overlapping the one before. On AVX2 the pair would
  // be the same two tiles, in another order than the one measured there.
  auto pairs_with_next = [&](int64_t p, int64_t p_end) {
    return wide && p + 1 < p_end && PanelStart(p + 1, n) == (p + 1) * kTileCols;
  };
  auto pair_tile = [&](int64_t t, int64_t p, int64_t k0, int64_t depth, bool acc, bool final) {
    const int64_t i0 = t * tile_rows, j0 = p * kTileCols;
    const int rows = static_cast<int>(std::min<int64_t>(tile_rows, m - i0));
    const float* lo = packed + (p * k + k0) * kTileCols;
    const float* hi = lo + k * kTileCols;
    const TileEpilogue te = final ? TileEpilogue{e.bias ? bias + j0 : nullptr, e.relu} : TileEpilogue{};
    if (s.trans_a)
      MicroTilePairRows<true>(rows, depth, packed_a + (t * k + k0) * tile_rows, tile_rows, lo, hi, kTileCols,
                              c + i0 * n + j0, n, te, acc);
    else
      MicroTilePairRows(rows, depth, a + i0 * k + k0, k, lo, hi, kTileCols, c + i0 * n + j0, n, te, acc);
  };
  // Panels [p_begin, p_end) of packed B, pairs of them as one tile, each against row tiles
  // [t_begin, t_end), over B's rows from k0 (one k_block).
  auto panels_outer = [&](int64_t t_begin, int64_t t_end, int64_t p_begin, int64_t p_end, int64_t k0, float* edge) {
    const int64_t depth = std::min(k_block, k - k0);
    const bool acc = k0 > 0, final = k0 + depth == k;
    for (int64_t p = p_begin; p < p_end;) {
      const bool pair = pairs_with_next(p, p_end);
      for (int64_t t = t_begin; t < t_end; ++t)
        if (pair)
          pair_tile(t, p, k0, depth, acc, final);
        else
          panel_tile(t, p, k0, depth, packed + (p * k + k0) * kTileCols, edge, acc, final);
      p += pair ? 2 : 1;
    }
  };
  auto task = [&](int64_t id) {
    const int64_t rb = id / groups, p_begin = id % groups * group, p_end = std::min(panels, p_begin + group);
    const int64_t t_begin = rb * block_tiles, t_end = std::min(row_tiles, t_begin + block_tiles);
    alignas(32) float edge[kPairTileRows512 * kTileCols];
    if (task_packs_a) {
      // The block of A just copied stays in L2 while every panel of B passes by once (a panel, 64 KB
      // at most, stays in L2 for the block's tiles).
      PackTransposedTiles(s, a, t_begin, t_end, tile_rows, packed_a);
      for (int64_t k0 = 0; k0 < k; k0 += k_block) panels_outer(t_begin, t_end, p_begin, p_end, k0, edge);
      return;
    }
    alignas(64) float copied[kKBlock * kTileCols];
    for (int64_t k0 = 0; k0 < k; k0 += k_block) {
      if (wide) {  // each pair of panels meets every row tile over the whole depth
        panels_outer(t_begin, t_end, p_begin, p_end, k0, edge);
        continue;
      }
      const int64_t depth = std::min(k_block, k - k0);
      const bool acc = k0 > 0, final = k0 + depth == k;
      if (!packed) {  // one panel per task
        const int64_t j0 = PanelStart(p_begin, n);
        for (int64_t q = 0; q < depth; ++q) CopyPanelRow(b + (k0 + q) * n + j0, copied + q * kTileCols);
      }
      for (int64_t t = t_begin; t < t_end; ++t)
        for (int64_t p = p_begin; p < p_end; ++p)
          panel_tile(t, p, k0, depth, packed ? packed + (p * k + k0) * kTileCols : copied, edge, acc, final);
    }
  };
  // What is copied before the product (all of a transposed A, unless each task copies its own
  // block; B, when `pack` is set), in chunks that go to whichever thread is free, then the tasks.
  // Two jobs, so the tasks start only once every tile and panel is whole.
  const bool pack_a_first = s.trans_a && !task_packs_a;
  const int team = static_cast<int>(std::min<int64_t>(threads, tasks));
  const int64_t a_chunks = pack_a_first ? (row_tiles + kPackTiles - 1) / kPackTiles : 0;
  const int64_t b_chunks = pack ? (k + kPackRows - 1) / kPackRows : 0;
  if (a_chunks + b_chunks > 0)
    runtime::RunTasks(a_chunks + b_chunks, team, [&](int64_t c, int) {
      if (c < a_chunks)
        PackTransposedTiles(s, a, c * kPackTiles, std::min(row_tiles, (c + 1) * kPackTiles), tile_rows, packed_a);
      else
        PackRows(s, b, (c - a_chunks) * kPackRows, std::min(k, (c - a_chunks + 1) * kPackRows), packed);
    });
  runtime::RunTasks(tasks, team, [&](int64_t id, int) { task(id); });
}

/// C [R x n] = epilogue(A [R x K] * P) for n < 16 columns, P B's one packed panel: K rows of 16
/// floats, zero past n (PackSmallRowsB). R zmm sums over 16 lanes, of which the stores keep n.
template <int R>
__attribute__((target("avx512f"))) void NarrowTile512(int64_t k, const float* a, int64_t lda, const float* p,
                                                      TileEpilogue e, int n, float* c, int64_t ldc) {
  const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t q = 0; q < k; ++q, p += kTileCols) {
    const __m512 w = _mm512_load_ps(p);
    for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + q]), w, acc[r]);
  }
  const __m512 bias = e.bias != nullptr ? _mm512_maskz_loadu_ps(mask, e.bias) : _mm512_setzero_ps();
  for (int r = 0; r < R; ++r) {
    __m512 v = _mm512_add_ps(acc[r], bias);
    if (e.relu) v = _mm512_maskz_max_ps(mask, v, _mm512_setzero_ps());  // _mm512_max_ps: see MicroTile512
    _mm512_mask_storeu_ps(c + r * ldc, mask, v);
  }
}

using NarrowTileFn = void (*)(int64_t, const float*, int64_t, const float*, TileEpilogue, int, float*, int64_t);
constexpr NarrowTileFn kNarrowTiles512[kPairTileRows512] = {NarrowTile512<1>, NarrowTile512<2>, NarrowTile512<3>,
                                                            NarrowTile512<4>, NarrowTile512<5>, NarrowTile512<6>,
                                                            NarrowTile512<7>, NarrowTile512<8>};

/// Whether NarrowGemm computes `s`: one untransposed 2-D product of fewer than 16 columns.
bool NarrowFits(const GemmShape& s) {
  return s.c_batch.Numel() == 1 && !s.trans_a && !s.trans_b && s.n < kTileCols && s.k * kTileCols <= kMaxPackedB;
}

/// C [M, N < 16] = epilogue(A [M, K] * B) from B packed by PackSmallRowsB, on AVX-512: 8-row tiles
/// (the last holding M's remainder), the threads taking a block of them each. A classifier's last
/// layer, the 10 classes of MLP inference at batch 64 (64 x 256 x 10): oneDNN 2.6's matmul runs it
/// as a product too small for a second thread and on 10 of 16 lanes; read there from both cores'
/// caches (the layer before split its rows between them: SplitsRows) it took 5.6-6.4 us. Here each
/// thread reads the rows of A it wrote: medians of 4000 chained calls, 2 threads, 3.0 us; one thread
/// 5.9-6.4 us.
void NarrowGemm(const GemmShape& s, GemmEpilogue e, const float* a, const float* packed, const float* bias, float* c,
                int threads) {
  const int64_t tiles = (s.m + kPairTileRows512 - 1) / kPairTileRows512;
  const int team = static_cast<int>(std::clamp<int64_t>(threads, 1, tiles));
  const int64_t per = (tiles + team - 1) / team;
  const TileEpilogue te{e.bias ? bias : nullptr, e.relu};
  runtime::RunTasks((tiles + per - 1) / per, team, [&](int64_t block, int) {
    for (int64_t t = block * per; t < std::min(tiles, (block + 1) * per); ++t) {
      const int64_t i0 = t * kPairTileRows512;
      const int rows = static_cast<int>(std::min<int64_t>(kPairTileRows512, s.m - i0));
      kNarrowTiles512[rows - 1](s.k, a + i0 * s.k, s.k, packed, te, static_cast<int>(s.n), c + i0 * s.n, s.n);
    }
  });
}
#endif

}  // namespace

struct Gemm<float>::Primitive {
  GemmShape shape;
  GemmEpilogue epilogue;
  int threads = 0;  // the OpenMP threads it was created for
  dnnl::matmul matmul;
  dnnl::memory a, b, c, bias, scratchpad;
  // Arguments in the C API's form, built once: dnnl::primitive::execute would rebuild (and allocate)
  // this array from a std::unordered_map on every call.
  dnnl_exec_arg_t args[5];
  int nargs = 0;
};

TiledGemmUse GetTiledGemmUse() {
  return static_cast<TiledGemmUse>(TiledGemmUseWord().load(std::memory_order_relaxed));
}
void SetTiledGemmUse(TiledGemmUse use) {
  TiledGemmUseWord().store(static_cast<int>(use), std::memory_order_relaxed);
}

bool TiledGemmTakes(TiledGemmUse use, bool b_kept, bool onednn_avx512) {
  switch (use) {
    case TiledGemmUse::kAlways: return true;
    case TiledGemmUse::kNever: return false;
    case TiledGemmUse::kAuto: return b_kept || !onednn_avx512;
  }
  return false;
}

Gemm<float>::Gemm() = default;
Gemm<float>::~Gemm() = default;

#if defined(__AVX2__) && defined(__FMA__)
float* Gemm<float>::PackedARoom(const GemmShape& s) {
  if (!s.trans_a) return nullptr;
  packed_a_.resize(PackedASize(s));
  return packed_a_.data();
}
#endif

Status Gemm<float>::Run(runtime::CpuContext& cpu, const GemmShape& s, GemmEpilogue e, const float* a, const float* b,
                        const float* bias, float* c, uint64_t b_stamp) {
  if (s.m == 0 || s.n == 0 || s.c_batch.Numel() == 0) return Status::OK();
  if (s.k == 0) {
    // An empty sum: C is the epilogue of zeros.
    const int64_t rows = s.c_batch.Numel() * s.m;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        float v = e.bias ? bias[j] : 0.0f;
        c[i * s.n + j] = e.relu ? std::max(v, 0.0f) : v;
      }
    return Status::OK();
  }
  if (s.m <= kSmallRows && s.c_batch.Numel() == 1 && !s.trans_a && !s.trans_b) {
    // A B seen unchanged on two calls in a row is packed once and read packed from then on.
    PackedB& pb = packed_;
    if (pb.SameAsLast(b, s, b_stamp) && !pb.ready) {
      pb.data.resize(SmallRowsPackedSize(s));
      PackSmallRowsB(s, b, pb.data.data());
      pb.ready = true;
    }
    backwards_ = !backwards_;
    SmallRowsGemm(s, e, a, b, pb.ready ? pb.data.data() : nullptr, bias, c, backwards_);
    return Status::OK();
  }
#if defined(__AVX2__) && defined(__FMA__)
  const TiledGemmUse use = GetTiledGemmUse();
  if (use != TiledGemmUse::kNever && NarrowFits(s)) {
    // A B of fewer than 16 columns seen unchanged is packed into one panel and read from it, on the
    // executor's threads (runtime::LoopThreads) although its flops alone would keep it on one: each
    // thread reads the rows of A it wrote (NarrowGemm). Elsewhere, and at its first call, oneDNN.
    PackedB& pb = packed_;
    if (TilesUseAvx512() && pb.SameAsLast(b, s, b_stamp)) {
      if (!pb.ready) {
        pb.data.resize(SmallRowsPackedSize(s));  // one panel of 16 columns
        PackSmallRowsB(s, b, pb.data.data());
        pb.ready = true;
        prim_.reset();
      }
      NarrowGemm(s, e, a, pb.data.data(), bias, c, runtime::LoopThreads());
      return Status::OK();
    }
  } else if (use != TiledGemmUse::kNever) {
    const int threads = runtime::OneDnnThreads(2.0 * static_cast<double>(s.m) * s.n * s.k);
    PackedB& pb = packed_;
    const bool same = pb.SameAsLast(b, s, b_stamp);
    const bool kept = same && PackedFits(s);
    const bool tiles = TiledGemmTakes(use, kept, OneDnnRunsAvx512());
    if (tiles && PackedFits(s) && (same || !CopiedFits(s))) {
      // Packed once and kept (a B seen unchanged), or packed for this call only.
      const bool pack = !pb.ready;
      pb.data.resize(PackedSize(s));
      TiledGemm(s, e, a, b, pb.data.data(), pack, PackedARoom(s), bias, c, threads);
      pb.ready = same;
      // An inference's first call ran on oneDNN where the tiles take only kept products: its
      // primitive and scratch memory are not needed again.
      if (kept) prim_.reset();
      return Status::OK();
    }
    if (tiles && CopiedFits(s)) {
      TiledGemm(s, e, a, b, nullptr, false, PackedARoom(s), bias, c, threads);
      return Status::OK();
    }
  }
#endif
  runtime::OneDnnHandles& dnn = cpu.onednn();
  // Primitives are created and run under the same cap: oneDNN plans its split of the work from the
  // thread count it sees at creation.
  const int threads = runtime::OneDnnThreads(2.0 * static_cast<double>(s.m) * s.n * s.k * s.c_batch.Numel());
  runtime::ScopedMaxThreads cap(threads);
  if (prim_ == nullptr || !(prim_->shape == s) || !(prim_->epilogue == e) || prim_->threads != threads) {
    try {
      auto p = std::make_unique<Primitive>();
      p->shape = s;
      p->epilogue = e;
      p->threads = threads;
      dnnl::primitive_attr attr;
      if (e.relu) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
        attr.set_post_ops(ops);
      }
      // The primitive's scratch memory is ours, allocated here once, not by oneDNN at each call.
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const auto a_md = MatrixDesc(s.a_batch, s.m, s.k, s.trans_a);
      const auto b_md = MatrixDesc(s.b_batch, s.k, s.n, s.trans_b);
      const auto c_md = MatrixDesc(s.c_batch, s.m, s.n, false);
      // The bias broadcasts over the batch and the rows: dims of 1 there, N last.
      dnnl::memory::dims bias_dims(s.c_batch.rank() + 2, 1);
      bias_dims.back() = s.n;
      const dnnl::memory::dims bias_strides(bias_dims.size(), 1);
      const dnnl::memory::desc bias_md(bias_dims, dnnl::memory::data_type::f32, bias_strides);
      auto desc = e.bias ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md) : dnnl::matmul::desc(a_md, b_md, c_md);
      dnnl::matmul::primitive_desc pd(desc, attr, dnn.engine);
      p->matmul = dnnl::matmul(pd);
      p->a = dnnl::memory(a_md, dnn.engine, DNNL_MEMORY_NONE);
      p->b = dnnl::memory(b_md, dnn.engine, DNNL_MEMORY_NONE);
      p->c = dnnl::memory(c_md, dnn.engine, DNNL_MEMORY_NONE);
      p->args[0] = {DNNL_ARG_SRC, p->a.get()};
      p->args[1] = {DNNL_ARG_WEIGHTS, p->b.get()};
      p->args[2] = {DNNL_ARG_DST, p->c.get()};
      p->nargs = 3;
      if (e.bias) {
        p->bias = dnnl::memory(bias_md, dnn.engine, DNNL_MEMORY_NONE);
        p->args[p->nargs++] = {DNNL_ARG_BIAS, p->bias.get()};
      }
      if (pd.scratchpad_desc().get_size() > 0) {
        p->scratchpad = dnnl::memory(pd.scratchpad_desc(), dnn.engine);
        p->args[p->nargs++] = {DNNL_ARG_SCRATCHPAD, p->scratchpad.get()};
      }
      prim_ = std::move(p);
    } catch (const dnnl::error& e) {
      prim_.reset();
      return MakeError(ErrorCode::kInternal, "oneDNN matmul for [{}x{}] x [{}x{}] (batch {}) failed: {}", s.m, s.k, s.k,
                       s.n, s.c_batch.ToString(), e.what());
    }
  }
  Primitive& p = *prim_;
  dnnl_status_t st = dnnl_memory_set_data_handle(p.a.get(), const_cast<float*>(a));
  if (st == dnnl_success) st = dnnl_memory_set_data_handle(p.b.get(), const_cast<float*>(b));
  if (st == dnnl_success) st = dnnl_memory_set_data_handle(p.c.get(), c);
  if (st == dnnl_success && e.bias) st = dnnl_memory_set_data_handle(p.bias.get(), const_cast<float*>(bias));
  if (st == dnnl_success) st = dnnl_primitive_execute(p.matmul.get(), dnn.stream.get(), p.nargs, p.args);
  if (st == dnnl_success) st = dnnl_stream_wait(dnn.stream.get());
  if (st != dnnl_success)
    return MakeError(ErrorCode::kRuntime, "oneDNN matmul for [{}x{}] x [{}x{}] failed with status {}", s.m, s.k, s.k,
                     s.n, static_cast<int>(st));
  return Status::OK();
}

Status Gemm<double>::Run(runtime::CpuContext&, const GemmShape& s, const double* a, const double* b, double* c,
                         uint64_t) {
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t batch = s.c_batch.Numel();
  if (s.m == 0 || s.n == 0 || batch == 0) return Status::OK();
  if (s.k == 0) {
    std::fill(c, c + batch * s.m * s.n, 0.0);
    return Status::OK();
  }
  // Matrix strides per batch dim; 0 where an operand is broadcast.
  const int r = s.c_batch.rank();
  int64_t as[kMaxRank], bs[kMaxRank];
  int64_t sa = s.m * s.k, sb = s.k * s.n;
  for (int i = r - 1; i >= 0; --i) {
    as[i] = s.a_batch[i] == 1 ? 0 : sa;
    bs[i] = s.b_batch[i] == 1 ? 0 : sb;
    sa *= s.a_batch[i];
    sb *= s.b_batch[i];
  }
  for (int64_t bi = 0; bi < batch; ++bi) {
    int64_t rem = bi, aoff = 0, boff = 0;
    for (int i = r - 1; i >= 0; --i) {
      const int64_t idx = rem % s.c_batch[i];
      rem /= s.c_batch[i];
      aoff += idx * as[i];
      boff += idx * bs[i];
    }
    Eigen::Map<const Mat> A(a + aoff, s.trans_a ? s.k : s.m, s.trans_a ? s.m : s.k);
    Eigen::Map<const Mat> B(b + boff, s.trans_b ? s.n : s.k, s.trans_b ? s.k : s.n);
    Eigen::Map<Mat> C(c + bi * s.m * s.n, s.m, s.n);
    if (!s.trans_a && !s.trans_b)
      C.noalias() = A * B;
    else if (s.trans_a && !s.trans_b)
      C.noalias() = A.transpose() * B;
    else if (!s.trans_a)
      C.noalias() = A * B.transpose();
    else
      C.noalias() = A.transpose() * B.transpose();
  }
  return Status::OK();
}

}  // namespace paddlec::ops::math
