// CUDA kernels of sgd, momentum and adam: element-wise grid-stride updates that read their scalars
// (learning rate, beta powers, optional tensors) on the device. Each element is read before it is
// written by the same thread, so in-place updates (ParamOut == Param, ...) are safe. Adam's scalar
// work (bias corrections in double, as the CPU computes them) is done once per block by thread 0 and
// shared; the beta powers advance in a one-thread kernel queued after the element update.
#include "common/cuda_device.cuh"
#include "optimizer/optimizer_cuda.h"

namespace paddlec::ops::cuda {
namespace {

__device__ double Read(const Scalar& s) {
  if (s.p == nullptr) return s.value;
  return s.f64 ? *static_cast<const double*>(s.p) : static_cast<double>(*static_cast<const float*>(s.p));
}

__device__ void Write(const ScalarOut& s, double v) {
  if (s.f64)
    *static_cast<double*>(s.p) = v;
  else
    *static_cast<float*>(s.p) = static_cast<float>(v);
}

/// The update's source and destination (the master copy when given) and the mirror into ParamOut.
template <class T>
struct Target {
  const T* in;
  T* out;
  T* mirror;
  __device__ explicit Target(const ParamPtrs<T>& p)
      : in(p.update_master ? p.master : p.param),
        out(p.update_master ? p.master_out : p.param_out),
        mirror(p.update_master ? p.param_out : nullptr) {}
  __device__ void Store(int64_t i, T v) const {
    out[i] = v;
    if (mirror != nullptr) mirror[i] = v;
  }
};

template <class T>
struct AdamBlockScalars {
  T lr_t, eps_t, b1, b2;
  bool skip;
};

template <class T>
__global__ void AdamKernel(ParamPtrs<T> p, const T* __restrict__ grad, const T* m1, T* m1_out, const T* m2, T* m2_out,
                           int64_t n, AdamScalars a) {
  __shared__ AdamBlockScalars<T> sc;
  if (threadIdx.x == 0) {
    sc.skip = a.skip_host || (a.skip != nullptr && *a.skip);
    const double beta1_pow = Read(a.beta1_pow), beta2_pow = Read(a.beta2_pow), lr = Read(a.lr);
    // optimizer.cc's expressions, in double: lr_t = lr sqrt(1 - b2pow) / (1 - b1pow), eps_t = eps sqrt(1 - b2pow).
    sc.lr_t = static_cast<T>(__dmul_rn(lr, sqrt(1 - beta2_pow)) / (1 - beta1_pow));
    sc.eps_t = static_cast<T>(__dmul_rn(Read(a.epsilon), sqrt(1 - beta2_pow)));
    sc.b1 = static_cast<T>(Read(a.beta1));
    sc.b2 = static_cast<T>(Read(a.beta2));
  }
  __syncthreads();
  const Target<T> t(p);
  const AdamBlockScalars<T> s = sc;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    if (s.skip) {  // every output keeps its input value
      if (p.param_out != p.param) p.param_out[i] = p.param[i];
      if (p.master != nullptr && p.master_out != nullptr && p.master_out != p.master) p.master_out[i] = p.master[i];
      if (m1_out != m1) m1_out[i] = m1[i];
      if (m2_out != m2) m2_out[i] = m2[i];
      continue;
    }
    const T g = grad[i];
    const T mo1 = s.b1 * m1[i] + (T(1) - s.b1) * g;
    const T mo2 = s.b2 * m2[i] + (T(1) - s.b2) * g * g;
    m1_out[i] = mo1;
    m2_out[i] = mo2;
    t.Store(i, t.in[i] - s.lr_t * (mo1 / (sqrt(mo2) + s.eps_t)));
  }
}

__global__ void AdamBetaPowsKernel(AdamScalars a, ScalarOut b1_out, ScalarOut b2_out, bool use_global_beta_pow) {
  const bool skip = a.skip_host || (a.skip != nullptr && *a.skip);
  const double b1p = Read(a.beta1_pow), b2p = Read(a.beta2_pow);  // both read before either is written
  if (skip || use_global_beta_pow) {
    Write(b1_out, b1p);  // exact: the value came from a tensor of the output's dtype
    Write(b2_out, b2p);
  } else {
    Write(b1_out, b1p * Read(a.beta1));
    Write(b2_out, b2p * Read(a.beta2));
  }
}

}  // namespace

