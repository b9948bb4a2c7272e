// CUDA kernels of nearest_interp_v2 / bilinear_interp_v2 and their gradients: one thread per output
// element (forward) or per input element (gradient, a gather over interp_index.h's covering ranges:
// no atomics, deterministic, interp.cc's order).
#include "common/cuda_device.cuh"
#include "nn/nn_cuda.h"

namespace paddlec::ops::cuda {

template <class T>
cudaError_t InterpForward(const nn::InterpShape& s, const T* x, T* y, int64_t n, cudaStream_t st) {
  return ForEach(st, n, [=] __device__(int64_t q) { y[q] = nn::InterpOutputAt(s, x, q); });
}

template <class T>
cudaError_t InterpBackward(const nn::InterpShape& s, const T* dy, T* dx, int64_t n, cudaStream_t st) {
  return ForEach(st, n, [=] __device__(int64_t q) { dx[q] = nn::InterpGradAt(s, dy, q); });
}

#define PC_INSTANTIATE(T)                                                                             \
  template cudaError_t InterpForward<T>(const nn::InterpShape&, const T*, T*, int64_t, cudaStream_t); \
  template cudaError_t InterpBackward<T>(const nn::InterpShape&, const T*, T*, int64_t, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
#undef PC_INSTANTIATE

}  // namespace paddlec::ops::cuda
