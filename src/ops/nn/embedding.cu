// CUDA kernels of lookup_table_v2 and its gradient.
//
// Lookup: one thread per output element (consecutive threads copy consecutive columns of a row).
// Gradient, deterministic and free of atomics: the (key, position) pairs of the ids (key = the row,
// or vocab for the padding index and out-of-range ids) are radix-sorted with cub, which is stable, so
// every row's positions come out in increasing order; then one thread per (run start, column) adds
// its run's Out@GRAD values in that order, which is embedding.cc's order too (it adds position i
// into W@GRAD row ids[i] for i = 0, 1, ...), so the sums match the CPU's bit for bit.
#include <cub/device/device_radix_sort.cuh>

#include "common/cuda_device.cuh"
#include "nn/nn_cuda.h"

namespace paddlec::ops::cuda {

template <class T, class I>
cudaError_t EmbeddingLookup(const T* w, const I* ids, int64_t n, int64_t vocab, int64_t dim, int64_t padding_idx,
                            T* out, unsigned long long* bad_pos, cudaStream_t s) {
  // One thread per output element; with an empty embedding (dim 0) one per id, which still checks it.
  const int64_t width = dim > 0 ? dim : 1;
  return ForEach(s, n * width, [=] __device__(int64_t k) {
    int64_t i = k / width, j = k % width;
    int64_t id = static_cast<int64_t>(ids[i]);
    bool bad = !nn::IsPaddingId(id, padding_idx) && (id < 0 || id >= vocab);
    if (bad && j == 0) atomicMin(bad_pos, static_cast<unsigned long long>(i));
    if (j >= dim) return;
    // Zeros for the padding index, and defined contents for a bad id (the caller reports the error).
    out[i * dim + j] = (bad || nn::IsPaddingId(id, padding_idx)) ? T(0) : w[id * dim + j];
  });
}

cudaError_t EmbeddingSortScratchBytes(int64_t n, int64_t vocab, size_t* bytes) {
  *bytes = 0;
  if (n <= 0) return cudaSuccess;
  return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, static_cast<const uint32_t*>(nullptr),
                                         static_cast<uint32_t*>(nullptr), static_cast<const uint32_t*>(nullptr),
                                         static_cast<uint32_t*>(nullptr), static_cast<int>(n), 0, nn::KeyBits(vocab),
                                         cudaStream_t{});
}

template <class T, class I>
cudaError_t EmbeddingBackward(const I* ids, const T* dout, T* dw, int64_t n, int64_t vocab, int64_t dim,
                              int64_t padding_idx, uint32_t* keys_pos, void* sort_scratch, size_t sort_scratch_bytes,
                              cudaStream_t s) {
  cudaError_t err = cudaMemsetAsync(dw, 0, static_cast<size_t>(vocab * dim) * sizeof(T), s);
  if (err != cudaSuccess || n <= 0 || dim <= 0) return err;
  uint32_t* keys = keys_pos;
  uint32_t* pos = keys_pos + n;
  uint32_t* sorted_keys = keys_pos + 2 * n;
  uint32_t* sorted_pos = keys_pos + 3 * n;
  err = ForEach(s, n, [=] __device__(int64_t i) {
    keys[i] = nn::EmbeddingKey(static_cast<int64_t>(ids[i]), vocab, padding_idx);
    pos[i] = static_cast<uint32_t>(i);
  });
  if (err != cudaSuccess) return err;
  size_t bytes = sort_scratch_bytes;
  err = cub::DeviceRadixSort::SortPairs(sort_scratch, bytes, keys, sorted_keys, pos, sorted_pos, static_cast<int>(n), 0,
                                        nn::KeyBits(vocab), s);
  if (err != cudaSuccess) return err;
  const uint32_t skip = static_cast<uint32_t>(vocab);
  return ForEach(s, n * dim, [=] __device__(int64_t k) {
    int64_t r = k / dim, j = k % dim;
    T sum;
    if (nn::EmbeddingRunSum(sorted_keys, sorted_pos, n, dim, skip, dout, r, j, &sum))
      dw[static_cast<int64_t>(sorted_keys[r]) * dim + j] = sum;
  });
}

template <class T>
cudaError_t EmbeddingGatherRows(const T* dout, const int64_t* positions, int64_t rows, int64_t dim, T* values,
                                cudaStream_t s) {
  return ForEach(s, rows * dim, [=] __device__(int64_t k) {
    const int64_t r = k / dim, j = k % dim;
    values[k] = dout[positions[r] * dim + j];
  });
}
template cudaError_t EmbeddingGatherRows<float>(const float*, const int64_t*, int64_t, int64_t, float*, cudaStream_t);
template cudaError_t EmbeddingGatherRows<double>(const double*, const int64_t*, int64_t, int64_t, double*,
                                                 cudaStream_t);

#define PC_INSTANTIATE(T, I)                                                                                          \
  template cudaError_t EmbeddingLookup<T, I>(const T*, const I*, int64_t, int64_t, int64_t, int64_t, T*,              \
                                             unsigned long long*, cudaStream_t);                                      \
  template cudaError_t EmbeddingBackward<T, I>(const I*, const T*, T*, int64_t, int64_t, int64_t, int64_t, uint32_t*, \
                                               void*, size_t, cudaStream_t);
PC_INSTANTIATE(float, int32_t)
PC_INSTANTIATE(float, int64_t)
PC_INSTANTIATE(double, int32_t)
PC_INSTANTIATE(double, int64_t)
#undef PC_INSTANTIATE

}  // namespace paddlec::ops::cuda
