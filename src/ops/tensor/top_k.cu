// CUDA kernels of top_k_v2 and its gradient, and of arg_max.
//
// Selection: a group of G threads per line (a warp when the line has at most 1024 elements, a
// 256-thread block otherwise) runs k passes; pass t finds the best element that ranks strictly after
// the winner of pass t-1 in the total order (value, then lower index; NaN above every number), with a
// per-thread scan and a group arg-max. Every pass reads the line once, so a line costs k * n reads:
// meant for small k (the common top-1/top-5); large k works but is slow (k = n = 10^4 reads 10^8
// elements per line). The order is total, so the result is deterministic and equals the CPU's.
// sorted: pass t writes its winner at position t. Unsorted: the passes only find the k-th winner;
// one more pass keeps every element ranking at or before it and writes them in index order, placed
// by a ballot prefix count. arg_max is one such pass (k = 1) for lines along the last axis, and a
// sequential scan per thread (coalesced across threads) for lines along an outer axis.
#include "common/cuda_device.cuh"
#include "tensor/tensor_cuda.h"

namespace paddlec::ops::cuda {
namespace {

using tensor_index::RankBefore;

constexpr unsigned kFull = 0xffffffffu;

template <class T>
struct Cand {
  T v;
  int64_t i;  // -1: no candidate
};

/// a is a better candidate than b.
template <class T>
__device__ bool Better(const Cand<T>& a, const Cand<T>& b, bool largest) {
  if (a.i < 0) return false;
  if (b.i < 0) return true;
  return RankBefore(a.v, a.i, b.v, b.i, largest);
}

/// The best candidate of the group of G threads (G = 32: a warp; G = kThreads: the block); every
/// thread of the group gets it. `warp_best` is shared scratch of kThreads / 32 entries.
template <class T, int G>
__device__ Cand<T> GroupBest(Cand<T> c, bool largest, Cand<T>* warp_best) {
  for (int o = 16; o > 0; o >>= 1) {
    Cand<T> other{__shfl_xor_sync(kFull, c.v, o), __shfl_xor_sync(kFull, c.i, o)};
    if (Better(other, c, largest)) c = other;
  }
  if constexpr (G == 32) {
    return c;
  } else {
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) warp_best[warp] = c;
    __syncthreads();
    Cand<T> best = warp_best[0];
    for (int w = 1; w < G / 32; ++w)
      if (Better(warp_best[w], best, largest)) best = warp_best[w];
    __syncthreads();  // warp_best is reused by the next call
    return best;
  }
}

/// For a flag per thread of the group: the number of set flags at lower lanes (the thread's rank)
/// and, in *total, over the whole group. `warp_count` is shared scratch of kThreads / 32 ints.
template <int G>
__device__ int GroupRank(bool flag, int* total, int* warp_count) {
  const unsigned mask = __ballot_sync(kFull, flag);
  const int lane = threadIdx.x % 32;
  const int in_warp = __popc(mask & ((1u << lane) - 1u));
  if constexpr (G == 32) {
    *total = __popc(mask);
    return in_warp;
  } else {
    const int warp = threadIdx.x / 32;
    if (lane == 0) warp_count[warp] = __popc(mask);
    __syncthreads();
    int before = 0, all = 0;
    for (int w = 0; w < G / 32; ++w) {
      before += w < warp ? warp_count[w] : 0;
      all += warp_count[w];
    }
    __syncthreads();
    *total = all;
    return before + in_warp;
  }
}

template <class T, int G>
__global__ void TopKKernel(const T* __restrict__ x, T* __restrict__ out, int64_t* __restrict__ indices, int64_t lines,
                           int64_t n, int64_t inner, int64_t k, bool largest, bool sorted) {
  constexpr int kGroups = kThreads / G;  // lines per block
  __shared__ Cand<T> warp_best[kThreads / 32];
  __shared__ int warp_count[kThreads / 32];
  const int lane = threadIdx.x % G;
  // `line` is uniform over each group, so the group's shuffles and barriers see all its threads.
  for (int64_t line = blockIdx.x * static_cast<int64_t>(kGroups) + threadIdx.x / G; line < lines;
       line += static_cast<int64_t>(gridDim.x) * kGroups) {
    const T* src = x + tensor_index::LineBase(line, n, inner);
    const int64_t obase = tensor_index::LineBase(line, k, inner);
    Cand<T> prev{T(), -1};
    for (int64_t t = 0; t < k; ++t) {
      Cand<T> best{T(), -1};
      for (int64_t j = lane; j < n; j += G) {
        const Cand<T> c{src[j * inner], j};
        if (prev.i >= 0 && !RankBefore(prev.v, prev.i, c.v, c.i, largest)) continue;  // already taken
        if (Better(c, best, largest)) best = c;
      }
      best = GroupBest<T, G>(best, largest, warp_best);
      if (sorted && lane == 0) {
        out[obase + t * inner] = best.v;
        indices[obase + t * inner] = best.i;
      }
      prev = best;
    }
    if (!sorted) {
      // prev is the k-th winner: keep what ranks at or before it, in index order.
      int64_t written = 0;
      for (int64_t j0 = 0; j0 < n; j0 += G) {  // uniform trip count over the group
        const int64_t j = j0 + lane;
        T v = T();
        bool keep = false;
        if (j < n) {
          v = src[j * inner];
          keep = j == prev.i || RankBefore(v, j, prev.v, prev.i, largest);
        }
        int total = 0;
        const int rank = GroupRank<G>(keep, &total, warp_count);
        if (keep) {
          out[obase + (written + rank) * inner] = v;
          indices[obase + (written + rank) * inner] = j;
        }
        written += total;
      }
    }
  }
}

template <class T, int G>
cudaError_t LaunchTopK(const T* x, T* out, int64_t* indices, int64_t lines, int64_t n, int64_t inner, int64_t k,
                       bool largest, bool sorted, cudaStream_t s) {
  constexpr int kGroups = kThreads / G;
  int64_t blocks = (lines + kGroups - 1) / kGroups;
  if (blocks > 132 * 64) blocks = 132 * 64;
  TopKKernel<T, G>
      <<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(x, out, indices, lines, n, inner, k, largest, sorted);
  return cudaGetLastError();
}

/// arg_max of lines along the last axis: a group of G threads per line, one GroupBest pass.
template <class T, class I, int G>
__global__ void ArgMaxGroup(const T* __restrict__ x, I* __restrict__ out, int64_t lines, int64_t n) {
  constexpr int kGroups = kThreads / G;
  __shared__ Cand<T> warp_best[kThreads / 32];
  const int lane = threadIdx.x % G;
  for (int64_t line = blockIdx.x * static_cast<int64_t>(kGroups) + threadIdx.x / G; line < lines;
       line += static_cast<int64_t>(gridDim.x) * kGroups) {
    const T* src = x + line * n;
    Cand<T> best{T(), -1};
    for (int64_t j = lane; j < n; j += G) {
      const Cand<T> c{src[j], j};
      if (Better(c, best, true)) best = c;
    }
    best = GroupBest<T, G>(best, true, warp_best);
    if (lane == 0) out[line] = static_cast<I>(best.i);
  }
}

/// arg_max of lines along an outer axis: one thread per line, adjacent threads on adjacent lines.
template <class T, class I>
__global__ void ArgMaxThread(const T* __restrict__ x, I* __restrict__ out, int64_t lines, int64_t n, int64_t inner) {
  for (int64_t line = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; line < lines;
       line += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const T* src = x + tensor_index::LineBase(line, n, inner);
    T best = src[0];
    int64_t bi = 0;
    for (int64_t j = 1; j < n; ++j) {
      const T v = src[j * inner];
      if (RankBefore(v, j, best, bi, true)) {
        best = v;
        bi = j;
      }
    }
    out[line] = static_cast<I>(bi);
  }
}

}  // namespace

