// CUDA kernels of the broadcasting binary ops elementwise_{add,sub,mul,div,max,min} and their
// gradients. Out is always written at its own index by grid-stride loops; X and Y are read in
// place through a StridedIndex (never materialized). A gradient whose operand was broadcast is
// summed onto it by the deterministic reduction of reduce_engine.cuh.
#include <cuda_runtime.h>

#include "common/cuda_device.cuh"
#include "math/math_cuda.h"
#include "math/reduce_engine.cuh"

namespace paddlec::ops::cuda {
namespace {

// The functors of elementwise.cc, on the device: F the forward, DX / DY the partial derivative
// times d = dOut at one output position given x, y and o = Out. max/min send ties to X.
template <BinaryOp kOp>
struct Bin;
template <>
struct Bin<BinaryOp::kAdd> {
  static constexpr bool kUsesX = false, kUsesY = false, kUsesOut = false;
  template <class T>
  __device__ static T F(T a, T b) {
    return a + b;
  }
  template <class T>
  __device__ static T DX(T d, T, T, T) {
    return d;
  }
  template <class T>
  __device__ static T DY(T d, T, T, T) {
    return d;
  }
};
template <>
struct Bin<BinaryOp::kSub> {
  static constexpr bool kUsesX = false, kUsesY = false, kUsesOut = false;
  template <class T>
  __device__ static T F(T a, T b) {
    return a - b;
  }
  template <class T>
  __device__ static T DX(T d, T, T, T) {
    return d;
  }
  template <class T>
  __device__ static T DY(T d, T, T, T) {
    return -d;
  }
};
template <>
struct Bin<BinaryOp::kMul> {
  static constexpr bool kUsesX = true, kUsesY = true, kUsesOut = false;
  template <class T>
  __device__ static T F(T a, T b) {
    return a * b;
  }
  template <class T>
  __device__ static T DX(T d, T, T y, T) {
    return d * y;
  }
  template <class T>
  __device__ static T DY(T d, T x, T, T) {
    return d * x;
  }
};
template <>
struct Bin<BinaryOp::kDiv> {
  static constexpr bool kUsesX = false, kUsesY = true, kUsesOut = true;
  template <class T>
  __device__ static T F(T a, T b) {
    return a / b;
  }
  template <class T>
  __device__ static T DX(T d, T, T y, T) {
    return d / y;
  }
  template <class T>
  __device__ static T DY(T d, T, T y, T o) {
    return -d * o / y;
  }
};
template <>
struct Bin<BinaryOp::kMax> {
  static constexpr bool kUsesX = true, kUsesY = true, kUsesOut = false;
  template <class T>
  __device__ static T F(T a, T b) {
    return a > b ? a : b;
  }
  template <class T>
  __device__ static T DX(T d, T x, T y, T) {
    return x >= y ? d : T(0);
  }
  template <class T>
  __device__ static T DY(T d, T x, T y, T) {
    return x < y ? d : T(0);
  }
};
template <>
struct Bin<BinaryOp::kMin> {
  static constexpr bool kUsesX = true, kUsesY = true, kUsesOut = false;
  template <class T>
  __device__ static T F(T a, T b) {
    return a < b ? a : b;
  }
  template <class T>
  __device__ static T DX(T d, T x, T y, T) {
    return x <= y ? d : T(0);
  }
  template <class T>
  __device__ static T DY(T d, T x, T y, T) {
    return x > y ? d : T(0);
  }
};

/// Calls f(kOp) with kOp as a compile-time constant.
template <class F>
cudaError_t DispatchOp(BinaryOp op, F&& f) {
  switch (op) {
    case BinaryOp::kAdd:
      return f.template operator()<BinaryOp::kAdd>();
    case BinaryOp::kSub:
      return f.template operator()<BinaryOp::kSub>();
    case BinaryOp::kMul:
      return f.template operator()<BinaryOp::kMul>();
    case BinaryOp::kDiv:
      return f.template operator()<BinaryOp::kDiv>();
    case BinaryOp::kMax:
      return f.template operator()<BinaryOp::kMax>();
    case BinaryOp::kMin:
      return f.template operator()<BinaryOp::kMin>();
  }
  return cudaErrorInvalidValue;
}

/// Offsets are 32-bit when every index of the n-element walk fits (operands are no larger than Out).
bool Narrow(int64_t n) { return n <= 0xFFFFFFFFll; }

// ---- Forward ---------------------------------------------------------------------------------

template <BinaryOp kOp, class T>
__global__ void ForwardFlat(int64_t n, const T* x, const T* y, T* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    out[i] = Bin<kOp>::F(x[i], y[i]);
}

template <BinaryOp kOp, class T, class I>
__global__ void ForwardBroadcast(const __grid_constant__ StridedIndex<2> idx, int64_t n, const T* x, const T* y,
                                 T* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    I off[2];
    idx.Offsets(static_cast<I>(i), off);
    out[i] = Bin<kOp>::F(x[off[0]], y[off[1]]);
  }
}

template <class T>
__global__ void AnyZeroKernel(const T* y, int64_t n, int* flag) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    if (y[i] == T(0)) *flag = 1;  // every writer stores the same value: the race is benign
}

// ---- Backward --------------------------------------------------------------------------------

template <BinaryOp kOp, bool kDX, class T>
__device__ __forceinline__ T GradAt(const BinaryGradInputs<T>& in, int64_t o, int64_t xo, int64_t yo) {
  using B = Bin<kOp>;
  const T xv = B::kUsesX ? in.x[xo] : T(0);
  const T yv = B::kUsesY ? in.y[yo] : T(0);
  const T ov = B::kUsesOut ? in.out[o] : T(0);
  return kDX ? B::DX(in.dout[o], xv, yv, ov) : B::DY(in.dout[o], xv, yv, ov);
}

