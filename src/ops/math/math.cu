// CUDA kernels of the math family's small ops: scale, sum (add_n), square and cos_sim, with their
// gradients (scale's and sum's gradients are scale ops).
#include <cuda_runtime.h>

#include "common/cuda_device.cuh"
#include "math/math_cuda.h"
#include "math/reduce_engine.cuh"

namespace paddlec::ops::cuda {
namespace {

// ---- scale -------------------------------------------------------------------------------------

/// The ScaleTensor's element converted to T, as the CPU converts it (static_cast from its type).
template <class T>
__device__ T LoadScalar(const void* p, ScalarType t, T fallback) {
  switch (t) {
    case ScalarType::kNone:
      return fallback;
    case ScalarType::kBool:
      return static_cast<T>(*static_cast<const bool*>(p));
    case ScalarType::kInt8:
      return static_cast<T>(*static_cast<const int8_t*>(p));
    case ScalarType::kUInt8:
      return static_cast<T>(*static_cast<const uint8_t*>(p));
    case ScalarType::kInt16:
      return static_cast<T>(*static_cast<const int16_t*>(p));
    case ScalarType::kInt32:
      return static_cast<T>(*static_cast<const int32_t*>(p));
    case ScalarType::kInt64:
      return static_cast<T>(*static_cast<const int64_t*>(p));
    case ScalarType::kFloat32:
      return static_cast<T>(*static_cast<const float*>(p));
    case ScalarType::kFloat64:
      return static_cast<T>(*static_cast<const double*>(p));
  }
  return fallback;
}

template <class T>
__global__ void ScaleKernel(const T* x, T* y, int64_t n, T scale, T bias, bool after, const void* scale_ptr,
                            ScalarType scale_type) {
  // Every thread reads the one ScaleTensor element (a broadcast load served by the cache), so the
  // host never waits to read it.
  const T s = LoadScalar<T>(scale_ptr, scale_type, scale);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    y[i] = after ? s * x[i] + bias : s * (x[i] + bias);
}

// ---- sum ---------------------------------------------------------------------------------------

template <class T>
struct SumInputs {
  const T* in[kSumMaxInputs];
  int count;
};

/// out[i] = in[0][i] + in[1][i] + ... in order. Each thread reads all its inputs at i before it
/// writes out[i], so out may be any of the inputs.
template <class T>
__global__ void SumKernel(const __grid_constant__ SumInputs<T> a, int64_t n, T* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    T acc = a.in[0][i];
    for (int k = 1; k < a.count; ++k) acc += a.in[k][i];
    out[i] = acc;
  }
}

// ---- cos_sim -----------------------------------------------------------------------------------

/// One warp per row: the three dot products of the row in lane-strided order, then shuffle trees.
/// A broadcast Y's norm is recomputed by every warp in the same order, so all agree exactly.
template <class T>
__global__ void CosSimRows(const T* x, const T* y, T* out, T* xnorm, T* ynorm, int64_t n, int64_t d, bool bcast) {
  using A = Acc<T>;
  const int lane = threadIdx.x % 32;
  const int64_t step = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < n; i += step) {
    const T* xr = x + i * d;
    const T* yr = bcast ? y : y + i * d;
    A xx = 0, yy = 0, xy = 0;
    for (int64_t k = lane; k < d; k += 32) {
      const A a = xr[k], b = yr[k];
      xx += a * a;
      yy += b * b;
      xy += a * b;
    }
    xx = WarpSum(xx);
    yy = WarpSum(yy);
    xy = WarpSum(xy);
    if (lane == 0) {
      const T xn = sqrt(static_cast<T>(xx)), yn = sqrt(static_cast<T>(yy));
      if (xnorm != nullptr) xnorm[i] = xn;
      if (ynorm != nullptr && (!bcast || i == 0)) ynorm[bcast ? 0 : i] = yn;
      out[i] = static_cast<T>(xy) / (xn * yn);
    }
  }
}

