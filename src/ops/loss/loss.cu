// CUDA kernels of the loss family.
//
// Line reductions (softmax, soft-label sums) run with a group of G threads per line: one thread when
// the class axis is strided (inner > 1: consecutive threads then read consecutive lines, coalesced),
// a warp for lines of up to 2048 classes, a 256-thread block beyond. Group reductions are xor
// butterflies plus a fixed-order combine of the warps, so results do not vary between runs.
// Gradients with hard labels are element-wise. No float atomics anywhere: every result is
// deterministic. Labels that are not valid classes are never used as indices (loss_cuda.h).
#include <type_traits>

#include "common/cuda_device.cuh"
#include "loss/loss_cuda.h"
#include "loss/loss_index.h"

namespace paddlec::ops::cuda {
namespace {

using loss_index::AxisIndex;
using loss_index::BadLabel;
using loss_index::TolerableLog;

constexpr unsigned kFull = 0xffffffffu;

template <class T>
__device__ T NaN() {
  return T(NAN);
}

struct SumOp {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return max(a, b);
  }
};
struct MinOp {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return min(a, b);
  }
};

/// G consecutive threads of a block working on one line (G = 1, 32 or kThreads).
template <int G>
struct Group {
  static constexpr int kPerBlock = kThreads / G;
  __device__ static int Lane() { return G == 1 ? 0 : static_cast<int>(threadIdx.x % G); }
  __device__ static int64_t First() { return blockIdx.x * static_cast<int64_t>(kPerBlock) + threadIdx.x / G; }
  __device__ static int64_t Stride() { return static_cast<int64_t>(gridDim.x) * kPerBlock; }
  /// op over the group; every thread of the group gets the result. `scratch`: kThreads / 32 entries
  /// of shared memory (G = kThreads only). All threads of the group must call it.
  template <class T, class Op>
  __device__ static T Reduce(T v, Op op, T* scratch) {
    if constexpr (G == 1) {
      return v;
    } else {
      for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFull, v, o));
      if constexpr (G == 32) {
        return v;
      } else {
        const int warp = threadIdx.x / 32;
        if (threadIdx.x % 32 == 0) scratch[warp] = v;
        __syncthreads();
        T r = scratch[0];
        for (int w = 1; w < G / 32; ++w) r = op(r, scratch[w]);
        __syncthreads();  // scratch is reused by the next reduction
        return r;
      }
    }
  }
  static unsigned Blocks(int64_t lines) {
    const int64_t b = (lines + kPerBlock - 1) / kPerBlock;
    return static_cast<unsigned>(b < 1 ? 1 : (b > 132 * 32 ? 132 * 32 : b));
  }
};

// ---- Label checks ---------------------------------------------------------------------------

template <class L>
__global__ void FindBadLabelKernel(const L* __restrict__ labels, int64_t count, int64_t classes, int64_t ignore_index,
                                   int64_t* report) {
  __shared__ int64_t scratch[kThreads / 32];
  int64_t first = count;  // none
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    if (BadLabel(static_cast<int64_t>(labels[i]), classes, ignore_index)) {
      first = i;  // a thread's indices increase: its first bad one is its smallest
      break;
    }
  first = Group<kThreads>::Reduce(first, MinOp{}, scratch);
  if (threadIdx.x == 0 && first < count) {
    report[0] = first;
    report[1] = static_cast<int64_t>(labels[first]);
  }
}

// ---- softmax_with_cross_entropy / cross_entropy -------------------------------------------------

