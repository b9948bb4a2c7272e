// CUDA kernels of the sequence ops. Sequences are short and many, so one thread takes one
// (sequence, column) pair and walks its rows in the CPU's order (same sums, bit for bit, for the
// pools). Row-moving ops (expand, pad, unpad, reverse) are one gather over a row map the host built
// from the LoD; their gradients the inverse gather or a scatter-add.
#include "common/cuda_device.cuh"
#include "sequence/sequence_cuda.h"

namespace paddlec::ops::cuda {
namespace {

// sequence::PoolType's values (sequence_slots.h).
enum : int { kSum, kAverage, kSqrt, kMax, kFirst, kLast };

template <class T>
__global__ void PoolKernel(const T* __restrict__ x, const int64_t* __restrict__ off, int64_t n, int64_t w, int type,
                           T pad, T* __restrict__ out, int32_t* __restrict__ index) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n * w;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t s = i / w, j = i % w, lo = off[s], hi = off[s + 1];
    T v = pad;
    int32_t at = -1;
    if (hi > lo) {
      if (type == kFirst) {
        v = x[lo * w + j], at = static_cast<int32_t>(lo);
      } else if (type == kLast) {
        v = x[(hi - 1) * w + j], at = static_cast<int32_t>(hi - 1);
      } else if (type == kMax) {
        v = x[lo * w + j], at = static_cast<int32_t>(lo);
        for (int64_t r = lo + 1; r < hi; ++r)
          if (x[r * w + j] > v) v = x[r * w + j], at = static_cast<int32_t>(r);
      } else {
        T sum = 0;
        for (int64_t r = lo; r < hi; ++r) sum += x[r * w + j];
        const double len = static_cast<double>(hi - lo);
        v = type == kAverage ? static_cast<T>(sum * (1.0 / len))
            : type == kSqrt  ? static_cast<T>(sum * (1.0 / sqrt(len)))
                             : sum;
      }
    }
    out[i] = v;
    if (index) index[i] = at;
  }
}

template <class T>
__global__ void PoolGradKernel(const T* __restrict__ dout, const int32_t* __restrict__ index,
                               const int64_t* __restrict__ off, int64_t n, int64_t w, int type, T* __restrict__ dx) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n * w;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t s = i / w, j = i % w, lo = off[s], hi = off[s + 1];
    if (hi == lo) continue;
    const T d = dout[i];
    if (type == kFirst) {
      dx[lo * w + j] = d;
    } else if (type == kLast) {
      dx[(hi - 1) * w + j] = d;
    } else if (type == kMax) {
      dx[static_cast<int64_t>(index[i]) * w + j] = d;
    } else {
      const double len = static_cast<double>(hi - lo);
      const T g = type == kAverage ? static_cast<T>(d * (1.0 / len))
                  : type == kSqrt  ? static_cast<T>(d * (1.0 / sqrt(len)))
                                   : d;
      for (int64_t r = lo; r < hi; ++r) dx[r * w + j] = g;
    }
  }
}

template <class T>
__global__ void SoftmaxKernel(const T* __restrict__ x, const int64_t* __restrict__ off, int64_t n, T* __restrict__ y) {
  for (int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; s < n;
       s += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t lo = off[s], hi = off[s + 1];
    if (hi == lo) continue;
    T m = x[lo];
    for (int64_t r = lo + 1; r < hi; ++r) m = x[r] > m ? x[r] : m;
    T sum = 0;
    for (int64_t r = lo; r < hi; ++r) sum += (y[r] = exp(x[r] - m));
    for (int64_t r = lo; r < hi; ++r) y[r] /= sum;
  }
}

template <class T>
__global__ void SoftmaxGradKernel(const T* __restrict__ y, const T* __restrict__ dy, const int64_t* __restrict__ off,
                                  int64_t n, T* __restrict__ dx) {
  for (int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; s < n;
       s += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t lo = off[s], hi = off[s + 1];
    T dot = 0;
    for (int64_t r = lo; r < hi; ++r) dot += y[r] * dy[r];
    for (int64_t r = lo; r < hi; ++r) dx[r] = y[r] * (dy[r] - dot);
  }
}

