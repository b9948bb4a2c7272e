// CUDA kernels of the activation family: element-wise maps as grid-stride loops, one kernel per
// activation kind (the kind is a template argument, so no per-element dispatch), and the softmax
// family with one warp per line.
#include <cmath>

#include "activation/activation_cuda.h"
#include "common/cuda_device.cuh"

namespace paddlec::ops::cuda {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

/// f(x): the formulas of activation.cc's Forward.
template <Activation K, class T>
__device__ T Apply(T x, T a, T b, T c) {
  switch (K) {
    case Activation::kRelu:
      return x > T(0) ? x : T(0);
    case Activation::kSigmoid:
      return T(1) / (T(1) + exp(-x));
    case Activation::kTanh:
      return tanh(x);
    case Activation::kSqrt:
      return sqrt(x);
    case Activation::kGelu:
      return T(0.5) * x * (T(1) + erf(x * T(kInvSqrt2)));
    case Activation::kGeluTanh:
      return T(0.5) * x * (T(1) + tanh(T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x)));
    case Activation::kLeakyRelu:
      return x > T(0) ? x : x * a;
    case Activation::kRelu6:
      return min(max(x, T(0)), a);
    case Activation::kHardSwish:
      return x * min(max(x + c, T(0)), a) / b;
    case Activation::kHardSigmoid:
      return min(max(x * a + b, T(0)), T(1));
    case Activation::kSwish:
      return x / (T(1) + exp(-a * x));
    case Activation::kSilu:
      return x / (T(1) + exp(-x));
    case Activation::kElu:
      return x > T(0) ? x : a * (exp(x) - T(1));
    case Activation::kExp:
      return exp(x);
    case Activation::kLog:
      return log(x);
    case Activation::kPow:
      return a == T(2) ? x * x : pow(x, a);
    case Activation::kClip:
      return x < a ? a : (x > b ? b : x);
  }
  return x;
}

/// f'(.) * dy, from `v` = Out for GradReads::kOut kinds and X otherwise: activation.cc's Backward.
template <Activation K, class T>
__device__ T Derivative(T v, T dy, T a, T b, T c) {
  switch (K) {
    case Activation::kRelu:
      return v > T(0) ? dy : T(0);
    case Activation::kSigmoid:
      return dy * v * (T(1) - v);
    case Activation::kTanh:
      return dy * (T(1) - v * v);
    case Activation::kSqrt:
      return dy * T(0.5) / v;
    case Activation::kGelu:
      return dy * (T(0.5) * (T(1) + erf(v * T(kInvSqrt2))) + v * T(kInvSqrt2Pi) * exp(T(-0.5) * v * v));
    case Activation::kGeluTanh: {
      const T t = tanh(T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v));
      const T dinner = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * v * v);
      return dy * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * dinner);
    }
    case Activation::kLeakyRelu:
      return v > T(0) ? dy : dy * a;
    case Activation::kRelu6:
      return v > T(0) && v < a ? dy : T(0);
    case Activation::kHardSwish: {
      const T t = v + c;
      return t > T(0) ? (t < a ? dy * (T(2) * v + c) / b : dy) : T(0);
    }
    case Activation::kHardSigmoid:
      return v > T(0) && v < T(1) ? dy * a : T(0);
    case Activation::kSwish: {
      const T s = T(1) / (T(1) + exp(-a * v));
      const T bo = a * v * s;
      return dy * (bo + s * (T(1) - bo));
    }
    case Activation::kSilu: {
      const T s = T(1) / (T(1) + exp(-v));
      return dy * s * (T(1) + v * (T(1) - s));
    }
    case Activation::kElu:
      return v > T(0) ? dy : dy * a * exp(v);
    case Activation::kExp:
      return dy * v;
    case Activation::kLog:
      return dy / v;
    case Activation::kPow:
      return a == T(2) ? dy * T(2) * v : dy * a * pow(v, a - T(1));
    case Activation::kClip:
      return v > a && v < b ? dy : T(0);
  }
  return dy;
}

template <Activation K, class T>
cudaError_t Forward(ActParams p, const T* x, T* y, int64_t n, cudaStream_t s) {
  const T a = static_cast<T>(p.a), b = static_cast<T>(p.b), c = static_cast<T>(p.c);
  return ForEach(s, n, [=] __device__(int64_t i) { y[i] = Apply<K>(x[i], a, b, c); });
}