/// dA = g (B / (|A| |B|) - z A / |A|^2) element-wise, for A = X (kDX) or Y; B broadcast when bcast
/// (only X's gradient then: Y's is a reduction).
template <class T, bool kDX>
__global__ void CosSimGradRows(const CosSimGradInputs<T> in, T* grad) {
  const int64_t total = in.n * in.d;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t i = e / in.d, j = e - i * in.d;
    const T yn = in.bcast ? in.ynorm[0] : in.ynorm[i];
    const T xv = in.x[e];
    const T yv = in.bcast ? in.y[j] : in.y[e];
    const T g = in.dout[i], z = in.out[i];
    if (kDX) {
      const T a = g / (in.xnorm[i] * yn), c = g * z / (in.xnorm[i] * in.xnorm[i]);
      grad[e] = a * yv - c * xv;
    } else {
      const T a = g / (in.xnorm[i] * yn), c = g * z / (yn * yn);
      grad[e] = a * xv - c * yv;
    }
  }
}

/// sum_i dOut_i * Out_i (operand 0 = the row).
template <class T>
struct GzTerm {
  const T* dout;
  const T* out;
  template <class I>
  __device__ Acc<T> operator()(const I (&off)[1]) const {
    return static_cast<Acc<T>>(dout[off[0]] * out[off[0]]);
  }
};

template <class A>
struct StoreAcc {
  A* dst;
  __device__ void operator()(int64_t, A total) const { *dst = total; }
};

/// The broadcast Y's gradient, column j: sum_i (g_i / (|x_i| |y|)) x_ij (operands {x, row}).
template <class T>
struct DyTerm {
  CosSimGradInputs<T> in;
  template <class I>
  __device__ Acc<T> operator()(const I (&off)[2]) const {
    const T a = in.dout[off[1]] / (in.xnorm[off[1]] * in.ynorm[0]);
    return static_cast<Acc<T>>(a * in.x[off[0]]);
  }
};

/// dY_j = column sum - (gz / |y|^2) y_j, gz from the first reduction.
template <class T>
struct StoreDy {
  const T* y;
  const T* ynorm;
  const Acc<T>* gz;
  T* dy;
  __device__ void operator()(int64_t j, Acc<T> total) const {
    const T c = static_cast<T>(*gz) / (ynorm[0] * ynorm[0]);
    dy[j] = static_cast<T>(total) - c * y[j];
  }
};

}  // namespace

template <class T>
cudaError_t Scale(const T* x, T* y, int64_t n, T scale, T bias, bool bias_after_scale, const void* scale_ptr,
                  ScalarType scale_type, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  ScaleKernel<T><<<Blocks(n), kThreads, 0, s>>>(x, y, n, scale, bias, bias_after_scale, scale_ptr, scale_type);
  return cudaGetLastError();
}

template <class T>
cudaError_t Sum(const T* const* inputs, int count, T* out, int64_t n, T* scratch, cudaStream_t s) {
  if (n <= 0 || count <= 0) return cudaSuccess;
  // Pass p adds the next inputs onto the running sum of the previous passes (kept in scratch), so
  // the additions happen in exactly the CPU's left-to-right order. Only the last pass writes out:
  // earlier passes may not overwrite an input that aliases out before it is read.
  int next = 0;
  bool first = true;
  while (next < count) {
    SumInputs<T> a{};
    a.count = 0;
    if (!first) a.in[a.count++] = scratch;
    while (a.count < kSumMaxInputs && next < count) a.in[a.count++] = inputs[next++];
    T* dst = next == count ? out : scratch;
    SumKernel<T><<<Blocks(n), kThreads, 0, s>>>(a, n, dst);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    first = false;
  }
  return cudaSuccess;
}

template <class T>
cudaError_t Square(const T* x, T* y, int64_t n, cudaStream_t s) {
  return ForEach(s, n, [=] __device__(int64_t i) { y[i] = x[i] * x[i]; });
}

template <class T>
cudaError_t SquareGrad(const T* x, const T* dout, T* dx, int64_t n, cudaStream_t s) {
  return ForEach(s, n, [=] __device__(int64_t i) { dx[i] = T(2) * x[i] * dout[i]; });
}

