// CUDA kernels of the activation family: element-wise maps as grid-stride loops, and the softmax
// family with one warp per line.
#include <cmath>

#include "activation/activation_cuda.h"
#include "common/cuda_device.cuh"

namespace paddlec::ops::cuda {
namespace {

template <class T>
__device__ T Apply(Activation f, T x, T alpha) {
  switch (f) {
    case Activation::kRelu: return x > T(0) ? x : T(0);
    case Activation::kSigmoid: return T(1) / (T(1) + exp(-x));
    case Activation::kTanh: return tanh(x);
    case Activation::kSqrt: return sqrt(x);
    case Activation::kGelu: return T(0.5) * x * (T(1) + erf(x * T(0.7071067811865476)));
    case Activation::kGeluTanh:
      return T(0.5) * x * (T(1) + tanh(T(0.7978845608028654) * (x + T(0.044715) * x * x * x)));
    case Activation::kLeakyRelu: return x > T(0) ? x : x * alpha;
  }
  return x;
}

template <class T>
__device__ T Derivative(Activation f, T a, T dy, T alpha) {
  switch (f) {
    case Activation::kRelu: return a > T(0) ? dy : T(0);             // a = Out
    case Activation::kSigmoid: return dy * a * (T(1) - a);           // a = Out
    case Activation::kTanh: return dy * (T(1) - a * a);               // a = Out
    case Activation::kSqrt: return dy * T(0.5) / a;                   // a = Out
    case Activation::kGelu:                                           // a = X
      return dy * (T(0.5) * (T(1) + erf(a * T(0.7071067811865476))) +
                   a * T(0.3989422804014327) * exp(T(-0.5) * a * a));
    case Activation::kGeluTanh: {                                     // a = X
      T t = tanh(T(0.7978845608028654) * (a + T(0.044715) * a * a * a));
      T dinner = T(0.7978845608028654) * (T(1) + T(3 * 0.044715) * a * a);
      return dy * (T(0.5) * (T(1) + t) + T(0.5) * a * (T(1) - t * t) * dinner);
    }
    case Activation::kLeakyRelu: return a > T(0) ? dy : dy * alpha;  // a = X
  }
  return dy;
}

template <class T, bool kLog>
__global__ void SoftmaxWarp(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  int64_t line = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (line >= outer * inner) return;
  int64_t base = (line / inner) * n * inner + line % inner;
  T m = -INFINITY;
  for (int64_t k = lane; k < n; k += 32) m = max(m, x[base + k * inner]);
  m = WarpMax(m);
  T s = 0;
  for (int64_t k = lane; k < n; k += 32) s += exp(x[base + k * inner] - m);
  s = WarpSum(s);
  T ls = log(s);
  for (int64_t k = lane; k < n; k += 32) {
    T z = x[base + k * inner] - m;
    y[base + k * inner] = kLog ? z - ls : exp(z) / s;
  }
}

template <class T, bool kLog>
__global__ void SoftmaxGradWarp(const T* out, const T* dout, T* dx, int64_t outer, int64_t n, int64_t inner) {
  int64_t line = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (line >= outer * inner) return;
  int64_t base = (line / inner) * n * inner + line % inner;
  T s = 0;
  for (int64_t k = lane; k < n; k += 32) {
    int64_t i = base + k * inner;
    s += kLog ? dout[i] : dout[i] * out[i];
  }
  s = WarpSum(s);
  for (int64_t k = lane; k < n; k += 32) {
    int64_t i = base + k * inner;
    dx[i] = kLog ? dout[i] - exp(out[i]) * s : out[i] * (dout[i] - s);
  }
}

unsigned WarpBlocks(int64_t lines) { return static_cast<unsigned>((lines * 32 + kThreads - 1) / kThreads); }

}  // namespace

template <class T>
cudaError_t ActivationForward(Activation f, const T* x, T* y, int64_t n, float alpha, cudaStream_t s) {
  T a = static_cast<T>(alpha);
  return ForEach(s, n, [=] __device__(int64_t i) { y[i] = Apply(f, x[i], a); });
}

template <class T>
cudaError_t ActivationBackward(Activation f, const T* a, const T* dy, T* dx, int64_t n, float alpha, cudaStream_t s) {
  T al = static_cast<T>(alpha);
  return ForEach(s, n, [=] __device__(int64_t i) { dx[i] = Derivative(f, a[i], dy[i], al); });
}

template <class T>
cudaError_t SoftmaxForward(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log, cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  if (log) SoftmaxWarp<T, true><<<WarpBlocks(outer * inner), kThreads, 0, s>>>(x, y, outer, n, inner);
  else SoftmaxWarp<T, false><<<WarpBlocks(outer * inner), kThreads, 0, s>>>(x, y, outer, n, inner);
  return cudaGetLastError();
}

template <class T>
cudaError_t SoftmaxBackward(const T* out, const T* dout, T* dx, int64_t outer, int64_t n, int64_t inner, bool log,
                            cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  if (log) SoftmaxGradWarp<T, true><<<WarpBlocks(outer * inner), kThreads, 0, s>>>(out, dout, dx, outer, n, inner);
  else SoftmaxGradWarp<T, false><<<WarpBlocks(outer * inner), kThreads, 0, s>>>(out, dout, dx, outer, n, inner);
  return cudaGetLastError();
}

#define PC_INSTANTIATE(T)                                                                                        \
  template cudaError_t ActivationForward<T>(Activation, const T*, T*, int64_t, float, cudaStream_t);            \
  template cudaError_t ActivationBackward<T>(Activation, const T*, const T*, T*, int64_t, float, cudaStream_t); \
  template cudaError_t SoftmaxForward<T>(const T*, T*, int64_t, int64_t, int64_t, bool, cudaStream_t);          \
  template cudaError_t SoftmaxBackward<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, bool, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
#undef PC_INSTANTIATE

}  // namespace paddlec::ops::cuda
