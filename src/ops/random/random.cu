// CUDA kernels of uniform_random and gaussian_random: the CPU's Philox stream (common/philox.h runs on
// the device), one counter block per thread in a grid-stride loop, mapped to values by random_map.h,
// whose maps a host test checks bit for bit against random.cc's kernels.
//
// Bit-identity with the CPU. Element i of draw `step` comes from the same 128 Philox bits on both
// sides, and uniform_random's map uses only operations IEEE 754 rounds correctly on both (integer to
// float conversions, products with powers of two, fma, float <-> double conversions) with the same
// contraction as the CPU build (random_map.h): uniform_random, float32 and float64, is bit-identical
// to the CPU's. gaussian_random also needs log, sin and cos, which are not correctly rounded on either
// side (glibc's within about 0.52 ulp, CUDA's within 1 to 2 ulp), so a Box-Muller value may differ
// from the CPU's in the last bit of its double; a float32 output then differs only when it lies
// within that ulp of a float rounding boundary (about 2^-28 of the elements), a float64 output may
// differ in its last bit.
#include "common/cuda_device.cuh"
#include "random/random_cuda.h"
#include "random/random_map.h"

namespace paddlec::ops::cuda {
namespace {

template <class T>
__global__ void UniformKernel(T* __restrict__ p, int64_t n, uint64_t key, uint64_t step, double lo, double span, T hi,
                              T below_hi, int64_t diag_num, int64_t diag_step, T diag_val) {
  constexpr int kPer = random_map::kPerBlock<T>;
  const Philox rng(key);
  const int64_t blocks = (n + kPer - 1) / kPer;
  for (int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; q < blocks;
       q += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const auto w = rng.Block(step, static_cast<uint64_t>(q));
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t i = q * kPer + j;
      if (i >= n) break;
      const T v = random_map::UniformValue<T>(random_map::UnitAt<T>(w, j), lo, span, hi, below_hi);
      p[i] = random_map::OnDiagonal(i, diag_num, diag_step) ? diag_val : v;
    }
  }
}

template <class T>
__global__ void GaussianKernel(T* __restrict__ p, int64_t n, uint64_t key, uint64_t step, double mean, double std,
                               double r_floor) {
  const Philox rng(key);
  const int64_t pairs = (n + 1) / 2;
  for (int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; q < pairs;
       q += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    T z0, z1;
    random_map::GaussianPair<T>(rng.Block(step, static_cast<uint64_t>(q)), mean, std, r_floor, &z0, &z1);
    p[2 * q] = z0;
    if (2 * q + 1 < n) p[2 * q + 1] = z1;
  }
}

}  // namespace

template <class T>
cudaError_t Uniform(T* p, int64_t n, uint64_t key, uint64_t step, double lo, double span, T hi, T below_hi,
                    int64_t diag_num, int64_t diag_step, T diag_val, cudaStream_t s) {
  constexpr int kPer = random_map::kPerBlock<T>;
  if (n <= 0) return cudaSuccess;
  const int64_t blocks = (n + kPer - 1) / kPer;
  UniformKernel<T>
      <<<Blocks(blocks), kThreads, 0, s>>>(p, n, key, step, lo, span, hi, below_hi, diag_num, diag_step, diag_val);
  return cudaGetLastError();
}

template <class T>
cudaError_t Gaussian(T* p, int64_t n, uint64_t key, uint64_t step, double mean, double std, double r_floor,
                     cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  GaussianKernel<T><<<Blocks((n + 1) / 2), kThreads, 0, s>>>(p, n, key, step, mean, std, r_floor);
  return cudaGetLastError();
}

#define PC_INSTANTIATE(T)                                                                                     \
  template cudaError_t Uniform<T>(T*, int64_t, uint64_t, uint64_t, double, double, T, T, int64_t, int64_t, T, \
                                  cudaStream_t);                                                              \
  template cudaError_t Gaussian<T>(T*, int64_t, uint64_t, uint64_t, double, double, double, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
#undef PC_INSTANTIATE

}  // namespace paddlec::ops::cuda