template <class T>
cudaError_t Sgd(ParamPtrs<T> p, const T* grad, int64_t n, Scalar lr, cudaStream_t s) {
  return ForEach(s, n, [=] __device__(int64_t i) {
    const Target<T> t(p);
    t.Store(i, t.in[i] - static_cast<T>(Read(lr)) * grad[i]);
  });
}

template <class T>
cudaError_t Momentum(ParamPtrs<T> p, const T* grad, const T* velocity, T* velocity_out, int64_t n, Scalar lr, T mu,
                     T rescale, T coeff, bool l2_decay, bool nesterov, cudaStream_t s) {
  return ForEach(s, n, [=] __device__(int64_t i) {
    const Target<T> t(p);
    const T lr_t = static_cast<T>(Read(lr));
    const T pin = t.in[i];
    const T g = l2_decay ? rescale * grad[i] + coeff * pin : rescale * grad[i];
    const T v = mu * velocity[i] + g;
    velocity_out[i] = v;
    t.Store(i, nesterov ? pin - lr_t * (g + mu * v) : pin - lr_t * v);
  });
}

template <class T>
cudaError_t Adam(ParamPtrs<T> p, const T* grad, const T* m1, T* m1_out, const T* m2, T* m2_out, int64_t n,
                 const AdamScalars& a, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  AdamKernel<T><<<Blocks(n), kThreads, 0, s>>>(p, grad, m1, m1_out, m2, m2_out, n, a);
  return cudaGetLastError();
}

cudaError_t AdamBetaPows(const AdamScalars& a, ScalarOut beta1_pow_out, ScalarOut beta2_pow_out,
                         bool use_global_beta_pow, cudaStream_t s) {
  AdamBetaPowsKernel<<<1, 1, 0, s>>>(a, beta1_pow_out, beta2_pow_out, use_global_beta_pow);
  return cudaGetLastError();
}

template <class T>
cudaError_t MergeSparseRows(const T* values, const int64_t* order, const int64_t* starts, int64_t rows, int64_t width,
                            T* merged, cudaStream_t s) {
  return ForEach(s, rows * width, [=] __device__(int64_t i) {
    const int64_t u = i / width, j = i % width;
    T sum = 0;
    for (int64_t k = starts[u]; k < starts[u + 1]; ++k) sum += values[order[k] * width + j];
    merged[i] = sum;
  });
}

template <class T>
cudaError_t GatherTableRows(const T* src, const int64_t* rows, int64_t n, int64_t width, T* dst, cudaStream_t s) {
  return ForEach(s, n * width, [=] __device__(int64_t i) { dst[i] = src[rows[i / width] * width + i % width]; });
}

template <class T>
cudaError_t ScatterTableRows(const T* src, const int64_t* rows, int64_t n, int64_t width, T* dst, cudaStream_t s) {
  return ForEach(s, n * width, [=] __device__(int64_t i) { dst[rows[i / width] * width + i % width] = src[i]; });
}

#define PC_INSTANTIATE(T)                                                                                       \
  template cudaError_t Sgd<T>(ParamPtrs<T>, const T*, int64_t, Scalar, cudaStream_t);                           \
  template cudaError_t Momentum<T>(ParamPtrs<T>, const T*, const T*, T*, int64_t, Scalar, T, T, T, bool, bool,  \
                                   cudaStream_t);                                                               \
  template cudaError_t Adam<T>(ParamPtrs<T>, const T*, const T*, T*, const T*, T*, int64_t, const AdamScalars&, \
                               cudaStream_t);                                                                   \
  template cudaError_t MergeSparseRows<T>(const T*, const int64_t*, const int64_t*, int64_t, int64_t, T*,        \
                                          cudaStream_t);                                                        \
  template cudaError_t GatherTableRows<T>(const T*, const int64_t*, int64_t, int64_t, T*, cudaStream_t);         \
  template cudaError_t ScatterTableRows<T>(const T*, const int64_t*, int64_t, int64_t, T*, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
#undef PC_INSTANTIATE

}  // namespace paddlec::ops::cuda
