// CUDA kernels around conv2d's cuDNN calls: explicit zero padding (cuDNN pads symmetrically, so an
// asymmetric padding is applied to a copy of the input), the crop of the padded input gradient, the
// batch-norm fold and the bias + relu epilogue of fused_conv2d_bn_act. Grid-stride element-wise maps.
#include <cmath>

#include "common/cuda_device.cuh"
#include "nn/nn_cuda.h"

namespace paddlec::ops::cuda {

template <class T>
cudaError_t PadPlanes(const T* x, T* xp, int64_t planes, int64_t h, int64_t w, int64_t hp, int64_t wp, int64_t top,
                      int64_t left, cudaStream_t s) {
  return ForEach(s, planes * hp * wp, [=] __device__(int64_t i) {
    int64_t col = i % wp, row = (i / wp) % hp, p = i / (wp * hp);
    int64_t r = nn::UnpaddedIndex(row, top, h), c = nn::UnpaddedIndex(col, left, w);
    xp[i] = (r >= 0 && c >= 0) ? x[(p * h + r) * w + c] : T(0);
  });
}

template <class T>
cudaError_t CropPlanes(const T* dxp, T* dx, int64_t planes, int64_t h, int64_t w, int64_t hp, int64_t wp, int64_t top,
                       int64_t left, cudaStream_t s) {
  return ForEach(s, planes * h * w, [=] __device__(int64_t i) {
    int64_t c = i % w, r = (i / w) % h, p = i / (w * h);
    dx[i] = dxp[(p * hp + r + top) * wp + c + left];
  });
}

template <class T>
cudaError_t FoldBatchNorm(const T* filter, const T* scale, const T* bias, const T* mean, const T* var, double eps,
                          int64_t o, int64_t per_out, T* filter_out, T* bias_out, cudaStream_t s) {
  const T e = static_cast<T>(eps);
  // conv.cc's FusedConvKernel: a = scale / sqrt(var + eps) in T, the same operations in the same order.
  return ForEach(s, o * per_out, [=] __device__(int64_t i) {
    int64_t oc = i / per_out;
    T a = scale[oc] / sqrt(var[oc] + e);
    filter_out[i] = filter[i] * a;
    if (i % per_out == 0) bias_out[oc] = bias[oc] - mean[oc] * a;
  });
}

template <class T>
cudaError_t BiasActivation(T* y, const T* bias, int64_t n, int64_t channels, int64_t plane, bool relu, cudaStream_t s) {
  if (relu)
    return ForEach(s, n * channels * plane, [=] __device__(int64_t i) {
      T v = y[i] + bias[(i / plane) % channels];
      y[i] = v < T(0) ? T(0) : v;  // std::max(v, 0) of the CPU: NaN stays NaN
    });
  return ForEach(s, n * channels * plane, [=] __device__(int64_t i) { y[i] += bias[(i / plane) % channels]; });
}

#define PC_INSTANTIATE(T)                                                                                           \
  template cudaError_t PadPlanes<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,    \
                                    cudaStream_t);                                                                  \
  template cudaError_t CropPlanes<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,   \
                                     cudaStream_t);                                                                 \
  template cudaError_t FoldBatchNorm<T>(const T*, const T*, const T*, const T*, const T*, double, int64_t, int64_t, \
                                        T*, T*, cudaStream_t);                                                      \
  template cudaError_t BiasActivation<T>(T*, const T*, int64_t, int64_t, int64_t, bool, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
#undef PC_INSTANTIATE

}  // namespace paddlec::ops::cuda
