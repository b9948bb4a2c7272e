// CUDA kernels of fill_constant and cast: grid-stride element-wise loops for every element type.
// (fill_zeros_like, assign and the zero fill are cudaMemsetAsync / cudaMemcpyAsync in tensor_cuda.cc.)
#include "common/cuda_device.cuh"
#include "tensor/tensor_cuda.h"

namespace paddlec::ops::cuda {

template <class T>
cudaError_t Fill(T* p, int64_t n, T value, cudaStream_t s) {
  return ForEach(s, n, [=] __device__(int64_t i) { p[i] = value; });
}

/// static_cast semantics, as the CPU kernel: float to integer truncates toward zero (NaN and
/// out-of-range values are unspecified there; the GPU saturates), nonzero (and NaN) is true.
template <class In, class Out>
cudaError_t Cast(const In* x, Out* y, int64_t n, cudaStream_t s) {
  return ForEach(s, n, [=] __device__(int64_t i) { y[i] = static_cast<Out>(x[i]); });
}

#define PC_FILL(T) template cudaError_t Fill<T>(T*, int64_t, T, cudaStream_t);
#define PC_CAST(In, Out) template cudaError_t Cast<In, Out>(const In*, Out*, int64_t, cudaStream_t);
#define PC_CAST_FROM(In) \
  PC_FILL(In)            \
  PC_CAST(In, bool)      \
  PC_CAST(In, int8_t)    \
  PC_CAST(In, uint8_t)   \
  PC_CAST(In, int16_t)   \
  PC_CAST(In, int32_t)   \
  PC_CAST(In, int64_t)   \
  PC_CAST(In, float)     \
  PC_CAST(In, double)
PC_CAST_FROM(bool)
PC_CAST_FROM(int8_t)
PC_CAST_FROM(uint8_t)
PC_CAST_FROM(int16_t)
PC_CAST_FROM(int32_t)
PC_CAST_FROM(int64_t)
PC_CAST_FROM(float)
PC_CAST_FROM(double)
#undef PC_CAST_FROM
#undef PC_CAST
#undef PC_FILL

}  // namespace paddlec::ops::cuda