template <class T, class I>
cudaError_t ArgMax(const T* x, I* out, int64_t outer, int64_t n, int64_t inner, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0 || n <= 0) return cudaSuccess;
  if (inner > 1) {
    ArgMaxThread<T, I><<<Blocks(lines), kThreads, 0, s>>>(x, out, lines, n, inner);
  } else if (n <= 1024) {
    const int64_t blocks = (lines + kThreads / 32 - 1) / (kThreads / 32);
    ArgMaxGroup<T, I, 32>
        <<<static_cast<unsigned>(blocks < 132 * 64 ? blocks : 132 * 64), kThreads, 0, s>>>(x, out, lines, n);
  } else {
    ArgMaxGroup<T, I, kThreads>
        <<<static_cast<unsigned>(lines < 132 * 64 ? lines : 132 * 64), kThreads, 0, s>>>(x, out, lines, n);
  }
  return cudaGetLastError();
}

template <class T>
cudaError_t TopK(const T* x, T* out, int64_t* indices, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest,
                 bool sorted, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (lines == 0 || k <= 0) return cudaSuccess;
  if (k > n) return cudaErrorInvalidValue;  // the host checks first; never read past a line
  if (n <= 1024) return LaunchTopK<T, 32>(x, out, indices, lines, n, inner, k, largest, sorted, s);
  return LaunchTopK<T, kThreads>(x, out, indices, lines, n, inner, k, largest, sorted, s);
}

template <class T>
cudaError_t TopKGrad(const int64_t* indices, const T* dout, T* dx, int64_t outer, int64_t n, int64_t inner, int64_t k,
                     cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  cudaError_t err = cudaMemsetAsync(dx, 0, static_cast<size_t>(outer * n * inner) * sizeof(T), s);
  if (err != cudaSuccess) return err;
  // The indices of one line are distinct (top_k_v2 selects each element once), so no two threads
  // write the same element.
  return ForEach(s, outer * k * inner, [=] __device__(int64_t e) {
    const int64_t o = e / (k * inner), i = e % inner, j = indices[e];
    if (j >= 0 && j < n) dx[(o * n + j) * inner + i] = dout[e];
  });
}

#define PC_INSTANTIATE(T) \
  template cudaError_t TopK<T>(const T*, T*, int64_t*, int64_t, int64_t, int64_t, int64_t, bool, bool, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
PC_INSTANTIATE(int32_t)
PC_INSTANTIATE(int64_t)
#undef PC_INSTANTIATE
#define PC_INSTANTIATE_ARGMAX(T)                                                                        \
  template cudaError_t ArgMax<T, int32_t>(const T*, int32_t*, int64_t, int64_t, int64_t, cudaStream_t); \
  template cudaError_t ArgMax<T, int64_t>(const T*, int64_t*, int64_t, int64_t, int64_t, cudaStream_t);
PC_INSTANTIATE_ARGMAX(float)
PC_INSTANTIATE_ARGMAX(double)
PC_INSTANTIATE_ARGMAX(int32_t)
PC_INSTANTIATE_ARGMAX(int64_t)
#undef PC_INSTANTIATE_ARGMAX
template cudaError_t TopKGrad<float>(const int64_t*, const float*, float*, int64_t, int64_t, int64_t, int64_t,
                                     cudaStream_t);
template cudaError_t TopKGrad<double>(const int64_t*, const double*, double*, int64_t, int64_t, int64_t, int64_t,
                                      cudaStream_t);

}  // namespace paddlec::ops::cuda
