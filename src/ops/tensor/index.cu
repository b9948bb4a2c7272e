// CUDA kernel of gather's forward (index_cuda.cc): one thread per element of Out, moving elements
// of the widest unit that divides a row's bytes, so every dtype shares one kernel. An index outside
// [0, rows) gives zeros and reports its smallest position (index_cuda.cc turns it into an error).
// The gradient reuses the deterministic sorted accumulation of lookup_table_v2 (nn/embedding.cu).
#include "common/cuda_device.cuh"
#include "tensor/tensor_cuda.h"

namespace paddlec::ops::cuda {
namespace {

template <class U, class I>
cudaError_t GatherAs(const void* x_v, const I* index, int64_t m, int64_t outer, int64_t rows, int64_t row_units,
                     void* out_v, unsigned long long* bad_pos, cudaStream_t s) {
  const U* x = static_cast<const U*>(x_v);
  U* out = static_cast<U*>(out_v);
  const int64_t width = row_units > 0 ? row_units : 1;  // an empty row still checks its index
  return ForEach(s, outer * m * width, [=] __device__(int64_t e) {
    const int64_t c = e % width, q = e / width, j = q % m, o = q / m;
    const int64_t id = static_cast<int64_t>(index[j]);
    const bool bad = id < 0 || id >= rows;
    if (bad && c == 0) atomicMin(bad_pos, static_cast<unsigned long long>(j));
    if (c >= row_units) return;
    out[q * row_units + c] = bad ? U{} : x[(o * rows + id) * row_units + c];
  });
}

}  // namespace

template <class I>
cudaError_t GatherRows(const void* x, const I* index, int64_t m, int64_t outer, int64_t rows, int64_t row_bytes,
                       void* out, unsigned long long* bad_pos, cudaStream_t s) {
  if (outer * m == 0) return cudaSuccess;
  const int unit = tensor_index::CopyUnit(static_cast<uint64_t>(row_bytes) | reinterpret_cast<uintptr_t>(x) |
                                          reinterpret_cast<uintptr_t>(out));
  const int64_t units = row_bytes / unit;
  switch (unit) {
    case 16:
      return GatherAs<uint4, I>(x, index, m, outer, rows, units, out, bad_pos, s);
    case 8:
      return GatherAs<unsigned long long, I>(x, index, m, outer, rows, units, out, bad_pos, s);
    case 4:
      return GatherAs<uint32_t, I>(x, index, m, outer, rows, units, out, bad_pos, s);
    case 2:
      return GatherAs<uint16_t, I>(x, index, m, outer, rows, units, out, bad_pos, s);
    default:
      return GatherAs<uint8_t, I>(x, index, m, outer, rows, units, out, bad_pos, s);
  }
}

template cudaError_t GatherRows<int32_t>(const void*, const int32_t*, int64_t, int64_t, int64_t, int64_t, void*,
                                         unsigned long long*, cudaStream_t);
template cudaError_t GatherRows<int64_t>(const void*, const int64_t*, int64_t, int64_t, int64_t, int64_t, void*,
                                         unsigned long long*, cudaStream_t);

}  // namespace paddlec::ops::cuda