/// One line per group: softmax (optional), then the loss. kSoft: L is T (a distribution per line).
template <class T, class L, int G>
__global__ void SoftmaxCrossEntropyKernel(const T* __restrict__ x, const L* __restrict__ label, T* __restrict__ sm,
                                          T* __restrict__ loss, int64_t lines, AxisIndex ax, int64_t ignore_index,
                                          bool use_softmax) {
  constexpr bool kSoft = std::is_floating_point_v<L>;
  using Grp = Group<G>;
  __shared__ T scratch[kThreads / 32];
  const int lane = Grp::Lane();
  const int64_t n = ax.n, st = ax.inner;
  // `line` is uniform over a group, and so is every branch below except the lane-0 writes.
  for (int64_t line = Grp::First(); line < lines; line += Grp::Stride()) {
    const int64_t base = ax.Base(line);
    int64_t l = 0;
    if constexpr (!kSoft) l = static_cast<int64_t>(label[line]);
    T out;
    if (n == 0) {  // no classes: every label is ignore_index unless it is bad
      out = kSoft || l == ignore_index ? T(0) : NaN<T>();
    } else if (use_softmax) {
      T m = -INFINITY;
      for (int64_t k = lane; k < n; k += G) m = max(m, x[base + k * st]);
      m = Grp::Reduce(m, MaxOp{}, scratch);
      T s = 0;
      for (int64_t k = lane; k < n; k += G) s += exp(x[base + k * st] - m);
      s = Grp::Reduce(s, SumOp{}, scratch);
      if (sm != nullptr)
        for (int64_t k = lane; k < n; k += G) sm[base + k * st] = exp(x[base + k * st] - m) / s;
      const T lse = log(s);
      if constexpr (kSoft) {
        T acc = 0;
        for (int64_t k = lane; k < n; k += G) acc += label[base + k * st] * (x[base + k * st] - (m + lse));
        out = -Grp::Reduce(acc, SumOp{}, scratch);
      } else {
        out = l == ignore_index ? T(0) : BadLabel(l, n, ignore_index) ? NaN<T>() : lse - (x[base + l * st] - m);
      }
    } else {
      if (sm != nullptr)
        for (int64_t k = lane; k < n; k += G) sm[base + k * st] = x[base + k * st];
      if constexpr (kSoft) {
        T acc = 0;
        for (int64_t k = lane; k < n; k += G) acc += label[base + k * st] * TolerableLog(x[base + k * st]);
        out = -Grp::Reduce(acc, SumOp{}, scratch);
      } else {
        out = l == ignore_index ? T(0) : BadLabel(l, n, ignore_index) ? NaN<T>() : -TolerableLog(x[base + l * st]);
      }
    }
    if (lane == 0) loss[line] = out;
  }
}

template <class T, class L, int G>
cudaError_t LaunchSoftmaxCrossEntropy(const T* x, const L* label, T* sm, T* loss, int64_t lines, AxisIndex ax,
                                      int64_t ignore_index, bool use_softmax, cudaStream_t s) {
  SoftmaxCrossEntropyKernel<T, L, G>
      <<<Group<G>::Blocks(lines), kThreads, 0, s>>>(x, label, sm, loss, lines, ax, ignore_index, use_softmax);
  return cudaGetLastError();
}

/// Soft labels with use_softmax: dx = (p * sum(label) - label) * dloss, one line per group.
template <class T, int G>
__global__ void SoftGradKernel(const T* __restrict__ p, const T* __restrict__ label, const T* __restrict__ dloss,
                               T* __restrict__ dx, int64_t lines, AxisIndex ax) {
  using Grp = Group<G>;
  __shared__ T scratch[kThreads / 32];
  const int lane = Grp::Lane();
  for (int64_t line = Grp::First(); line < lines; line += Grp::Stride()) {
    const int64_t base = ax.Base(line);
    T sum = 0;
    for (int64_t k = lane; k < ax.n; k += G) sum += label[base + k * ax.inner];
    sum = Grp::Reduce(sum, SumOp{}, scratch);
    const T d = dloss[line];
    for (int64_t k = lane; k < ax.n; k += G) {
      const int64_t e = base + k * ax.inner;
      dx[e] = (p[e] * sum - label[e]) * d;
    }
  }
}

/// The group size for lines of n elements with stride `inner`.
int GroupFor(int64_t n, int64_t inner) { return inner > 1 ? 1 : n <= 2048 ? 32 : kThreads; }

}  // namespace

template <class L>
cudaError_t FindBadLabel(const L* labels, int64_t count, int64_t classes, int64_t ignore_index, int64_t* report,
                         cudaStream_t s) {
  if (count <= 0) return cudaSuccess;
  FindBadLabelKernel<L><<<1, kThreads, 0, s>>>(labels, count, classes, ignore_index, report);
  return cudaGetLastError();
}

