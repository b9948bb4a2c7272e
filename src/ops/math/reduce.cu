// CUDA kernels of the reductions (reduce_sum, reduce_mean, mean, and the batch sums of matmul_v2's
// gradients) on the deterministic engine of reduce_engine.cuh, and of their gradients: Out@GRAD
// broadcast back over the reduced axes, read in place.
#include <cuda_runtime.h>

#include "common/cuda_device.cuh"
#include "math/math_cuda.h"
#include "math/reduce_engine.cuh"

namespace paddlec::ops::cuda {
namespace {

/// One contribution: the element converted to the output type first (PaddlePaddle casts, then
/// reduces), then widened to the accumulator.
template <class TIn, class TOut>
struct CastTerm {
  const TIn* x;
  template <class I>
  __device__ Acc<TOut> operator()(const I (&off)[2]) const {
    return static_cast<Acc<TOut>>(static_cast<TOut>(x[off[0]]));
  }
};

/// out[j] = the total (times inv for a mean), rounded to TOut as the CPU stores its sum first.
template <class TOut>
struct StoreTotal {
  TOut* out;
  bool mean;
  TOut inv;
  __device__ void operator()(int64_t j, Acc<TOut> total) const {
    const TOut t = static_cast<TOut>(total);
    out[j] = mean ? t * inv : t;
  }
};

template <class TDst, class TSrc, class I>
__global__ void BroadcastScaledKernel(const __grid_constant__ StridedIndex<2> idx, int64_t n, const TSrc* src,
                                      TDst* dst, TDst scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    I off[2];
    idx.Offsets(static_cast<I>(i), off);
    dst[i] = scale * static_cast<TDst>(src[off[1]]);
  }
}

}  // namespace

template <class TIn, class TOut>
cudaError_t ReduceSum(const TIn* x, TOut* out, const ReduceIndex<2>& idx, const ReducePlan& plan, bool mean, TOut inv,
                      void* scratch, cudaStream_t s) {
  return Reduce(idx, plan, static_cast<Acc<TOut>*>(scratch), CastTerm<TIn, TOut>{x}, StoreTotal<TOut>{out, mean, inv},
                s);
}

template <class TDst, class TSrc>
cudaError_t BroadcastScaled(const TSrc* src, TDst* dst, int64_t n, const StridedIndex<2>& idx, TDst scale,
                            cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  if (n <= 0xFFFFFFFFll)
    BroadcastScaledKernel<TDst, TSrc, uint32_t><<<Blocks(n), kThreads, 0, s>>>(idx, n, src, dst, scale);
  else
    BroadcastScaledKernel<TDst, TSrc, int64_t><<<Blocks(n), kThreads, 0, s>>>(idx, n, src, dst, scale);
  return cudaGetLastError();
}

#define PC_INSTANTIATE_REDUCE(TIn, TOut)                                                                             \
  template cudaError_t ReduceSum<TIn, TOut>(const TIn*, TOut*, const ReduceIndex<2>&, const ReducePlan&, bool, TOut, \
                                            void*, cudaStream_t);
#define PC_INSTANTIATE_REDUCE_FROM(TIn) \
  PC_INSTANTIATE_REDUCE(TIn, float)     \
  PC_INSTANTIATE_REDUCE(TIn, double)    \
  PC_INSTANTIATE_REDUCE(TIn, int32_t)   \
  PC_INSTANTIATE_REDUCE(TIn, int64_t)
PC_INSTANTIATE_REDUCE_FROM(float)
PC_INSTANTIATE_REDUCE_FROM(double)
PC_INSTANTIATE_REDUCE_FROM(int32_t)
PC_INSTANTIATE_REDUCE_FROM(int64_t)
#undef PC_INSTANTIATE_REDUCE_FROM
#undef PC_INSTANTIATE_REDUCE

#define PC_INSTANTIATE_BROADCAST(TDst, TSrc)                                                                  \
  template cudaError_t BroadcastScaled<TDst, TSrc>(const TSrc*, TDst*, int64_t, const StridedIndex<2>&, TDst, \
                                                   cudaStream_t);
PC_INSTANTIATE_BROADCAST(float, float)
PC_INSTANTIATE_BROADCAST(float, double)
PC_INSTANTIATE_BROADCAST(double, float)
PC_INSTANTIATE_BROADCAST(double, double)
#undef PC_INSTANTIATE_BROADCAST

}  // namespace paddlec::ops::cuda