template <class T>
cudaError_t CosSimForward(const T* x, const T* y, T* out, T* xnorm, T* ynorm, int64_t n, int64_t d, bool bcast,
                          cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  const int64_t blocks = CeilDiv(n * 32, kThreads);
  CosSimRows<T><<<static_cast<unsigned>(blocks > 132 * 32 ? 132 * 32 : blocks), kThreads, 0, s>>>(x, y, out, xnorm,
                                                                                                  ynorm, n, d, bcast);
  return cudaGetLastError();
}

template <class T>
cudaError_t CosSimGrad(const CosSimGradInputs<T>& in, T* dx, T* dy, void* scratch, cudaStream_t s) {
  const int64_t total = in.n * in.d;
  if (dx != nullptr && total > 0) {
    CosSimGradRows<T, true><<<Blocks(total), kThreads, 0, s>>>(in, dx);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  if (dy == nullptr || total <= 0) return cudaSuccess;
  if (!in.bcast) {
    CosSimGradRows<T, false><<<Blocks(total), kThreads, 0, s>>>(in, dy);
    return cudaGetLastError();
  }
  // Broadcast Y: gz = sum_i g_i z_i into scratch[0], then the column sums (partials after it).
  using A = Acc<T>;
  A* gz = static_cast<A*>(scratch);
  A* partials = gz + 1;
  ReduceIndex<1> rows;  // one target; the n rows reduced, innermost
  rows.reduced.rank = 1;
  rows.reduced.dims[0] = in.n;
  rows.reduced.strides[0][0] = 1;
  rows.m = 1;
  rows.r = in.n;
  rows.inner_reduced = true;
  cudaError_t e = Reduce(rows, CosSimGzPlan(in.n), partials, GzTerm<T>{in.dout, in.out}, StoreAcc<A>{gz}, s);
  if (e != cudaSuccess) return e;
  ReduceIndex<2> cols;  // targets: the d columns (x stride 1, row stride 0); reduced: the n rows
  cols.kept.rank = 1;
  cols.kept.dims[0] = in.d;
  cols.kept.strides[0][0] = 1;
  cols.kept.strides[1][0] = 0;
  cols.reduced.rank = 1;
  cols.reduced.dims[0] = in.n;
  cols.reduced.strides[0][0] = in.d;
  cols.reduced.strides[1][0] = 1;
  cols.m = in.d;
  cols.r = in.n;
  cols.inner_reduced = false;
  return Reduce(cols, CosSimDyPlan(in.n, in.d), partials, DyTerm<T>{in}, StoreDy<T>{in.y, in.ynorm, gz, dy}, s);
}

#define PC_INSTANTIATE_ALL_TYPES(T)                                                                        \
  template cudaError_t Scale<T>(const T*, T*, int64_t, T, T, bool, const void*, ScalarType, cudaStream_t); \
  template cudaError_t Sum<T>(const T* const*, int, T*, int64_t, T*, cudaStream_t);                        \
  template cudaError_t Square<T>(const T*, T*, int64_t, cudaStream_t);
PC_INSTANTIATE_ALL_TYPES(float)
PC_INSTANTIATE_ALL_TYPES(double)
PC_INSTANTIATE_ALL_TYPES(int32_t)
PC_INSTANTIATE_ALL_TYPES(int64_t)
#undef PC_INSTANTIATE_ALL_TYPES

#define PC_INSTANTIATE_FLOAT_TYPES(T)                                                                          \
  template cudaError_t SquareGrad<T>(const T*, const T*, T*, int64_t, cudaStream_t);                           \
  template cudaError_t CosSimForward<T>(const T*, const T*, T*, T*, T*, int64_t, int64_t, bool, cudaStream_t); \
  template cudaError_t CosSimGrad<T>(const CosSimGradInputs<T>&, T*, T*, void*, cudaStream_t);
PC_INSTANTIATE_FLOAT_TYPES(float)
PC_INSTANTIATE_FLOAT_TYPES(double)
#undef PC_INSTANTIATE_FLOAT_TYPES

}  // namespace paddlec::ops::cuda