template <Activation K, class T>
cudaError_t Backward(ActParams p, const T* v, const T* dy, T* dx, int64_t n, cudaStream_t s) {
  const T a = static_cast<T>(p.a), b = static_cast<T>(p.b), c = static_cast<T>(p.c);
  return ForEach(s, n, [=] __device__(int64_t i) { dx[i] = Derivative<K>(v[i], dy[i], a, b, c); });
}

/// Calls fn.template operator()<K>() for the runtime kind f: one instantiation per kind.
template <class F>
cudaError_t Dispatch(Activation f, F&& fn) {
  switch (f) {
    case Activation::kRelu:
      return fn.template operator()<Activation::kRelu>();
    case Activation::kSigmoid:
      return fn.template operator()<Activation::kSigmoid>();
    case Activation::kTanh:
      return fn.template operator()<Activation::kTanh>();
    case Activation::kSqrt:
      return fn.template operator()<Activation::kSqrt>();
    case Activation::kGelu:
      return fn.template operator()<Activation::kGelu>();
    case Activation::kGeluTanh:
      return fn.template operator()<Activation::kGeluTanh>();
    case Activation::kLeakyRelu:
      return fn.template operator()<Activation::kLeakyRelu>();
    case Activation::kRelu6:
      return fn.template operator()<Activation::kRelu6>();
    case Activation::kHardSwish:
      return fn.template operator()<Activation::kHardSwish>();
    case Activation::kHardSigmoid:
      return fn.template operator()<Activation::kHardSigmoid>();
    case Activation::kSwish:
      return fn.template operator()<Activation::kSwish>();
    case Activation::kSilu:
      return fn.template operator()<Activation::kSilu>();
    case Activation::kElu:
      return fn.template operator()<Activation::kElu>();
    case Activation::kExp:
      return fn.template operator()<Activation::kExp>();
    case Activation::kLog:
      return fn.template operator()<Activation::kLog>();
    case Activation::kPow:
      return fn.template operator()<Activation::kPow>();
    case Activation::kClip:
      return fn.template operator()<Activation::kClip>();
  }
  return cudaErrorInvalidValue;
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
cudaError_t ActivationForward(Activation f, ActParams p, const T* x, T* y, int64_t n, cudaStream_t s) {
  return Dispatch(f, [&]<Activation K>() { return Forward<K, T>(p, x, y, n, s); });
}

template <class T>
cudaError_t ActivationBackward(Activation f, ActParams p, const T* a, const T* dy, T* dx, int64_t n, cudaStream_t s) {
  return Dispatch(f, [&]<Activation K>() { return Backward<K, T>(p, a, dy, dx, n, s); });
}

template <class T>
cudaError_t SoftmaxForward(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log, cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  if (log)
    SoftmaxWarp<T, true><<<WarpBlocks(outer * inner), kThreads, 0, s>>>(x, y, outer, n, inner);
  else
    SoftmaxWarp<T, false><<<WarpBlocks(outer * inner), kThreads, 0, s>>>(x, y, outer, n, inner);
  return cudaGetLastError();
}

template <class T>
cudaError_t SoftmaxBackward(const T* out, const T* dout, T* dx, int64_t outer, int64_t n, int64_t inner, bool log,
                            cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  if (log)
    SoftmaxGradWarp<T, true><<<WarpBlocks(outer * inner), kThreads, 0, s>>>(out, dout, dx, outer, n, inner);
  else
    SoftmaxGradWarp<T, false><<<WarpBlocks(outer * inner), kThreads, 0, s>>>(out, dout, dx, outer, n, inner);
  return cudaGetLastError();
}

#define PC_INSTANTIATE(T)                                                                                           \
  template cudaError_t ActivationForward<T>(Activation, ActParams, const T*, T*, int64_t, cudaStream_t);            \
  template cudaError_t ActivationBackward<T>(Activation, ActParams, const T*, const T*, T*, int64_t, cudaStream_t); \
  template cudaError_t SoftmaxForward<T>(const T*, T*, int64_t, int64_t, int64_t, bool, cudaStream_t);              \
  template cudaError_t SoftmaxBackward<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, bool, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
#undef PC_INSTANTIATE

}  // namespace paddlec::ops::cuda
