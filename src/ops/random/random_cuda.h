// Launchers of the random family's CUDA kernels (random.cu), in plain types.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace paddlec::ops::cuda {

/// The uniform map of random.cc's UniformKernel: p[i] = T(fma(u_i, span, lo)), moved to `below_hi`
/// when it rounds up to `hi` (span > 0), where u_i is element i of Philox draw `step` under `key`
/// (24 random bits for float, 53 for double). Then the diagonal: p[j * (diag_step + 1)] = diag_val
/// for j < diag_num. T: float or double.
template <class T>
cudaError_t Uniform(T* p, int64_t n, uint64_t key, uint64_t step, double lo, double span, T hi, T below_hi,
                    int64_t diag_num, int64_t diag_step, T diag_val, cudaStream_t s);

/// The Gaussian map of random.cc's GaussianKernel: elements 2q and 2q + 1 are the Box-Muller pair of
/// counter block q, p = T(fma(z, std, mean)). `r_floor` is sqrt(-2 log(1e-300)) as the host computes
/// it (used when u1 < 1e-300). T: float or double.
template <class T>
cudaError_t Gaussian(T* p, int64_t n, uint64_t key, uint64_t step, double mean, double std, double r_floor,
                     cudaStream_t s);

}  // namespace paddlec::ops::cuda
