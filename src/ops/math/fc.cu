// CUDA twin of fc.cc's epilogue: the bias (one value per column) and the relu applied in place to the
// product cuBLAS wrote (the GEMM itself runs from matmul_cuda.cc, as mul's does).
#include <cuda_runtime.h>

#include "common/cuda_device.cuh"
#include "math/math_cuda.h"

namespace paddlec::ops::cuda {

template <class T>
cudaError_t RowBiasActivation(T* y, const T* bias, int64_t rows, int64_t cols, bool relu, cudaStream_t s) {
  return ForEach(s, rows * cols, [=] __device__(int64_t i) {
    const T v = y[i] + (bias != nullptr ? bias[i % cols] : T(0));
    y[i] = relu && v < T(0) ? T(0) : v;
  });
}

template cudaError_t RowBiasActivation<float>(float*, const float*, int64_t, int64_t, bool, cudaStream_t);
template cudaError_t RowBiasActivation<double>(double*, const double*, int64_t, int64_t, bool, cudaStream_t);

}  // namespace paddlec::ops::cuda
