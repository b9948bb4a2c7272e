// Broadcasting for the math family: PaddlePaddle's elementwise shape rule, and strided loops that
// read broadcast operands in place (a broadcast operand is never materialized) or reduce into them.
//
// A StridedLoop walks an output shape for N operands, each described by its dims aligned to the
// output's rank (1 where it is broadcast). Dims of extent 1 are dropped and adjacent dims in which
// every operand has the same broadcast pattern are merged, so [N, C] + [C] becomes one [N, C] loop
// whose innermost run (length C) reads both operands contiguously, [N, C, H, W] + [C] a loop whose
// innermost run (H*W) reads Y as a scalar, and equal shapes a single flat run. Kernels then only
// write the innermost run, once per combination of "contiguous" (stride 1) and "broadcast" (stride 0).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "common/cpu_kernels.h"
#include "paddlec/core/dims.h"
#include "paddlec/core/error.h"

namespace paddlec::ops::math {

/// The shapes of an elementwise op under PaddlePaddle's broadcast rule.
struct ElementwiseShapes {
  Dims out;  // the output shape
  Dims x;    // X padded with 1s to out's rank, aligned as the rule places it
  Dims y;    // same for Y
};

/// PaddlePaddle's elementwise_* rule. The lower-rank operand (Y, or X when rank(Y) > rank(X), as
/// modern Paddle does) drops its trailing size-1 dims and is placed over a contiguous run of the
/// other's dims starting at `axis` (-1: trailing alignment, axis = rank difference computed before
/// the trim). Within the window either side may be 1 (broadcast), numpy style. Unknown (-1) dims
/// propagate: -1 against n > 1 gives n, -1 against 1 or -1 gives -1. Equal shapes ignore `axis`.
StatusOr<ElementwiseShapes> BroadcastElementwise(const Dims& x, const Dims& y, int axis);

template <int N>
struct StridedLoop {
  int rank = 0;       // coalesced dims, outermost first; >= 1 once built
  int64_t numel = 0;  // product of dims
  int64_t dims[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};  // element strides per operand; 0 where the operand is broadcast

  /// 1 when operand k is read contiguously along the innermost run, 0 when it is broadcast there.
  int64_t inner_stride(int k) const { return strides[k][rank - 1]; }
  int64_t inner() const { return dims[rank - 1]; }
};

/// Builds the loop over `out` (fully known dims) for operands whose dims are aligned to out's rank.
template <int N>
StridedLoop<N> MakeLoop(const Dims& out, const std::array<Dims, N>& aligned) {
  StridedLoop<N> loop;
  const int r = out.rank();
  int64_t full[N][kMaxRank];
  for (int k = 0; k < N; ++k) {
    int64_t st = 1;
    for (int i = r - 1; i >= 0; --i) {
      full[k][i] = (aligned[k][i] == 1 && out[i] != 1) ? 0 : st;
      st *= aligned[k][i];
    }
  }
  loop.numel = 1;
  for (int i = 0; i < r; ++i) {
    loop.numel *= out[i];
    if (out[i] == 1) continue;
    bool merge = loop.rank > 0;
    for (int k = 0; k < N && merge; ++k) merge = (loop.strides[k][loop.rank - 1] == 0) == (full[k][i] == 0);
    if (merge) {
      // Outer dim folded into this one: the merged dim steps like the inner one.
      loop.dims[loop.rank - 1] *= out[i];
      for (int k = 0; k < N; ++k) loop.strides[k][loop.rank - 1] = full[k][i];
    } else {
      loop.dims[loop.rank] = out[i];
      for (int k = 0; k < N; ++k) loop.strides[k][loop.rank] = full[k][i];
      ++loop.rank;
    }
  }
  if (loop.rank == 0) {  // a single element (0-D or all dims 1)
    loop.rank = 1;
    loop.dims[0] = 1;
    for (int k = 0; k < N; ++k) loop.strides[k][0] = loop.numel == 0 ? 0 : 1;
  }
  return loop;
}

/// Calls f(offsets, len) for each run of consecutive innermost elements covering the flat index
/// range [begin, end) of the loop; offsets[k] is operand k's element offset at the run's start.
template <int N, class F>
void ForSpans(const StridedLoop<N>& loop, int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;
  const int r = loop.rank;
  int64_t idx[kMaxRank];
  int64_t off[N] = {};
  int64_t rem = begin;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rem % loop.dims[d];
    rem /= loop.dims[d];
    for (int k = 0; k < N; ++k) off[k] += idx[d] * loop.strides[k][d];
  }
  const int64_t inner = loop.dims[r - 1];
  int64_t pos = begin;
  while (pos < end) {
    const int64_t len = std::min(inner - idx[r - 1], end - pos);
    f(static_cast<const int64_t*>(off), len);
    pos += len;
    idx[r - 1] += len;
    for (int k = 0; k < N; ++k) off[k] += len * loop.strides[k][r - 1];
    if (idx[r - 1] < inner) continue;
    // Carry into the outer dims (odometer).
    for (int k = 0; k < N; ++k) off[k] -= inner * loop.strides[k][r - 1];
    idx[r - 1] = 0;
    for (int d = r - 2; d >= 0; --d) {
      ++idx[d];
      for (int k = 0; k < N; ++k) off[k] += loop.strides[k][d];
      if (idx[d] < loop.dims[d]) break;
      for (int k = 0; k < N; ++k) off[k] -= loop.dims[d] * loop.strides[k][d];
      idx[d] = 0;
    }
  }
}

