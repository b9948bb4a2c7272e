// CUDA kernels of cumsum (and, reversed, its gradient). Lines of a scan along an outer axis are
// independent and adjacent in memory, so one thread scans each line, sequentially and in the CPU's
// order, with coalesced accesses across the threads of a warp. Long lines along the last axis take a
// block each: cub's block scan of 256 elements at a time, carrying the running total (a tree order
// within each chunk, so float sums may differ from the CPU's in the last bits).
#include <cub/block/block_scan.cuh>

#include "common/cuda_device.cuh"
#include "math/math_cuda.h"

namespace paddlec::ops::cuda {
namespace {

/// Lines along the last axis at least this long get a block each.
constexpr int64_t kBlockLine = 1024;

template <class T, bool kExclusive, bool kReverse>
__global__ void ScanPerThread(const T* __restrict__ x, T* __restrict__ y, int64_t lines, int64_t n, int64_t inner) {
  for (int64_t line = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; line < lines;
       line += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t base = (line / inner) * n * inner + line % inner;
    T acc = T(0);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = base + (kReverse ? n - 1 - k : k) * inner;
      const T v = x[i];
      if (kExclusive) {
        y[i] = acc;
        acc += v;
      } else {
        acc += v;
        y[i] = acc;
      }
    }
  }
}

template <class T, bool kExclusive, bool kReverse>
__global__ void ScanPerBlock(const T* __restrict__ x, T* __restrict__ y, int64_t lines, int64_t n) {
  using BlockScan = cub::BlockScan<T, kThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const T* xl = x + line * n;
    T* yl = y + line * n;
    T carry = T(0);
    for (int64_t c0 = 0; c0 < n; c0 += kThreads) {
      const int64_t k = c0 + threadIdx.x;
      const int64_t i = kReverse ? n - 1 - k : k;
      const T v = k < n ? xl[i] : T(0);
      T before, total;
      BlockScan(temp).ExclusiveSum(v, before, total);
      if (k < n) yl[i] = kExclusive ? carry + before : carry + (before + v);
      carry += total;
      __syncthreads();  // the next chunk reuses `temp`
    }
  }
}

template <class T, bool kExclusive, bool kReverse>
cudaError_t Launch(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t s) {
  const int64_t lines = outer * inner;
  if (inner == 1 && n >= kBlockLine) {
    const unsigned blocks = static_cast<unsigned>(lines < 132 * 16 ? lines : 132 * 16);
    ScanPerBlock<T, kExclusive, kReverse><<<blocks, kThreads, 0, s>>>(x, y, lines, n);
  } else {
    ScanPerThread<T, kExclusive, kReverse><<<Blocks(lines), kThreads, 0, s>>>(x, y, lines, n, inner);
  }
  return cudaGetLastError();
}

}  // namespace

template <class T>
cudaError_t Cumsum(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse,
                   cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  if (exclusive)
    return reverse ? Launch<T, true, true>(x, y, outer, n, inner, s) : Launch<T, true, false>(x, y, outer, n, inner, s);
  return reverse ? Launch<T, false, true>(x, y, outer, n, inner, s) : Launch<T, false, false>(x, y, outer, n, inner, s);
}

template cudaError_t Cumsum<float>(const float*, float*, int64_t, int64_t, int64_t, bool, bool, cudaStream_t);
template cudaError_t Cumsum<double>(const double*, double*, int64_t, int64_t, int64_t, bool, bool, cudaStream_t);
template cudaError_t Cumsum<int32_t>(const int32_t*, int32_t*, int64_t, int64_t, int64_t, bool, bool, cudaStream_t);
template cudaError_t Cumsum<int64_t>(const int64_t*, int64_t*, int64_t, int64_t, int64_t, bool, bool, cudaStream_t);

}  // namespace paddlec::ops::cuda
