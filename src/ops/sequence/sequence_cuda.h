// Launchers of the sequence ops' CUDA kernels (sequence.cu), called by sequence_cuda.cc. Plain
// types only: the .cu file includes no paddlec headers. Offsets and row maps are device arrays the
// host side built from the LoD.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace paddlec::ops::cuda {

/// Pools each of `n` sequences (offsets[n + 1]) of x [rows, w] into out [n, w]; `type` is
/// sequence::PoolType's value; index (may be null) gets MAX's row.
template <class T>
cudaError_t SequencePool(const T* x, const int64_t* offsets, int64_t n, int64_t w, int type, T pad_value, T* out,
                         int32_t* index, cudaStream_t s);
/// dx [rows, w] (zeroed here) from dout [n, w].
template <class T>
cudaError_t SequencePoolGrad(const T* dout, const int32_t* index, const int64_t* offsets, int64_t n, int64_t rows,
                             int64_t w, int type, T* dx, cudaStream_t s);
template <class T>
cudaError_t SequenceSoftmax(const T* x, const int64_t* offsets, int64_t n, T* y, cudaStream_t s);
template <class T>
cudaError_t SequenceSoftmaxGrad(const T* y, const T* dy, const int64_t* offsets, int64_t n, T* dx, cudaStream_t s);
/// out[r, :] = in[map[r], :], or the padding (pad[0] or pad[:w], pad_numel 1 or w; zeros when pad is
/// null) where map[r] < 0.
template <class T>
cudaError_t GatherRows(const T* in, const int64_t* map, int64_t rows, int64_t w, const T* pad, int64_t pad_numel,
                       T* out, cudaStream_t s);
/// out (out_rows x w, zeroed here) [map[r], :] += in[r, :].
template <class T>
cudaError_t ScatterAddRows(const T* in, const int64_t* map, int64_t rows, int64_t w, int64_t out_rows, T* out,
                           cudaStream_t s);

}  // namespace paddlec::ops::cuda
