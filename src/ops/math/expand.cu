// CUDA kernel of expand_v2 and tile (expand_cuda.cc): a grid-stride gather through the broadcast
// view's StridedIndex, moving elements as unsigned integers of their size. Their gradients use
// reduce.cu's ReduceSum.
#include "common/cuda_device.cuh"
#include "math/math_cuda.h"

namespace paddlec::ops::cuda {
namespace {

template <class E, class I>
__global__ void BroadcastCopyKernel(const __grid_constant__ StridedIndex<2> idx, int64_t n, const E* __restrict__ src,
                                    E* __restrict__ dst) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    I off[2];
    idx.Offsets(static_cast<I>(i), off);
    dst[off[0]] = src[off[1]];
  }
}

template <class E>
cudaError_t CopyAs(const void* src, void* dst, int64_t n, const StridedIndex<2>& idx, cudaStream_t s) {
  if (n <= 0xFFFFFFFFll)
    BroadcastCopyKernel<E, uint32_t>
        <<<Blocks(n), kThreads, 0, s>>>(idx, n, static_cast<const E*>(src), static_cast<E*>(dst));
  else
    BroadcastCopyKernel<E, int64_t>
        <<<Blocks(n), kThreads, 0, s>>>(idx, n, static_cast<const E*>(src), static_cast<E*>(dst));
  return cudaGetLastError();
}

}  // namespace

cudaError_t BroadcastCopy(const void* src, void* dst, int elem_bytes, int64_t n, const StridedIndex<2>& idx,
                          cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  switch (elem_bytes) {
    case 1:
      return CopyAs<uint8_t>(src, dst, n, idx, s);
    case 2:
      return CopyAs<uint16_t>(src, dst, n, idx, s);
    case 4:
      return CopyAs<uint32_t>(src, dst, n, idx, s);
    case 8:
      return CopyAs<unsigned long long>(src, dst, n, idx, s);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace paddlec::ops::cuda
