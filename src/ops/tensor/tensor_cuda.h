// Launchers of the tensor family's CUDA kernels (fill.cu, shape.cu, concat_split.cu, top_k.cu,
// index.cu), in plain types. Every launcher queues work on `s` and returns the launch error; none waits for the GPU.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/tensor_index.h"

namespace paddlec::ops::cuda {

/// p[0, n) = value. T is any of bool, int8/16/32/64, uint8, float, double.
template <class T>
cudaError_t Fill(T* p, int64_t n, T value, cudaStream_t s);

/// y[i] = static_cast<Out>(x[i]) for i < n, for every pair of the types Fill takes.
template <class In, class Out>
cudaError_t Cast(const In* x, Out* y, int64_t n, cudaStream_t s);

/// out = transpose(in) by `plan` (tensor_index::MakeTransposePlan); elements are moved as
/// `elem_bytes` (1, 2, 4 or 8) bytes, so one kernel serves every dtype of that size.
cudaError_t Transpose(const void* in, void* out, int elem_bytes, const tensor_index::TransposePlan& plan,
                      cudaStream_t s);

/// Concat (gather: parts -> whole) or split (whole -> parts) of byte rows: the whole is `outer` rows of
/// `whole_row` bytes at `whole`; `parts` gives, in BYTES, each part's column range within a whole row
/// and its data (rows of offset[i + 1] - offset[i] bytes; null = skip). Copies in the widest unit
/// (16 down to 1 bytes) that divides every address and size involved.
cudaError_t MoveParts(void* whole, int64_t outer, int64_t whole_row, const tensor_index::PartTable& parts, bool gather,
                      cudaStream_t s);

/// top_k_v2 over lines of n elements with stride `inner` in an [outer, n, inner] view: the k best
/// (1 <= k <= n) into out/indices laid out [outer, k, inner], best first (sorted) or in ascending
/// index order. Ties go to the lower index; NaN ranks above every number. T: float, double, int32, int64.
template <class T>
cudaError_t TopK(const T* x, T* out, int64_t* indices, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest,
                 bool sorted, cudaStream_t s);

/// dx = 0, then dx[o, indices[o, j, i], i] = dout[o, j, i]; indices outside [0, n) are skipped.
template <class T>
cudaError_t TopKGrad(const int64_t* indices, const T* dout, T* dx, int64_t outer, int64_t n, int64_t inner, int64_t k,
                     cudaStream_t s);

/// out[0, rank) = dims (the shape op): the values travel in the launch, so the kernel replays.
struct ShapeValues {
  int rank = 0;
  int32_t dims[tensor_index::kMaxRank] = {};
};
cudaError_t WriteShape(int32_t* out, const ShapeValues& v, cudaStream_t s);

/// The strided view of `plan` (tensor_index::MakeStridedPlan) between a contiguous buffer and a
/// source/destination at `strided`: gather (scatter = false) strided -> dense, or scatter dense ->
/// strided. Elements move as `elem_bytes` (1, 2, 4 or 8) bytes.
cudaError_t StridedCopy(void* strided, void* dense, int elem_bytes, const tensor_index::TransposePlan& plan,
                        bool scatter, cudaStream_t s);

/// Rows of a gather: out[o, j, :] = x[o, index[j], :] over [outer, rows, inner] views of `row_bytes`
/// rows; the smallest j whose index is outside [0, rows) is atomicMin'ed into *bad_pos (set to ~0
/// by the caller) and its rows are zeros. I: int32, int64.
template <class I>
cudaError_t GatherRows(const void* x, const I* index, int64_t m, int64_t outer, int64_t rows, int64_t row_bytes,
                       void* out, unsigned long long* bad_pos, cudaStream_t s);

/// arg_max over [outer, n, inner] lines: out[o, i] = the first k maximizing x[o, k, i] (NaN above
/// every number). T: float, double, int32, int64; I: int32, int64.
template <class T, class I>
cudaError_t ArgMax(const T* x, I* out, int64_t outer, int64_t n, int64_t inner, cudaStream_t s);

}  // namespace paddlec::ops::cuda