template <class T>
__global__ void GatherKernel(const T* __restrict__ in, const int64_t* __restrict__ map, int64_t rows, int64_t w,
                             const T* __restrict__ pad, int64_t pad_numel, T* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows * w;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t r = i / w, j = i % w, from = map[r];
    out[i] = from >= 0 ? in[from * w + j] : (pad ? pad[pad_numel == 1 ? 0 : j] : T(0));
  }
}

template <class T>
__global__ void ScatterAddKernel(const T* __restrict__ in, const int64_t* __restrict__ map, int64_t rows, int64_t w,
                                 T* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows * w;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t r = i / w, j = i % w;
    if (map[r] >= 0) atomicAdd(out + map[r] * w + j, in[i]);
  }
}

}  // namespace

template <class T>
cudaError_t SequencePool(const T* x, const int64_t* offsets, int64_t n, int64_t w, int type, T pad_value, T* out,
                         int32_t* index, cudaStream_t s) {
  if (n * w == 0) return cudaSuccess;
  PoolKernel<T><<<Blocks(n * w), kThreads, 0, s>>>(x, offsets, n, w, type, pad_value, out, index);
  return cudaGetLastError();
}

template <class T>
cudaError_t SequencePoolGrad(const T* dout, const int32_t* index, const int64_t* offsets, int64_t n, int64_t rows,
                             int64_t w, int type, T* dx, cudaStream_t s) {
  cudaError_t e = cudaMemsetAsync(dx, 0, sizeof(T) * rows * w, s);
  if (e != cudaSuccess || n * w == 0) return e;
  PoolGradKernel<T><<<Blocks(n * w), kThreads, 0, s>>>(dout, index, offsets, n, w, type, dx);
  return cudaGetLastError();
}

template <class T>
cudaError_t SequenceSoftmax(const T* x, const int64_t* offsets, int64_t n, T* y, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  SoftmaxKernel<T><<<Blocks(n), kThreads, 0, s>>>(x, offsets, n, y);
  return cudaGetLastError();
}

template <class T>
cudaError_t SequenceSoftmaxGrad(const T* y, const T* dy, const int64_t* offsets, int64_t n, T* dx, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  SoftmaxGradKernel<T><<<Blocks(n), kThreads, 0, s>>>(y, dy, offsets, n, dx);
  return cudaGetLastError();
}

template <class T>
cudaError_t GatherRows(const T* in, const int64_t* map, int64_t rows, int64_t w, const T* pad, int64_t pad_numel,
                       T* out, cudaStream_t s) {
  if (rows * w == 0) return cudaSuccess;
  GatherKernel<T><<<Blocks(rows * w), kThreads, 0, s>>>(in, map, rows, w, pad, pad_numel, out);
  return cudaGetLastError();
}

template <class T>
cudaError_t ScatterAddRows(const T* in, const int64_t* map, int64_t rows, int64_t w, int64_t out_rows, T* out,
                           cudaStream_t s) {
  cudaError_t e = cudaMemsetAsync(out, 0, sizeof(T) * out_rows * w, s);
  if (e != cudaSuccess || rows * w == 0) return e;
  ScatterAddKernel<T><<<Blocks(rows * w), kThreads, 0, s>>>(in, map, rows, w, out);
  return cudaGetLastError();
}

#define PC_SEQUENCE_INSTANTIATE(T)                                                                                     \
  template cudaError_t SequencePool<T>(const T*, const int64_t*, int64_t, int64_t, int, T, T*, int32_t*,               \
                                       cudaStream_t);                                                                  \
  template cudaError_t SequencePoolGrad<T>(const T*, const int32_t*, const int64_t*, int64_t, int64_t, int64_t, int,   \
                                           T*, cudaStream_t);                                                          \
  template cudaError_t SequenceSoftmax<T>(const T*, const int64_t*, int64_t, T*, cudaStream_t);                        \
  template cudaError_t SequenceSoftmaxGrad<T>(const T*, const T*, const int64_t*, int64_t, T*, cudaStream_t);          \
  template cudaError_t GatherRows<T>(const T*, const int64_t*, int64_t, int64_t, const T*, int64_t, T*, cudaStream_t); \
  template cudaError_t ScatterAddRows<T>(const T*, const int64_t*, int64_t, int64_t, int64_t, T*, cudaStream_t);
PC_SEQUENCE_INSTANTIATE(float)
PC_SEQUENCE_INSTANTIATE(double)

}  // namespace paddlec::ops::cuda
