// Host-side planning of the math family's CUDA kernels: the CPU's shape analysis (broadcast.h,
// gemm.h) turned into the plain descriptions of math_cuda_index.h, and batched row-major products
// mapped onto cuBLAS's column-major strided-batched calls. No CUDA headers: the host unit tests
// (math_cuda_index_test.cc) run this code as the CUDA kernels' host side does.
#pragma once

#include <array>
#include <cstdint>

#include "math/broadcast.h"
#include "math/gemm.h"
#include "math/math_cuda_index.h"

namespace paddlec::ops::cuda {

static_assert(kIndexMaxRank == kMaxRank, "StridedIndex must hold any paddlec shape");

/// The POD image of a StridedLoop.
template <int N>
StridedIndex<N> ToIndex(const math::StridedLoop<N>& loop) {
  StridedIndex<N> s;
  s.rank = loop.rank;
  for (int d = 0; d < loop.rank; ++d) {
    s.dims[d] = loop.dims[d];
    for (int k = 0; k < N; ++k) s.strides[k][d] = loop.strides[k][d];
  }
  return s;
}

/// X's and Y's offsets at each flat index of Out (Out itself is contiguous: its offset is the index).
inline StridedIndex<2> BinaryIndex(const math::ElementwiseShapes& s) {
  return ToIndex(math::MakeLoop<2>(s.out, {s.x, s.y}));
}

/// Operands of a binary op's gradient: 0 = anything shaped like Out (Out, Out@GRAD), 1 = X, 2 = Y.
enum { kGradOpOut = 0, kGradOpX = 1, kGradOpY = 2 };

/// The gradient of X (target kGradOpX) or Y (kGradOpY) summed onto its operand's shape.
inline ReduceIndex<3> BinaryGradIndex(const math::ElementwiseShapes& s, int target) {
  return SplitReduce(ToIndex(math::MakeLoop<3>(s.out, {s.out, s.x, s.y})), target);
}

/// A reduction of a tensor shaped `full` onto `kept` (same rank, 1 on the reduced dims): operand 0
/// walks the source, operand 1 the target.
inline ReduceIndex<2> ReduceOnto(const Dims& full, const Dims& kept) {
  return SplitReduce(ToIndex(math::MakeLoop<2>(full, {full, kept})), 1);
}

/// A broadcast of a tensor shaped `kept` over `full` (the reverse of ReduceOnto): operand 0 walks
/// the destination (offset = flat index), operand 1 the source.
inline StridedIndex<2> BroadcastFrom(const Dims& full, const Dims& kept) {
  return ToIndex(math::MakeLoop<2>(full, {full, kept}));
}

// ---- Batched products on cuBLAS ------------------------------------------------------------------

/// One row-major product C = op(A) op(B) as cuBLAS's column-major gemm. A row-major [r, c] matrix
/// with leading dim c is, read column-major, its transpose [c, r]. So cuBLAS computes
/// C^T [N, M] = op(B)^T [N, K] * op(A)^T [K, M]: its first operand is our B, its second our A,
/// each transposed exactly when the row-major operand is, and C^T read column-major is C row-major.
struct ColumnMajorGemm {
  bool trans_first = false;     // cuBLAS transa: our trans_b
  bool trans_second = false;    // cuBLAS transb: our trans_a
  int64_t m = 0, n = 0, k = 0;  // cuBLAS's m, n, k = our N, M, K
  int64_t ld_first = 0;         // leading dim of our B as stored: N, or K when trans_b
  int64_t ld_second = 0;        // leading dim of our A as stored: K, or M when trans_a
  int64_t ldc = 0;              // N
};

inline ColumnMajorGemm ToColumnMajor(const math::GemmShape& s) {
  ColumnMajorGemm g;
  g.trans_first = s.trans_b;
  g.trans_second = s.trans_a;
  g.m = s.n;
  g.n = s.m;
  g.k = s.k;
  g.ld_first = s.trans_b ? s.k : s.n;
  g.ld_second = s.trans_a ? s.m : s.k;
  g.ldc = s.n;
  return g;
}

/// The batches of a GemmShape as strided-batched calls. The batch dims are coalesced (MakeLoop over
/// c_batch with A's and B's batch shapes): the innermost coalesced dim is one strided-batched call
/// (stride 0 where an operand is broadcast), the outer dims are enumerated by the host, one call
/// each. Equal batches, or one operand without batch dims, coalesce to a single call.
struct GemmBatches {
  StridedIndex<3> outer;            // outer batch index -> batch offsets (in matrices) of A, B, C
  int64_t count = 1;                // batches per call
  std::array<int64_t, 3> stride{};  // element strides between the batches of one call: A, B, C
  std::array<int64_t, 3> matrix{};  // elements per matrix: A, B, C
};

inline GemmBatches PlanGemmBatches(const math::GemmShape& s) {
  GemmBatches b;
  const math::StridedLoop<3> loop = math::MakeLoop<3>(s.c_batch, {s.a_batch, s.b_batch, s.c_batch});
  b.matrix = {s.m * s.k, s.k * s.n, s.m * s.n};
  b.count = loop.dims[loop.rank - 1];
  for (int k = 0; k < 3; ++k) b.stride[k] = loop.strides[k][loop.rank - 1] * b.matrix[k];
  b.outer.rank = loop.rank - 1;
  for (int d = 0; d + 1 < loop.rank; ++d) {
    b.outer.dims[d] = loop.dims[d];
    for (int k = 0; k < 3; ++k) b.outer.strides[k][d] = loop.strides[k][d];
  }
  return b;
}

/// Calls fn(a_offset, b_offset, c_offset) (in elements) once per strided-batched call.
template <class F>
void ForEachGemmCall(const GemmBatches& b, F&& fn) {
  const int64_t calls = b.outer.numel();
  for (int64_t o = 0; o < calls; ++o) {
    int64_t off[3];
    b.outer.Offsets<int64_t>(o, off);
    fn(off[0] * b.matrix[0], off[1] * b.matrix[1], off[2] * b.matrix[2]);
  }
}

}  // namespace paddlec::ops::cuda
