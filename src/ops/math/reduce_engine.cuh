// The math family's deterministic reduction on the GPU, shared by its .cu files (device code only;
// no paddlec headers): sums f(offsets) over the contributions of every target element as a
// ReducePlan (math_cuda_index.h) lays them out, then hands each total to w(j, total).
//
// Determinism: every thread adds its contributions in increasing order, warps and blocks combine
// lanes with fixed shuffle trees (cuda_device.cuh), and chunk partials are added in chunk order by a
// second pass. No atomics: the result depends only on the plan, which depends only on the shape.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/cuda_device.cuh"
#include "math/math_cuda_index.h"

namespace paddlec::ops::cuda {

/// Accumulator of a sum of T: float sums run in double (long float32 reductions such as a mean over
/// millions of elements then lose no more than their final rounding); integers wrap as on the CPU.
template <class T>
struct AccOf {
  using type = T;
};
template <>
struct AccOf<float> {
  using type = double;
};
template <class T>
using Acc = typename AccOf<T>::type;

namespace reduce_detail {

inline constexpr int64_t kMaxBlocks = 132 * 32;

__device__ __forceinline__ int64_t Min64(int64_t a, int64_t b) { return a < b ? a : b; }

template <class A, class W>
__device__ __forceinline__ void Emit(int64_t groups, int64_t m, int64_t g, int64_t j, A acc, A* partials, const W& w) {
  if (groups == 1)
    w(j, acc);
  else
    partials[g * m + j] = acc;
}

/// Rows, one warp per chunk: lane l adds contributions begin + l, begin + l + 32, ...
template <class I, int N, class A, class F, class W>
__global__ void RowsWarp(const __grid_constant__ ReduceIndex<N> idx, int64_t groups, int64_t chunk, A* partials, F f,
                         W w) {
  const int lane = threadIdx.x % 32;
  const int64_t units = idx.m * groups;
  const int64_t step = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  // u is the same for the 32 lanes of a warp, so the loop (and the shuffles in it) is warp-uniform.
  for (int64_t u = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; u < units; u += step) {
    const int64_t j = u / groups, g = u - j * groups;
    const int64_t begin = g * chunk, end = Min64(idx.r, begin + chunk);
    I base[N];
    idx.kept.Offsets(static_cast<I>(j), base);
    A acc = A(0);
    for (int64_t r = begin + lane; r < end; r += 32) {
      I off[N];
      idx.reduced.Offsets(static_cast<I>(r), off);
      PC_MATH_UNROLL
      for (int k = 0; k < N; ++k) off[k] += base[k];
      acc += f(off);
    }
    acc = WarpSum(acc);
    if (lane == 0) Emit(groups, idx.m, g, j, acc, partials, w);
  }
}

/// Rows, one block per chunk (long chunks): thread t adds begin + t, begin + t + blockDim, ...
template <class I, int N, class A, class F, class W>
__global__ void RowsBlock(const __grid_constant__ ReduceIndex<N> idx, int64_t groups, int64_t chunk, A* partials, F f,
                          W w) {
  const int64_t units = idx.m * groups;
  for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {  // block-uniform
    const int64_t j = u / groups, g = u - j * groups;
    const int64_t begin = g * chunk, end = Min64(idx.r, begin + chunk);
    I base[N];
    idx.kept.Offsets(static_cast<I>(j), base);
    A acc = A(0);
    for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x) {
      I off[N];
      idx.reduced.Offsets(static_cast<I>(r), off);
      PC_MATH_UNROLL
      for (int k = 0; k < N; ++k) off[k] += base[k];
      acc += f(off);
    }
    acc = BlockSum(acc);  // ends with a barrier: safe to call again in the next iteration
    if (threadIdx.x == 0) Emit(groups, idx.m, g, j, acc, partials, w);
  }
}

/// Columns: thread j adds its chunk (blockIdx.y) of contributions in order; neighbouring threads
/// take neighbouring targets, so their reads are adjacent in memory.
template <class I, int N, class A, class F, class W>
__global__ void Cols(const __grid_constant__ ReduceIndex<N> idx, int64_t groups, int64_t chunk, A* partials, F f, W w) {
  const int64_t g = blockIdx.y;
  const int64_t begin = g * chunk, end = Min64(idx.r, begin + chunk);
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < idx.m;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    I base[N];
    idx.kept.Offsets(static_cast<I>(j), base);
    A acc = A(0);
    for (int64_t r = begin; r < end; ++r) {
      I off[N];
      idx.reduced.Offsets(static_cast<I>(r), off);
      PC_MATH_UNROLL
      for (int k = 0; k < N; ++k) off[k] += base[k];
      acc += f(off);
    }
    Emit(groups, idx.m, g, j, acc, partials, w);
  }
}

/// Second pass: each target's partials added in chunk order.
template <class A, class W>
__global__ void Finish(int64_t m, int64_t groups, const A* partials, W w) {
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < m;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    A acc = partials[j];
    for (int64_t g = 1; g < groups; ++g) acc += partials[g * m + j];
    w(j, acc);
  }
}

inline unsigned CappedBlocks(int64_t b) { return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b)); }

template <class I, int N, class A, class F, class W>
cudaError_t Launch(const ReduceIndex<N>& idx, const ReducePlan& p, A* partials, F f, W w, cudaStream_t s) {
  const int64_t units = idx.m * p.groups;
  if (!p.rows) {
    const dim3 grid(CappedBlocks(CeilDiv(idx.m, kThreads)), static_cast<unsigned>(p.groups));
    Cols<I, N, A, F, W><<<grid, kThreads, 0, s>>>(idx, p.groups, p.chunk, partials, f, w);
  } else if (p.block) {
    RowsBlock<I, N, A, F, W><<<CappedBlocks(units), kThreads, 0, s>>>(idx, p.groups, p.chunk, partials, f, w);
  } else {
    RowsWarp<I, N, A, F, W>
        <<<CappedBlocks(CeilDiv(units * 32, kThreads)), kThreads, 0, s>>>(idx, p.groups, p.chunk, partials, f, w);
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || p.groups == 1) return e;
  Finish<A, W><<<CappedBlocks(CeilDiv(idx.m, kThreads)), kThreads, 0, s>>>(idx.m, p.groups, partials, w);
  return cudaGetLastError();
}

}  // namespace reduce_detail

/// Runs a reduction: for every target j in [0, idx.m), w(j, sum over r of f(offsets of (j, r))),
/// with f(const I (&off)[N]) -> A templated on the index type I and w(int64_t j, A total).
/// `partials` holds plan.scratch_elems values of A (may be null when that is 0). The plan must
/// come from PlanReduce(idx.m, idx.r, idx.inner_reduced) (any plan whose chunks cover r is correct).
template <class A, int N, class F, class W>
cudaError_t Reduce(const ReduceIndex<N>& idx, const ReducePlan& plan, A* partials, F f, W w, cudaStream_t s) {
  if (idx.m <= 0) return cudaSuccess;
  // 32-bit index arithmetic when every target index, contribution index and operand offset fits
  // (operands are at most as large as the walked domain m * r).
  const bool narrow = idx.m <= 0xFFFFFFFFll && idx.m * idx.r <= 0xFFFFFFFFll;
  return narrow ? reduce_detail::Launch<uint32_t>(idx, plan, partials, f, w, s)
                : reduce_detail::Launch<int64_t>(idx, plan, partials, f, w, s);
}

}  // namespace paddlec::ops::cuda