/// The sum of f(0) .. f(n - 1), vectorized. Blocks of 256 terms are summed in A (in SIMD lanes) and
/// the block sums in double, so a long float32 run (a mean over millions of elements) loses about
/// as much as a 256-term sum rather than error growing with n.
template <class A, class F>
A SumRun(int64_t n, F&& f) {
  constexpr int64_t kBlock = 256;
  std::conditional_t<std::is_floating_point_v<A>, double, A> total = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    A acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t j = b; j < e; ++j) acc += f(j);
    total += acc;
  }
  return static_cast<A>(total);
}

/// Runs f(offsets, len) over the whole loop, split across the CPU pool when it is large. Only for
/// loops whose writes never collide (the written operand is not broadcast).
template <int N, class F>
void ParallelSpans(const StridedLoop<N>& loop, F&& f) {
  ParallelFor(loop.numel, kElementwiseGrain, [&](int64_t b, int64_t e) { ForSpans(loop, b, e, f); });
}

/// Accumulates over a loop whose operand `target` is broadcast along some dims: the sum of every
/// element mapping to a target position lands there. f(offsets, len, base) adds one run into
/// `base` (the target's data, or a per-thread partial buffer of the same layout) at offsets[target].
/// Large loops run in parallel: split along the outermost dim when the target is not broadcast
/// along it (disjoint writes), otherwise with per-thread partial sums kept in `scratch` (which
/// grows once and is reused) and combined in thread order, so results are deterministic for a
/// given thread count.
template <class A, int N, class F>
void ReduceSpans(const StridedLoop<N>& loop, int target, A* out, int64_t out_numel, std::vector<A>& scratch, F&& f) {
  const int max_threads = runtime::LoopThreads();
  if (loop.numel < 2 * kElementwiseGrain || max_threads < 2 || loop.numel == 0) {
    std::fill(out, out + out_numel, A(0));
    ForSpans(loop, 0, loop.numel, [&](const int64_t* off, int64_t len) { f(off, len, out); });
    return;
  }
  const int64_t outer = loop.dims[0];
  const int64_t outer_stride = loop.strides[target][0];
  if (outer_stride != 0 && outer >= max_threads) {
    const int64_t per_row = loop.numel / outer;
    ParallelFor(outer, std::max<int64_t>(1, kElementwiseGrain / per_row), [&](int64_t b, int64_t e) {
      std::fill(out + b * outer_stride, out + e * outer_stride, A(0));
      ForSpans(loop, b * per_row, e * per_row, [&](const int64_t* off, int64_t len) { f(off, len, out); });
    });
    return;
  }
  if (static_cast<int64_t>(scratch.size()) < max_threads * out_numel) scratch.resize(max_threads * out_numel);
  // One part per thread, whichever thread computes it: the sum's order depends on the thread count
  // alone.
  const int used = max_threads;
  const int64_t chunk = (loop.numel + used - 1) / used;
  runtime::RunTasks(used, used, [&](int64_t id, int) {
    const int64_t b = std::min<int64_t>(loop.numel, id * chunk), e = std::min<int64_t>(loop.numel, b + chunk);
    A* part = scratch.data() + id * out_numel;
    std::fill(part, part + out_numel, A(0));
    ForSpans(loop, b, e, [&](const int64_t* off, int64_t len) { f(off, len, part); });
  });
  const A* parts = scratch.data();
  ParallelChunks(out_numel, [&](int64_t b, int64_t n) {
    for (int64_t j = b; j < b + n; ++j) {
      A s = parts[j];
      for (int t = 1; t < used; ++t) s += parts[t * out_numel + j];
      out[j] = s;
    }
  });
}

}  // namespace paddlec::ops::math