template <class T, class L>
cudaError_t SoftmaxCrossEntropy(const T* x, const L* label, T* softmax, T* loss, int64_t outer, int64_t n,
                                int64_t inner, int64_t ignore_index, bool use_softmax, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0) return cudaSuccess;
  const AxisIndex ax{n, inner};
  // A hard-label loss without softmax reads one element per line: one thread per line.
  const bool single = !std::is_floating_point_v<L> && !use_softmax && softmax == nullptr;
  switch (single ? 1 : GroupFor(n, inner)) {
    case 1:
      return LaunchSoftmaxCrossEntropy<T, L, 1>(x, label, softmax, loss, lines, ax, ignore_index, use_softmax, s);
    case 32:
      return LaunchSoftmaxCrossEntropy<T, L, 32>(x, label, softmax, loss, lines, ax, ignore_index, use_softmax, s);
    default:
      return LaunchSoftmaxCrossEntropy<T, L, kThreads>(x, label, softmax, loss, lines, ax, ignore_index, use_softmax,
                                                       s);
  }
}

template <class T, class L>
cudaError_t SoftmaxCrossEntropyGrad(const T* p, const L* label, const T* dloss, T* dx, int64_t outer, int64_t n,
                                    int64_t inner, int64_t ignore_index, bool use_softmax, cudaStream_t s) {
  const int64_t lines = outer * inner, total = lines * n;
  if (total == 0) return cudaSuccess;
  const AxisIndex ax{n, inner};
  if constexpr (std::is_floating_point_v<L>) {
    if (!use_softmax)  // -label * dloss / p, 0 where the label is 0 (the forward's 0 * log(0) = 0)
      return ForEach(s, total, [=] __device__(int64_t e) {
        const T lab = label[e];
        dx[e] = lab == T(0) ? T(0) : -lab * (dloss[ax.Line(e)] / p[e]);
      });
    switch (GroupFor(n, inner)) {
      case 1:
        SoftGradKernel<T, 1><<<Group<1>::Blocks(lines), kThreads, 0, s>>>(p, label, dloss, dx, lines, ax);
        break;
      case 32:
        SoftGradKernel<T, 32><<<Group<32>::Blocks(lines), kThreads, 0, s>>>(p, label, dloss, dx, lines, ax);
        break;
      default:
        SoftGradKernel<T, kThreads><<<Group<kThreads>::Blocks(lines), kThreads, 0, s>>>(p, label, dloss, dx, lines, ax);
    }
    return cudaGetLastError();
  } else {
    return ForEach(s, total, [=] __device__(int64_t e) {
      const int64_t line = ax.Line(e), k = ax.Class(e), l = static_cast<int64_t>(label[line]);
      T g;
      if (l == ignore_index) {
        g = T(0);
      } else if (BadLabel(l, n, ignore_index)) {
        g = NaN<T>();
      } else {
        const T d = dloss[line];
        if (use_softmax) {
          g = p[e] * d;  // the CPU's g = softmax * d, then g(l) -= d
          if (k == l) g -= d;
        } else {
          g = k == l ? -d / p[e] : T(0);
        }
      }
      dx[e] = g;
    });
  }
}

// ---- accuracy -------------------------------------------------------------------------------

namespace {

template <class I, class L>
__global__ void AccuracyKernel(const I* __restrict__ indices, const L* __restrict__ label, int64_t n, int64_t k,
                               float* acc, int32_t* correct, int32_t* total, int64_t* report) {
  __shared__ int64_t scratch[kThreads / 32];
  int64_t count = 0, first_bad = n;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int64_t l = static_cast<int64_t>(label[i]);
    if (l < 0) {
      first_bad = min(first_bad, i);
      continue;
    }
    // An int64 label beyond the range of int32 indices matches none of them (no truncation).
    if (static_cast<int64_t>(static_cast<I>(l)) != l) continue;
    const I* row = indices + i * k;
    for (int64_t j = 0; j < k; ++j)
      if (row[j] == static_cast<I>(l)) {
        ++count;  // a repeated index counts once
        break;
      }
  }
  count = Group<kThreads>::Reduce(count, SumOp{}, scratch);
  first_bad = Group<kThreads>::Reduce(first_bad, MinOp{}, scratch);
  if (threadIdx.x == 0) {
    *acc = n == 0 ? 0.0f : static_cast<float>(count) / static_cast<float>(n);
    *correct = static_cast<int32_t>(count);
    *total = static_cast<int32_t>(n);
    if (first_bad < n) {
      report[0] = first_bad;
      report[1] = static_cast<int64_t>(label[first_bad]);
    }
  }
}

