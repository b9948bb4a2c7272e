// CUDA kernels of the comparison ops and where (compare_cuda.cc): grid-stride loops over Out that
// read broadcast operands in place through a StridedIndex; the relation is a template argument, so
// no per-element dispatch. where's gradient sums onto broadcast operands with reduce_engine.cuh.
#include "common/cuda_device.cuh"
#include "math/math_cuda.h"
#include "math/reduce_engine.cuh"

namespace paddlec::ops::cuda {
namespace {

bool Narrow(int64_t n) { return n <= 0xFFFFFFFFll; }

template <Compare K, class T>
__global__ void CompareFlat(int64_t n, const T* __restrict__ x, const T* __restrict__ y, bool* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    out[i] = Relate<K>(x[i], y[i]);
}

template <Compare K, class T, class I>
__global__ void CompareBroadcast(const __grid_constant__ StridedIndex<2> idx, int64_t n, const T* __restrict__ x,
                                 const T* __restrict__ y, bool* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    I off[2];
    idx.Offsets(static_cast<I>(i), off);
    out[i] = Relate<K>(x[off[0]], y[off[1]]);
  }
}

template <Compare K, class T>
cudaError_t LaunchCompare(const T* x, const T* y, bool* out, int64_t n, const StridedIndex<2>* bcast, cudaStream_t s) {
  if (bcast == nullptr)
    CompareFlat<K, T><<<Blocks(n), kThreads, 0, s>>>(n, x, y, out);
  else if (Narrow(n))
    CompareBroadcast<K, T, uint32_t><<<Blocks(n), kThreads, 0, s>>>(*bcast, n, x, y, out);
  else
    CompareBroadcast<K, T, int64_t><<<Blocks(n), kThreads, 0, s>>>(*bcast, n, x, y, out);
  return cudaGetLastError();
}

template <class T, class I>
__global__ void WhereBroadcast(const __grid_constant__ StridedIndex<3> idx, int64_t n, const bool* __restrict__ c,
                               const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    I off[3];
    idx.Offsets(static_cast<I>(i), off);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
}

/// One contribution to a where gradient: dOut where the condition equals `when_true`.
template <class T>
struct WhereTerm {
  const bool* c;
  const T* dout;
  bool when_true;
  template <class I>
  __device__ Acc<T> operator()(const I (&off)[3]) const {
    return c[off[1]] == when_true ? static_cast<Acc<T>>(dout[off[0]]) : Acc<T>(0);
  }
};

template <class T>
struct Store {
  T* out;
  __device__ void operator()(int64_t j, Acc<T> total) const { out[j] = static_cast<T>(total); }
};

}  // namespace

template <class T>
cudaError_t CompareForward(Compare kind, const T* x, const T* y, bool* out, int64_t n, const StridedIndex<2>* bcast,
                           cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  switch (kind) {
    case Compare::kEq:
      return LaunchCompare<Compare::kEq>(x, y, out, n, bcast, s);
    case Compare::kNe:
      return LaunchCompare<Compare::kNe>(x, y, out, n, bcast, s);
    case Compare::kLt:
      return LaunchCompare<Compare::kLt>(x, y, out, n, bcast, s);
    case Compare::kLe:
      return LaunchCompare<Compare::kLe>(x, y, out, n, bcast, s);
    case Compare::kGt:
      return LaunchCompare<Compare::kGt>(x, y, out, n, bcast, s);
    case Compare::kGe:
      return LaunchCompare<Compare::kGe>(x, y, out, n, bcast, s);
  }
  return cudaErrorInvalidValue;
}

template <class T>
cudaError_t WhereForward(const bool* c, const T* x, const T* y, T* out, int64_t n, const StridedIndex<3>* bcast,
                         cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  if (bcast == nullptr) return ForEach(s, n, [=] __device__(int64_t i) { out[i] = c[i] ? x[i] : y[i]; });
  if (Narrow(n))
    WhereBroadcast<T, uint32_t><<<Blocks(n), kThreads, 0, s>>>(*bcast, n, c, x, y, out);
  else
    WhereBroadcast<T, int64_t><<<Blocks(n), kThreads, 0, s>>>(*bcast, n, c, x, y, out);
  return cudaGetLastError();
}

template <class T>
cudaError_t WhereGrad(const bool* c, const T* dout, T* grad, bool when_true, const ReduceIndex<3>& idx,
                      const ReducePlan& plan, void* scratch, cudaStream_t s) {
  return Reduce(idx, plan, static_cast<Acc<T>*>(scratch), WhereTerm<T>{c, dout, when_true}, Store<T>{grad}, s);
}

#define PC_INSTANTIATE(T)                                                                                     \
  template cudaError_t CompareForward<T>(Compare, const T*, const T*, bool*, int64_t, const StridedIndex<2>*, \
                                         cudaStream_t);                                                       \
  template cudaError_t WhereForward<T>(const bool*, const T*, const T*, T*, int64_t, const StridedIndex<3>*,  \
                                       cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
PC_INSTANTIATE(int32_t)
PC_INSTANTIATE(int64_t)
PC_INSTANTIATE(bool)
#undef PC_INSTANTIATE
template cudaError_t WhereGrad<float>(const bool*, const float*, float*, bool, const ReduceIndex<3>&, const ReducePlan&,
                                      void*, cudaStream_t);
template cudaError_t WhereGrad<double>(const bool*, const double*, double*, bool, const ReduceIndex<3>&,
                                       const ReducePlan&, void*, cudaStream_t);

}  // namespace paddlec::ops::cuda
