// Index arithmetic of the math family's CUDA kernels, in plain types shared by the host (which
// builds these descriptions once per shape) and the device (which evaluates them per element).
// Free of paddlec's and CUDA's headers, so the host compiler's unit tests (math_cuda_index_test.cc)
// exercise exactly the code the kernels run.
//
// A StridedIndex is the POD image of math::StridedLoop (broadcast.h): a row-major walk over
// coalesced dims where operand k sits at sum_d idx[d] * strides[k][d] (stride 0 = broadcast).
// A ReduceIndex splits such a walk into the dims a reduction target keeps and the dims summed into
// it, so a kernel can enumerate target j's contributions r = 0 .. R-1 in a fixed order.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define PC_MATH_HD __host__ __device__
#define PC_MATH_UNROLL _Pragma("unroll")
#else
#define PC_MATH_HD
#define PC_MATH_UNROLL
#endif

namespace paddlec::ops::cuda {

/// Equals paddlec::kMaxRank (checked where the host builds indices).
inline constexpr int kIndexMaxRank = 9;

template <int N>
struct StridedIndex {
  int rank = 0;  // dims in use, outermost first; 0 = a single element
  int64_t dims[kIndexMaxRank] = {};
  int64_t strides[N][kIndexMaxRank] = {};

  PC_MATH_HD int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= dims[d];
    return n;
  }

  /// Element offsets of the N operands at row-major flat index i (0 <= i < numel()), computed in
  /// the index type I (uint32_t when every offset fits, else int64_t). The loop runs over the
  /// compile-time maximum rank so every array index is a constant: the description stays in the
  /// kernel's parameter space and never spills to local memory.
  template <class I>
  PC_MATH_HD void Offsets(I i, I (&off)[N]) const {
    PC_MATH_UNROLL
    for (int k = 0; k < N; ++k) off[k] = 0;
    PC_MATH_UNROLL
    for (int d = kIndexMaxRank - 1; d >= 0; --d) {
      if (d < rank) {
        I idx;
        if (d == 0) {
          idx = i;  // the outermost dim takes what is left
        } else {
          const I n = static_cast<I>(dims[d]);
          const I q = i / n;
          idx = i - q * n;
          i = q;
        }
        PC_MATH_UNROLL
        for (int k = 0; k < N; ++k) off[k] += idx * static_cast<I>(strides[k][d]);
      }
    }
  }
};

/// A reduction over a StridedIndex: target element j (row-major over `kept`, which is the target's
/// own flat index) receives the R = reduced.numel() elements at kept(j) + reduced(r).
template <int N>
struct ReduceIndex {
  StridedIndex<N> kept;
  StridedIndex<N> reduced;
  int64_t m = 0;  // target elements
  int64_t r = 0;  // contributions per target element
  /// True when the innermost dim of the walk is reduced: consecutive r are then adjacent in
  /// memory and threads of one warp should share a target (rows); otherwise threads take
  /// consecutive targets (columns).
  bool inner_reduced = false;

  template <class I>
  PC_MATH_HD void Offsets(I j, I r_index, I (&off)[N]) const {
    I a[N], b[N];
    kept.Offsets(j, a);
    reduced.Offsets(r_index, b);
    PC_MATH_UNROLL
    for (int k = 0; k < N; ++k) off[k] = a[k] + b[k];
  }
};

/// Splits `full` into the dims where operand `target` has a nonzero stride (kept) and those where it
/// is broadcast (reduced), each keeping its outer-to-inner order. The target must be laid out
/// row-major over the kept dims (true of every operand MakeLoop describes).
template <int N>
ReduceIndex<N> SplitReduce(const StridedIndex<N>& full, int target) {
  ReduceIndex<N> s;
  for (int d = 0; d < full.rank; ++d) {
    StridedIndex<N>& part = full.strides[target][d] != 0 ? s.kept : s.reduced;
    part.dims[part.rank] = full.dims[d];
    for (int k = 0; k < N; ++k) part.strides[k][part.rank] = full.strides[k][d];
    ++part.rank;
  }
  s.m = s.kept.numel();
  s.r = s.reduced.numel();
  s.inner_reduced = full.rank > 0 && full.strides[target][full.rank - 1] == 0;
  return s;
}

// ---- Launch plans of reductions ---------------------------------------------------------------

inline constexpr int64_t kReduceThreads = 256;
/// Threads that keep an H100 busy (132 SMs x 4 blocks of 256); a plan splits reductions until it
/// has about this many, independent of the device so results do not depend on it.
inline constexpr int64_t kReduceWantThreads = 132 * 4 * kReduceThreads;
/// The fewest contributions one thread should add before a reduction is split further.
inline constexpr int64_t kReduceMinPerThread = 16;
/// gridDim.y limit (column reductions put the groups there).
inline constexpr int64_t kReduceMaxGroups = 65535;
/// Chunks longer than this get a whole block instead of a warp (row reductions).
inline constexpr int64_t kReduceBlockChunk = 1024;

/// How a reduction of m targets x r contributions is laid out. The r contributions of each target
/// are cut into `groups` consecutive chunks of `chunk` (the last may be shorter). Rows: a warp (or,
/// for chunks longer than kReduceBlockChunk, a block) sums one chunk, lane l taking contributions
/// l, l + 32, ... then a fixed shuffle tree. Columns: one thread sums one chunk in order. With one
/// group the sum is written at once; otherwise groups x m partials go to scratch and a second pass
/// adds each target's partials in group order. Every sum is therefore in a fixed order: results
/// are bit-identical from run to run.
struct ReducePlan {
  bool rows = false;
  bool block = false;  // rows only: a block (kReduceThreads) per chunk instead of a warp
  int64_t groups = 1;
  int64_t chunk = 0;
  int64_t scratch_elems = 0;  // partials between the passes (0 when groups == 1)
};

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline ReducePlan PlanReduce(int64_t m, int64_t r, bool inner_reduced) {
  ReducePlan p;
  p.rows = inner_reduced;
  p.chunk = r > 0 ? r : 0;
  if (m <= 0 || r <= 0) return p;
  p.block = inner_reduced && r > kReduceBlockChunk;
  const int64_t lanes = !inner_reduced ? 1 : (p.block ? kReduceThreads : 32);
  int64_t groups = CeilDiv(kReduceWantThreads, m * lanes);
  const int64_t most = CeilDiv(r, lanes * kReduceMinPerThread);
  if (groups > most) groups = most;
  if (groups > kReduceMaxGroups) groups = kReduceMaxGroups;
  if (groups < 1) groups = 1;
  p.chunk = CeilDiv(r, groups);
  p.groups = CeilDiv(r, p.chunk);  // no empty group
  p.scratch_elems = p.groups > 1 ? p.groups * m : 0;
  return p;
}

}  // namespace paddlec::ops::cuda
