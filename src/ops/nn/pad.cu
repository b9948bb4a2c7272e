// CUDA kernels of pad3d / pad3d_grad: one thread per output element (forward) or per input element
// (gradient, a gather over pad_index.h's preimages: no atomics, deterministic, pad.cc's order).
#include "common/cuda_device.cuh"
#include "nn/nn_cuda.h"

namespace paddlec::ops::cuda {

template <class T>
cudaError_t PadForward(const nn::Pad3dShape& p, const T* x, T* y, int64_t n, cudaStream_t s) {
  return ForEach(s, n, [=] __device__(int64_t q) { y[q] = nn::PadOutputAt(p, x, q); });
}

template <class T>
cudaError_t PadBackward(const nn::Pad3dShape& p, const T* dy, T* dx, int64_t n, cudaStream_t s) {
  return ForEach(s, n, [=] __device__(int64_t q) { dx[q] = nn::PadGradAt(p, dy, q); });
}

#define PC_INSTANTIATE(T)                                                                         \
  template cudaError_t PadForward<T>(const nn::Pad3dShape&, const T*, T*, int64_t, cudaStream_t); \
  template cudaError_t PadBackward<T>(const nn::Pad3dShape&, const T*, T*, int64_t, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
#undef PC_INSTANTIATE
template cudaError_t PadForward<int32_t>(const nn::Pad3dShape&, const int32_t*, int32_t*, int64_t, cudaStream_t);
template cudaError_t PadForward<int64_t>(const nn::Pad3dShape&, const int64_t*, int64_t*, int64_t, cudaStream_t);

}  // namespace paddlec::ops::cuda