// ---- squared_l2_norm ------------------------------------------------------------------------

/// Blocks of the first pass: a function of n only (never of the GPU), so the sum order is fixed.
int64_t NormBlocks(int64_t n) {
  const int64_t b = (n + kThreads * 8 - 1) / (kThreads * 8);
  return b < 1 ? 1 : (b > kNormPartials ? kNormPartials : b);
}

template <class T>
__global__ void NormPartialsKernel(const T* __restrict__ x, int64_t n, double* partials) {
  __shared__ double scratch[kThreads / 32];
  double acc = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const double v = x[i];
    acc += v * v;
  }
  acc = Group<kThreads>::Reduce(acc, SumOp{}, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <class T>
__global__ void NormFinalKernel(const double* __restrict__ partials, int64_t count, T* out) {
  __shared__ double scratch[kNormPartials / 32];
  double v = threadIdx.x < count ? partials[threadIdx.x] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0;
    for (int w = 0; w < kNormPartials / 32; ++w) total += scratch[w];
    out[0] = static_cast<T>(total);
  }
}

}  // namespace

template <class I, class L>
cudaError_t Accuracy(const I* indices, const L* label, int64_t n, int64_t k, float* acc, int32_t* correct,
                     int32_t* total, int64_t* report, cudaStream_t s) {
  AccuracyKernel<I, L><<<1, kThreads, 0, s>>>(indices, label, n, k, acc, correct, total, report);
  return cudaGetLastError();
}

template <class T>
cudaError_t SquaredL2Norm(const T* x, int64_t n, T* out, double* partials, cudaStream_t s) {
  const int64_t blocks = NormBlocks(n);
  NormPartialsKernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(x, n, partials);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  NormFinalKernel<T><<<1, kNormPartials, 0, s>>>(partials, blocks, out);
  return cudaGetLastError();
}

template <class T>
cudaError_t SquaredL2NormGrad(const T* x, const T* dout, T* dx, int64_t n, cudaStream_t s) {
  return ForEach(s, n, [=] __device__(int64_t i) { dx[i] = T(2) * dout[0] * x[i]; });
}

#define PC_LABELED(T, L)                                                                                               \
  template cudaError_t SoftmaxCrossEntropy<T, L>(const T*, const L*, T*, T*, int64_t, int64_t, int64_t, int64_t, bool, \
                                                 cudaStream_t);                                                        \
  template cudaError_t SoftmaxCrossEntropyGrad<T, L>(const T*, const L*, const T*, T*, int64_t, int64_t, int64_t,      \
                                                     int64_t, bool, cudaStream_t);
#define PC_FLOAT(T)                                                                    \
  PC_LABELED(T, int32_t)                                                               \
  PC_LABELED(T, int64_t)                                                               \
  PC_LABELED(T, T)                                                                     \
  template cudaError_t SquaredL2Norm<T>(const T*, int64_t, T*, double*, cudaStream_t); \
  template cudaError_t SquaredL2NormGrad<T>(const T*, const T*, T*, int64_t, cudaStream_t);
PC_FLOAT(float)
PC_FLOAT(double)
#undef PC_FLOAT
#undef PC_LABELED
template cudaError_t FindBadLabel<int32_t>(const int32_t*, int64_t, int64_t, int64_t, int64_t*, cudaStream_t);
template cudaError_t FindBadLabel<int64_t>(const int64_t*, int64_t, int64_t, int64_t, int64_t*, cudaStream_t);
#define PC_ACCURACY(I, L)                                                                                         \
  template cudaError_t Accuracy<I, L>(const I*, const L*, int64_t, int64_t, float*, int32_t*, int32_t*, int64_t*, \
                                      cudaStream_t);
PC_ACCURACY(int32_t, int32_t)
PC_ACCURACY(int32_t, int64_t)
PC_ACCURACY(int64_t, int32_t)
PC_ACCURACY(int64_t, int64_t)
#undef PC_ACCURACY

}  // namespace paddlec::ops::cuda
