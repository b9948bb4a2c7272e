// CUDA kernel of concat, concat_grad and split: one grid-stride loop over the columns the launch's parts
// cover in every row of the whole tensor, each element finding its part by binary search over the
// part table (passed by value). Consecutive threads touch consecutive units of the whole and of each
// part, so both sides are coalesced; the unit is the widest of 16, 8, 4, 2, 1 bytes that divides every
// address and row length, so most concats move 16-byte vectors whatever the element type.
#include "common/cuda_device.cuh"
#include "tensor/tensor_cuda.h"

namespace paddlec::ops::cuda {
namespace {

using tensor_index::PartTable;

/// `t` in units of E. gather: whole <- parts; otherwise parts <- whole.
template <class E, bool kGather>
__global__ void MovePartsKernel(E* __restrict__ whole, int64_t outer, int64_t whole_row, PartTable t) {
  const int64_t first = t.offset[0], width = t.offset[t.count] - first, total = outer * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t o = i / width, c = first + i % width;
    const int part = tensor_index::FindPart(t, c);
    E* p = static_cast<E*>(t.ptr[part]);
    if (p == nullptr) continue;
    const int64_t row = t.offset[part + 1] - t.offset[part];
    E* w = whole + o * whole_row + c;
    E* q = p + o * row + (c - t.offset[part]);
    if constexpr (kGather)
      *w = *q;
    else
      *q = *w;
  }
}

template <class E>
cudaError_t MoveAs(void* whole, int64_t outer, int64_t whole_row, PartTable t, bool gather, cudaStream_t s) {
  const int64_t unit = sizeof(E);
  for (int i = 0; i <= t.count; ++i) t.offset[i] /= unit;
  whole_row /= unit;
  const int64_t total = outer * (t.offset[t.count] - t.offset[0]);
  if (total == 0) return cudaSuccess;
  if (gather)
    MovePartsKernel<E, true><<<Blocks(total), kThreads, 0, s>>>(static_cast<E*>(whole), outer, whole_row, t);
  else
    MovePartsKernel<E, false><<<Blocks(total), kThreads, 0, s>>>(static_cast<E*>(whole), outer, whole_row, t);
  return cudaGetLastError();
}

}  // namespace

cudaError_t MoveParts(void* whole, int64_t outer, int64_t whole_row, const PartTable& parts, bool gather,
                      cudaStream_t s) {
  if (parts.count <= 0 || outer == 0) return cudaSuccess;
  uint64_t bits = reinterpret_cast<uintptr_t>(whole) | static_cast<uint64_t>(whole_row);
  for (int i = 0; i <= parts.count; ++i) bits |= static_cast<uint64_t>(parts.offset[i]);
  for (int i = 0; i < parts.count; ++i) bits |= reinterpret_cast<uintptr_t>(parts.ptr[i]);
  switch (tensor_index::CopyUnit(bits)) {
    case 16:
      return MoveAs<uint4>(whole, outer, whole_row, parts, gather, s);
    case 8:
      return MoveAs<uint2>(whole, outer, whole_row, parts, gather, s);
    case 4:
      return MoveAs<uint32_t>(whole, outer, whole_row, parts, gather, s);
    case 2:
      return MoveAs<uint16_t>(whole, outer, whole_row, parts, gather, s);
    default:
      return MoveAs<uint8_t>(whole, outer, whole_row, parts, gather, s);
  }
}

}  // namespace paddlec::ops::cuda
