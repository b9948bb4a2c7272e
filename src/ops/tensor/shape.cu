// CUDA kernels of the shape ops: `shape` (the dims written by a kernel that carries them), slice's
// strided gathers and scatters, and transpose2 (and its gradient): after tensor_index::MakeTransposePlan coalesced the
// permutation, a memcpy (identity), a gather whose reads run along the input's contiguous last axis
// (that axis stays last), or a batch of 32x32 tiles transposed through shared memory, so that reads
// (along the input's last axis) and writes (along the output's last axis) are both coalesced.
// Elements move as unsigned integers of their size: one kernel per size serves every dtype.
#include "common/cuda_device.cuh"
#include "tensor/tensor_cuda.h"

namespace paddlec::ops::cuda {
namespace {

using tensor_index::TransposePlan;

/// out[i] = in[GatherOffset(i)]; Index is int32_t when every offset fits (cheaper divisions).
template <class E, class Index>
__global__ void GatherKernel(const E* __restrict__ in, E* __restrict__ out, TransposePlan p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < p.n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    out[i] = in[tensor_index::GatherOffset<Index>(p, static_cast<Index>(i))];
}

constexpr int kTile = 32, kTileRows = 8;  // blocks of 32 x 8 threads, 4 tile rows per thread

/// One 32x32 tile per iteration: tile[j][x] = in(r0 + j, c0 + x) is read along the input's rows,
/// then out(c0 + j, r0 + x) = tile[x][j] is written along the output's rows. The padding column
/// keeps the column-wise shared-memory reads free of bank conflicts (4- and 8-byte elements).
template <class E>
__global__ void TileKernel(const E* __restrict__ in, E* __restrict__ out, TransposePlan p) {
  __shared__ E tile[kTile][kTile + 1];
  const int64_t row_tiles = (p.rows + kTile - 1) / kTile, col_tiles = (p.cols + kTile - 1) / kTile;
  const int64_t tiles = p.batch * row_tiles * col_tiles;
  const int x = threadIdx.x;
  // t depends on the block only, so every thread of a block runs the same iterations (barriers ok).
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t c0 = (t % col_tiles) * kTile, r0 = (t / col_tiles % row_tiles) * kTile;
    int64_t src, dst;
    tensor_index::BatchOffsets(p, t / col_tiles / row_tiles, &src, &dst);
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t r = r0 + j, c = c0 + x;
      if (r < p.rows && c < p.cols) tile[j][x] = in[src + r * p.src_row + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const int64_t c = c0 + j, r = r0 + x;
      if (r < p.rows && c < p.cols) out[dst + c * p.dst_col + r] = tile[x][j];
    }
    __syncthreads();  // the next tile overwrites `tile`
  }
}

template <class E>
cudaError_t TransposeAs(const void* in_v, void* out_v, const TransposePlan& p, cudaStream_t s) {
  const E* in = static_cast<const E*>(in_v);
  E* out = static_cast<E*>(out_v);
  if (p.kind == tensor_index::TransposeKind::kGather) {
    if (p.n <= INT32_MAX)
      GatherKernel<E, int32_t><<<Blocks(p.n), kThreads, 0, s>>>(in, out, p);
    else
      GatherKernel<E, int64_t><<<Blocks(p.n), kThreads, 0, s>>>(in, out, p);
  } else {
    const int64_t tiles = p.batch * ((p.rows + kTile - 1) / kTile) * ((p.cols + kTile - 1) / kTile);
    const unsigned blocks = static_cast<unsigned>(tiles < 132 * 16 ? tiles : 132 * 16);
    TileKernel<E><<<blocks, dim3(kTile, kTileRows), 0, s>>>(in, out, p);
  }
  return cudaGetLastError();
}

__global__ void WriteShapeKernel(int32_t* out, ShapeValues v) {
  if (threadIdx.x < v.rank) out[threadIdx.x] = v.dims[threadIdx.x];
}

/// dense[i] = strided[GatherOffset(i)] (kScatter: the reverse).
template <class E, class Index, bool kScatter>
__global__ void StridedKernel(E* __restrict__ strided, E* __restrict__ dense, TransposePlan p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < p.n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const Index off = tensor_index::GatherOffset<Index>(p, static_cast<Index>(i));
    if (kScatter)
      strided[off] = dense[i];
    else
      dense[i] = strided[off];
  }
}

template <class E>
cudaError_t StridedAs(void* strided, void* dense, const TransposePlan& p, bool scatter, cudaStream_t s) {
  E* st = static_cast<E*>(strided);
  E* de = static_cast<E*>(dense);
  const bool narrow = p.n <= INT32_MAX;
  if (scatter) {
    if (narrow)
      StridedKernel<E, int32_t, true><<<Blocks(p.n), kThreads, 0, s>>>(st, de, p);
    else
      StridedKernel<E, int64_t, true><<<Blocks(p.n), kThreads, 0, s>>>(st, de, p);
  } else {
    if (narrow)
      StridedKernel<E, int32_t, false><<<Blocks(p.n), kThreads, 0, s>>>(st, de, p);
    else
      StridedKernel<E, int64_t, false><<<Blocks(p.n), kThreads, 0, s>>>(st, de, p);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t WriteShape(int32_t* out, const ShapeValues& v, cudaStream_t s) {
  if (v.rank == 0) return cudaSuccess;
  WriteShapeKernel<<<1, 32, 0, s>>>(out, v);
  return cudaGetLastError();
}

cudaError_t StridedCopy(void* strided, void* dense, int elem_bytes, const TransposePlan& plan, bool scatter,
                        cudaStream_t s) {
  if (plan.n == 0) return cudaSuccess;
  if (plan.kind == tensor_index::TransposeKind::kCopy) {
    const size_t bytes = static_cast<size_t>(plan.n) * static_cast<size_t>(elem_bytes);
    return scatter ? cudaMemcpyAsync(strided, dense, bytes, cudaMemcpyDeviceToDevice, s)
                   : cudaMemcpyAsync(dense, strided, bytes, cudaMemcpyDeviceToDevice, s);
  }
  switch (elem_bytes) {
    case 1:
      return StridedAs<uint8_t>(strided, dense, plan, scatter, s);
    case 2:
      return StridedAs<uint16_t>(strided, dense, plan, scatter, s);
    case 4:
      return StridedAs<uint32_t>(strided, dense, plan, scatter, s);
    case 8:
      return StridedAs<unsigned long long>(strided, dense, plan, scatter, s);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t Transpose(const void* in, void* out, int elem_bytes, const TransposePlan& plan, cudaStream_t s) {
  if (plan.n == 0) return cudaSuccess;
  if (plan.kind == tensor_index::TransposeKind::kCopy) {
    if (in == out) return cudaSuccess;
    return cudaMemcpyAsync(out, in, static_cast<size_t>(plan.n) * static_cast<size_t>(elem_bytes),
                           cudaMemcpyDeviceToDevice, s);
  }
  switch (elem_bytes) {
    case 1:
      return TransposeAs<uint8_t>(in, out, plan, s);
    case 2:
      return TransposeAs<uint16_t>(in, out, plan, s);
    case 4:
      return TransposeAs<uint32_t>(in, out, plan, s);
    case 8:
      return TransposeAs<unsigned long long>(in, out, plan, s);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace paddlec::ops::cuda
