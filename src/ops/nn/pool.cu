// CUDA kernels of pool2d / pool2d_grad for what cuDNN's pooling cannot express (adaptive windows,
// asymmetric padding, ceil_mode windows, empty windows) and for both gradients.
//
// One thread per output element (forward, arg-max) or per input element (gradients); the per-element
// bodies are nn_cuda_index.h's, which the host test checks against pool.cc bit for bit. The gradients
// gather instead of scattering: input element (h, w) visits the outputs whose windows contain it
// (nn::PoolCovering) in row-major order and sums their contributions, so no atomics are needed, the
// result is deterministic, and the additions happen in pool.cc's order. The max gradient goes to the
// first maximal element of each window: a first pass records that element per output (PoolArgMax),
// the gather compares against it.
#include "common/cuda_device.cuh"
#include "nn/nn_cuda.h"

namespace paddlec::ops::cuda {

template <class T>
cudaError_t PoolForward(const PoolShape& p, const T* x, T* y, cudaStream_t s) {
  return ForEach(s, p.planes * p.axis[0].out * p.axis[1].out,
                 [=] __device__(int64_t q) { y[q] = nn::PoolOutputAt(p, x, q); });
}

template <class T>
cudaError_t PoolArgMax(const PoolShape& p, const T* x, const T* y, int32_t* arg, cudaStream_t s) {
  return ForEach(s, p.planes * p.axis[0].out * p.axis[1].out,
                 [=] __device__(int64_t q) { arg[q] = nn::PoolArgMaxAt(p, x, y, q); });
}

template <class T>
cudaError_t PoolMaxBackward(const PoolShape& p, const int32_t* arg, const T* dy, T* dx, cudaStream_t s) {
  return ForEach(s, p.planes * p.axis[0].in * p.axis[1].in,
                 [=] __device__(int64_t i) { dx[i] = nn::PoolMaxGradAt(p, arg, dy, i); });
}

template <class T>
cudaError_t PoolAvgBackward(const PoolShape& p, const T* dy, T* dx, cudaStream_t s) {
  return ForEach(s, p.planes * p.axis[0].in * p.axis[1].in,
                 [=] __device__(int64_t i) { dx[i] = nn::PoolAvgGradAt(p, dy, i); });
}

#define PC_INSTANTIATE(T)                                                                                \
  template cudaError_t PoolForward<T>(const PoolShape&, const T*, T*, cudaStream_t);                     \
  template cudaError_t PoolArgMax<T>(const PoolShape&, const T*, const T*, int32_t*, cudaStream_t);      \
  template cudaError_t PoolMaxBackward<T>(const PoolShape&, const int32_t*, const T*, T*, cudaStream_t); \
  template cudaError_t PoolAvgBackward<T>(const PoolShape&, const T*, T*, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
#undef PC_INSTANTIATE

}  // namespace paddlec::ops::cuda