template <BinaryOp kOp, bool kDX, class T>
__global__ void GradFlat(const BinaryGradInputs<T> in, int64_t n, T* grad) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    grad[i] = GradAt<kOp, kDX>(in, i, i, i);
}

template <BinaryOp kOp, bool kDX, class T, class I>
__global__ void GradBroadcast(const __grid_constant__ StridedIndex<2> idx, const BinaryGradInputs<T> in, int64_t n,
                              T* grad) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    I off[2];
    idx.Offsets(static_cast<I>(i), off);
    grad[i] = GradAt<kOp, kDX>(in, i, off[0], off[1]);
  }
}

/// One contribution of a reduced gradient: operands {Out-shaped, X, Y}.
template <BinaryOp kOp, bool kDX, class T>
struct GradTerm {
  BinaryGradInputs<T> in;
  template <class I>
  __device__ Acc<T> operator()(const I (&off)[3]) const {
    return static_cast<Acc<T>>(GradAt<kOp, kDX>(in, off[0], off[1], off[2]));
  }
};

template <class T>
struct StoreCast {
  T* out;
  __device__ void operator()(int64_t j, Acc<T> total) const { out[j] = static_cast<T>(total); }
};

}  // namespace

template <class T>
cudaError_t BinaryForward(BinaryOp op, const T* x, const T* y, T* out, int64_t n, const StridedIndex<2>* bcast,
                          cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return DispatchOp(op, [&]<BinaryOp kOp>() {
    if (bcast == nullptr)
      ForwardFlat<kOp, T><<<Blocks(n), kThreads, 0, s>>>(n, x, y, out);
    else if (Narrow(n))
      ForwardBroadcast<kOp, T, uint32_t><<<Blocks(n), kThreads, 0, s>>>(*bcast, n, x, y, out);
    else
      ForwardBroadcast<kOp, T, int64_t><<<Blocks(n), kThreads, 0, s>>>(*bcast, n, x, y, out);
    return cudaGetLastError();
  });
}

template <class T>
cudaError_t AnyZero(const T* y, int64_t n, int* flag, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  AnyZeroKernel<T><<<Blocks(n), kThreads, 0, s>>>(y, n, flag);
  return cudaGetLastError();
}

template <class T>
cudaError_t BinaryGradDirect(BinaryOp op, bool dx, const BinaryGradInputs<T>& in, T* grad, int64_t n,
                             const StridedIndex<2>* bcast, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  return DispatchOp(op, [&]<BinaryOp kOp>() {
    auto launch = [&]<bool kDX>() {
      if (bcast == nullptr)
        GradFlat<kOp, kDX, T><<<Blocks(n), kThreads, 0, s>>>(in, n, grad);
      else if (Narrow(n))
        GradBroadcast<kOp, kDX, T, uint32_t><<<Blocks(n), kThreads, 0, s>>>(*bcast, in, n, grad);
      else
        GradBroadcast<kOp, kDX, T, int64_t><<<Blocks(n), kThreads, 0, s>>>(*bcast, in, n, grad);
      return cudaGetLastError();
    };
    return dx ? launch.template operator()<true>() : launch.template operator()<false>();
  });
}

template <class T>
cudaError_t BinaryGradReduce(BinaryOp op, bool dx, const BinaryGradInputs<T>& in, T* grad, const ReduceIndex<3>& idx,
                             const ReducePlan& plan, void* scratch, cudaStream_t s) {
  auto* partials = static_cast<Acc<T>*>(scratch);
  return DispatchOp(op, [&]<BinaryOp kOp>() {
    return dx ? Reduce(idx, plan, partials, GradTerm<kOp, true, T>{in}, StoreCast<T>{grad}, s)
              : Reduce(idx, plan, partials, GradTerm<kOp, false, T>{in}, StoreCast<T>{grad}, s);
  });
}

#define PC_INSTANTIATE_FORWARD(T)                                                                          \
  template cudaError_t BinaryForward<T>(BinaryOp, const T*, const T*, T*, int64_t, const StridedIndex<2>*, \
                                        cudaStream_t);
PC_INSTANTIATE_FORWARD(float)
PC_INSTANTIATE_FORWARD(double)
PC_INSTANTIATE_FORWARD(int32_t)
PC_INSTANTIATE_FORWARD(int64_t)
#undef PC_INSTANTIATE_FORWARD

template cudaError_t AnyZero<int32_t>(const int32_t*, int64_t, int*, cudaStream_t);
template cudaError_t AnyZero<int64_t>(const int64_t*, int64_t, int*, cudaStream_t);

#define PC_INSTANTIATE_GRAD(T)                                                                                    \
  template cudaError_t BinaryGradDirect<T>(BinaryOp, bool, const BinaryGradInputs<T>&, T*, int64_t,               \
                                           const StridedIndex<2>*, cudaStream_t);                                 \
  template cudaError_t BinaryGradReduce<T>(BinaryOp, bool, const BinaryGradInputs<T>&, T*, const ReduceIndex<3>&, \
                                           const ReducePlan&, void*, cudaStream_t);
PC_INSTANTIATE_GRAD(float)
PC_INSTANTIATE_GRAD(double)
#undef PC_INSTANTIATE_GRAD

}  // namespace paddlec::ops::cuda
