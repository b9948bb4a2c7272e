// Device-side helpers for the .cu files: launch shapes, grid-stride loops, warp reductions.
// Deliberately free of paddlec's host headers (fmt and protobuf do not compile under nvcc's C++20
// front end); kernels talk to the host side through plain launcher functions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace paddlec::ops::cuda {

inline constexpr int kThreads = 256;

/// Blocks for n elements with grid-stride loops: enough to fill the GPU, never more than needed.
inline unsigned Blocks(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 132 * 32 ? 132 * 32 : b));
}

template <class F>
__global__ void ForEachKernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    f(i);
}

/// Runs f(i) for i in [0, n) on `stream`; returns the launch error (never waits for the GPU).
template <class F>
cudaError_t ForEach(cudaStream_t stream, int64_t n, F f) {
  if (n <= 0) return cudaSuccess;
  ForEachKernel<<<Blocks(n), kThreads, 0, stream>>>(n, f);
  return cudaGetLastError();
}

template <class T>
__device__ T WarpMax(T v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <class T>
__device__ T WarpSum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Sum over a block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
template <class T>
__device__ T BlockSum(T v) {
  __shared__ T partial[32];
  v = WarpSum(v);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) / 32;
  T total = lane < warps ? partial[lane] : T(0);
  total = WarpSum(total);
  __syncthreads();
  return total;
}

}  // namespace paddlec::ops::cuda
