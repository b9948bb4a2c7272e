// CUDA kernels of batch_norm and layer_norm with their gradients (norm.cc's semantics).
//
// Reductions are deterministic: a sum over a channel (batch_norm) or a column (layer_norm's
// Scale/Bias gradients) is cut into fixed chunks by nn::SplitReduction (which depends on the sizes
// only), each chunk summed by one block in a fixed order (per-thread strided sums, then BlockSum's
// fixed tree), and the chunk partials combined in chunk order by one thread per channel. No atomics,
// so every run on every GPU gives the same bits. Row reductions (layer_norm) use one block per row.
//
// batch_norm's mean and variance are computed in two passes (mean first, then the sum of squared
// deviations), as on the CPU, not with the one-pass E[x^2] - E[x]^2 that cancels catastrophically.
#include <cmath>

#include "common/cuda_device.cuh"
#include "nn/nn_cuda.h"

namespace paddlec::ops::cuda {
namespace {

template <class T>
struct Pair {
  T a, b;
};

/// Rows per block at least, in the column reduction (32 columns per block).
constexpr int64_t kColumnMinRows = 256;
constexpr int kColumnTile = 32, kColumnLanes = 8;  // blockDim = (32, 8)

nn::ReductionSplit PlaneSplit(const ChannelView& v) { return nn::SplitReduction(v.per_channel(), v.channels); }

int64_t ColumnTiles(int64_t cols) { return (cols + kColumnTile - 1) / kColumnTile; }

/// Rows per part for a column reduction over `rows` x `cols`.
nn::ReductionSplit ColumnSplit(int64_t rows, int64_t cols) {
  nn::ReductionSplit sp = nn::SplitReduction(rows, ColumnTiles(cols));
  if (rows > 0 && sp.chunk < kColumnMinRows) {
    sp.chunk = kColumnMinRows;
    sp.parts = (rows + sp.chunk - 1) / sp.chunk;
  }
  return sp;
}

bool ColumnLayout(const ChannelView& v) { return v.inner == 1; }

nn::ReductionSplit SplitFor(const ChannelView& v) {
  return ColumnLayout(v) ? ColumnSplit(v.outer, v.channels) : PlaneSplit(v);
}

/// partials[k * lines * parts + line * parts + part] = sum over chunk `part` of line `line` of f(i, line).a
/// (k = 0) and .b (k = 1), where the line's elements are those of a channel of an [outer, C, inner] view
/// with inner > 1 (contiguous runs of `inner`). One block per (line, part).
template <class T, class F>
__global__ void PlanePartials(ChannelView v, nn::ReductionSplit sp, F f, T* partials) {
  const int64_t line = blockIdx.x / sp.parts, part = blockIdx.x % sp.parts;
  const int64_t m = v.outer * v.inner, begin = part * sp.chunk;
  const int64_t end = begin + sp.chunk < m ? begin + sp.chunk : m;
  T s0 = 0, s1 = 0;
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
    Pair<T> r = f(nn::ChannelElement(line, j, v.channels, v.inner), line);
    s0 += r.a;
    s1 += r.b;
  }
  s0 = BlockSum(s0);
  s1 = BlockSum(s1);
  if (threadIdx.x == 0) {
    const int64_t n = v.channels * sp.parts;
    partials[line * sp.parts + part] = s0;
    partials[n + line * sp.parts + part] = s1;
  }
}

/// The same for the columns of a [rows, cols] matrix (channels innermost): a block covers 32 columns
/// (consecutive threads read consecutive columns) and `chunk` rows, its 8 row lanes combined in lane
/// order through shared memory. blockIdx.x = tile * parts + part.
template <class T, class F>
__global__ void ColumnPartials(int64_t rows, int64_t cols, nn::ReductionSplit sp, F f, T* partials) {
  __shared__ T sh0[kColumnLanes][kColumnTile + 1], sh1[kColumnLanes][kColumnTile + 1];
  const int64_t tile = blockIdx.x / sp.parts, part = blockIdx.x % sp.parts;
  const int64_t col = tile * kColumnTile + threadIdx.x;
  const int64_t begin = part * sp.chunk, end = begin + sp.chunk < rows ? begin + sp.chunk : rows;
  T s0 = 0, s1 = 0;
  if (col < cols)
    for (int64_t r = begin + threadIdx.y; r < end; r += kColumnLanes) {
      Pair<T> p = f(r * cols + col, col);
      s0 += p.a;
      s1 += p.b;
    }
  sh0[threadIdx.y][threadIdx.x] = s0;
  sh1[threadIdx.y][threadIdx.x] = s1;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    T t0 = 0, t1 = 0;
    for (int l = 0; l < kColumnLanes; ++l) {
      t0 += sh0[l][threadIdx.x];
      t1 += sh1[l][threadIdx.x];
    }
    const int64_t n = cols * sp.parts;
    partials[col * sp.parts + part] = t0;
    partials[n + col * sp.parts + part] = t1;
  }
}

/// Per-line partial sums of f over a channel view (columns when inner == 1).
template <class T, class F>
cudaError_t LaunchPartials(const ChannelView& v, F f, T* partials, cudaStream_t s) {
  nn::ReductionSplit sp = SplitFor(v);
  if (ColumnLayout(v)) {
    int64_t blocks = ColumnTiles(v.channels) * sp.parts;
    ColumnPartials<T><<<static_cast<unsigned>(blocks), dim3(kColumnTile, kColumnLanes), 0, s>>>(v.outer, v.channels, sp,
                                                                                                f, partials);
  } else {
    int64_t blocks = v.channels * sp.parts;
    PlanePartials<T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(v, sp, f, partials);
  }
  return cudaGetLastError();
}

/// The two totals of line `line` from its partials, added in part order.
template <class T>
__device__ Pair<T> Totals(const T* partials, int64_t lines, int64_t parts, int64_t line) {
  T t0 = 0, t1 = 0;
  for (int64_t p = 0; p < parts; ++p) {
    t0 += partials[line * parts + p];
    t1 += partials[lines * parts + line * parts + p];
  }
  return {t0, t1};
}

/// y = x * ab[c] + ab[C + c] over the channel view; y = x when `count` (sync_batch_norm's global
/// element count, on the device) is 1.
template <class T>
cudaError_t ApplyAffine(const ChannelView& v, const T* x, const T* ab, T* y, const T* count, cudaStream_t s) {
  const int64_t channels = v.channels, inner = v.inner;
  return ForEach(s, v.outer * channels * inner, [=] __device__(int64_t i) {
    int64_t c = nn::ChannelOf(i, channels, inner);
    y[i] = count && *count == T(1) ? x[i] : x[i] * ab[c] + ab[channels + c];
  });
}

bool TooManyBlocks(int64_t blocks) { return blocks > 0x7fffffff; }

}  // namespace

int64_t BatchNormPartialsSize(const ChannelView& v) {
  nn::ReductionSplit sp = SplitFor(v);
  return 2 * v.channels * sp.parts;
}

// sync_batch_norm runs batch_norm's kernels with one change: where batch_norm's kernels use a
// channel's total and the element count `m`, sync_batch_norm's first write them to memory, sum them
// over the ranks, and read the sums back. With one rank the sums are the values themselves (NCCL's
// sum over one rank copies), and the divisions are IEEE's correctly rounded ones in both, so the two
// ops give the same bits.
template <class T>
cudaError_t BatchNormTrain(const ChannelView& v, const T* x, const T* scale, const T* bias, const T* mean, const T* var,
                           T* y, T* mean_out, T* var_out, T* saved_mean, T* saved_inv_std, double eps, double momentum,
                           const void* momentum_ptr, bool momentum_is_double, T* ab, T* partials,
                           const BatchNormSync<T>* sync, cudaStream_t s) {
  const int64_t channels = v.channels, m = v.per_channel();
  if (channels == 0) return cudaSuccess;  // the same on every rank (C is the model's), so no rank syncs
  nn::ReductionSplit sp = SplitFor(v);
  if (TooManyBlocks(channels * sp.parts)) return cudaErrorInvalidConfiguration;
  const int64_t parts = sp.parts;
  const T tm = static_cast<T>(m), e = static_cast<T>(eps), mom_attr = static_cast<T>(momentum);
  // sync_batch_norm: stats[c] holds channel c's global sum, stats[channels] the global count.
  T* stats = sync ? sync->stats : nullptr;
  const T* count = sync ? sync->stats + channels : nullptr;

  // Pass 1: the batch mean.
  cudaError_t err = LaunchPartials(
      v,
      [=] __device__(int64_t i, int64_t) {
        return Pair<T>{x[i], T(0)};
      },
      partials, s);
  if (err != cudaSuccess) return err;
  if (sync == nullptr) {
    err = ForEach(s, channels,
                  [=] __device__(int64_t c) { saved_mean[c] = Totals(partials, channels, parts, c).a / tm; });
  } else {
    err = ForEach(s, channels, [=] __device__(int64_t c) {
      stats[c] = Totals(partials, channels, parts, c).a;
      if (c == 0) stats[channels] = tm;
    });
    if (err != cudaSuccess) return err;
    if (!sync->sum->Sum(stats, channels + 1, s)) return kRankSumFailed;
    err = ForEach(s, channels, [=] __device__(int64_t c) { saved_mean[c] = stats[c] / *count; });
  }
  if (err != cudaSuccess) return err;
  // Pass 2: the sum of squared deviations from it.
  err = LaunchPartials(
      v,
      [=] __device__(int64_t i, int64_t c) {
        T d = x[i] - saved_mean[c];
        return Pair<T>{d * d, T(0)};
      },
      partials, s);
  if (err != cudaSuccess) return err;
  if (sync != nullptr) {
    err = ForEach(s, channels, [=] __device__(int64_t c) { stats[c] = Totals(partials, channels, parts, c).a; });
    if (err != cudaSuccess) return err;
    if (!sync->sum->Sum(stats, channels, s)) return kRankSumFailed;  // stats[channels] is global already
  }
  // Running statistics (momentum read on the device), inverse std and the affine map.
  const float* mom_f = momentum_is_double ? nullptr : static_cast<const float*>(momentum_ptr);
  const double* mom_d = momentum_is_double ? static_cast<const double*>(momentum_ptr) : nullptr;
  err = ForEach(s, channels, [=] __device__(int64_t c) {
    T mom = mom_d ? static_cast<T>(*mom_d) : mom_f ? static_cast<T>(*mom_f) : mom_attr;
    T batch_var = (stats ? stats[c] : Totals(partials, channels, parts, c).a) / (count ? *count : tm);
    T mu = saved_mean[c], running_mean = mean[c], running_var = var[c];  // read before mean_out/var_out (aliases)
    if (count && *count == T(1)) {
      // One value per channel in the global batch: batch_norm's pass-through (its host code takes
      // that branch before launching; only sync_batch_norm learns the global count here).
      mean_out[c] = running_mean;
      var_out[c] = running_var;
      saved_mean[c] = T(0);
      saved_inv_std[c] = T(0);
      return;
    }
    mean_out[c] = running_mean * mom + mu * (T(1) - mom);
    var_out[c] = running_var * mom + batch_var * (T(1) - mom);
    T inv = T(1) / sqrt(batch_var + e);
    saved_inv_std[c] = inv;
    T a = scale[c] * inv;
    ab[c] = a;
    ab[channels + c] = bias[c] - mu * a;
  });
  if (err != cudaSuccess) return err;
  return ApplyAffine(v, x, ab, y, count, s);
}

template <class T>
cudaError_t BatchNormInfer(const ChannelView& v, const T* x, const T* scale, const T* bias, const T* mean, const T* var,
                           T* y, T* mean_out, T* var_out, T* saved_mean, T* saved_inv_std, double eps, T* ab,
                           cudaStream_t s) {
  const int64_t channels = v.channels;
  const T e = static_cast<T>(eps);
  cudaError_t err = ForEach(s, channels, [=] __device__(int64_t c) {
    T mu = mean[c], sigma2 = var[c];  // read before the (possibly aliasing) writes
    mean_out[c] = mu;
    var_out[c] = sigma2;
    T inv = T(1) / sqrt(sigma2 + e);
    saved_mean[c] = mu;
    saved_inv_std[c] = inv;
    T a = scale[c] * inv;
    ab[c] = a;
    ab[channels + c] = bias[c] - mu * a;
  });
  if (err != cudaSuccess) return err;
  return ApplyAffine(v, x, ab, y, static_cast<const T*>(nullptr), s);
}

template <class T>
cudaError_t BatchNormBackward(const ChannelView& v, const T* x, const T* scale, const T* saved_mean,
                              const T* saved_inv_std, const T* dy, T* dx, T* dscale, T* dbias, bool global_stats,
                              T* scratch, T* partials, RankSum* sum, cudaStream_t s) {
  const int64_t channels = v.channels, inner = v.inner, m = v.per_channel();
  if (channels == 0) return cudaSuccess;
  nn::ReductionSplit sp = SplitFor(v);
  if (TooManyBlocks(channels * sp.parts)) return cudaErrorInvalidConfiguration;
  const int64_t parts = sp.parts;
  const T* mean = saved_mean;
  const T* inv_std = saved_inv_std;
  if (global_stats) sum = nullptr;  // constant statistics: X@GRAD needs no other rank's values
  // sum(dY) and sum(dY * (X - mean)) per channel.
  cudaError_t err = LaunchPartials(
      v,
      [=] __device__(int64_t i, int64_t c) {
        return Pair<T>{dy[i], dy[i] * (x[i] - mean[c])};
      },
      partials, s);
  if (err != cudaSuccess) return err;
  T* sum_dy = scratch;                  // = dBias
  T* sum_dy_xhat = scratch + channels;  // = dScale
  // sync_batch_norm_grad: scratch[2 * channels] is the element count, summed over the ranks with both sums.
  const T tm = static_cast<T>(m);
  T* count = sum ? scratch + 2 * channels : nullptr;
  err = ForEach(s, channels, [=] __device__(int64_t c) {
    Pair<T> t = Totals(partials, channels, parts, c);
    T db = t.a, ds = t.b * inv_std[c];
    sum_dy[c] = db;
    sum_dy_xhat[c] = ds;
    if (dbias) dbias[c] = db;
    if (dscale) dscale[c] = ds;
    if (count && c == 0) *count = tm;
  });
  if (err != cudaSuccess) return err;
  if (sum != nullptr) {
    if (!sum->Sum(scratch, 2 * channels + 1, s)) return kRankSumFailed;
    if (dscale || dbias) {
      // A global batch of one value per channel: the forward passed X through.
      err = ForEach(s, channels, [=] __device__(int64_t c) {
        if (*count != T(1)) return;
        if (dbias) dbias[c] = T(0);
        if (dscale) dscale[c] = T(0);
      });
      if (err != cudaSuccess) return err;
    }
  }
  if (dx == nullptr) return cudaSuccess;
  const int64_t n = v.outer * channels * inner;
  if (global_stats)
    return ForEach(s, n, [=] __device__(int64_t i) {
      int64_t c = nn::ChannelOf(i, channels, inner);
      dx[i] = dy[i] * (scale[c] * inv_std[c]);
    });
  // dX = s * (dY - dBias / M - (X - mean) * inv_std * dScale / M), s = Scale * inv_std (norm.cc's plane form).
  // 1 / M on the host equals 1 / count on the device when count == M (both correctly rounded).
  const T inv_m = T(1) / tm;
  return ForEach(s, n, [=] __device__(int64_t i) {
    if (count && *count == T(1)) {
      dx[i] = dy[i];
      return;
    }
    int64_t c = nn::ChannelOf(i, channels, inner);
    const T is = inv_std[c], im = count ? T(1) / *count : inv_m;
    const T sc = scale[c] * is, shift = sum_dy[c] * im, slope = is * sum_dy_xhat[c] * im;
    dx[i] = sc * (dy[i] - shift - (x[i] - mean[c]) * slope);
  });
}

// ---- layer_norm ----------------------------------------------------------------------------

namespace {

template <class T>
__global__ void LayerNormRows(const T* x, const T* scale, const T* bias, T* y, T* mean_out, T* var_out, int64_t rows,
                              int64_t width, T eps) {
  const T tw = static_cast<T>(width);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * width;
    T* yr = y + r * width;
    T s = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) s += xr[j];
    const T mean = BlockSum(s) / tw;
    T q = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      T d = xr[j] - mean;
      q += d * d;
    }
    const T var = BlockSum(q) / tw;
    const T inv = T(1) / sqrt(var + eps);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      T v = (xr[j] - mean) * inv;
      if (scale) v *= scale[j];
      if (bias) v += bias[j];
      yr[j] = v;
    }
    if (threadIdx.x == 0) {
      if (mean_out) mean_out[r] = mean;
      if (var_out) var_out[r] = var;
    }
  }
}

/// dX row by row: g = dY * Scale; dX = inv_std * (g - mean(g) - xhat * mean(g * xhat)) (norm.cc's order).
template <class T>
__global__ void LayerNormGradRows(const T* x, const T* scale, const T* mean, const T* inv_std, const T* dy, T* dx,
                                  int64_t rows, int64_t width) {
  const T tw = static_cast<T>(width);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * width;
    const T* dyr = dy + r * width;
    T* dxr = dx + r * width;
    const T mu = mean[r], is = inv_std[r];
    T s0 = 0, s1 = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      T g = scale ? dyr[j] * scale[j] : dyr[j];
      s0 += g;
      s1 += g * (xr[j] - mu);
    }
    const T mean_d = BlockSum(s0) / tw;
    const T mean_dx = BlockSum(s1) * is / tw;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      T g = scale ? dyr[j] * scale[j] : dyr[j];
      dxr[j] = is * (g - mean_d - (xr[j] - mu) * is * mean_dx);
    }
  }
}

unsigned RowBlocks(int64_t rows) { return static_cast<unsigned>(rows < 65536 * 4 ? rows : 65536 * 4); }

}  // namespace

template <class T>
cudaError_t LayerNormForward(const T* x, const T* scale, const T* bias, T* y, T* mean, T* var, int64_t rows,
                             int64_t width, double eps, cudaStream_t s) {
  if (rows <= 0) return cudaSuccess;
  LayerNormRows<T><<<RowBlocks(rows), kThreads, 0, s>>>(x, scale, bias, y, mean, var, rows, width, static_cast<T>(eps));
  return cudaGetLastError();
}

int64_t LayerNormBackwardScratchSize(int64_t rows, int64_t width) {
  return rows + 2 * width * ColumnSplit(rows, width).parts;
}

template <class T>
cudaError_t LayerNormBackward(const T* x, const T* scale, const T* mean, const T* var, const T* dy, T* dx, T* dscale,
                              T* dbias, int64_t rows, int64_t width, double eps, T* scratch, cudaStream_t s) {
  if (rows <= 0 || width <= 0) {
    // No rows: the column sums are zeros (norm.cc fills them before adding nothing).
    cudaError_t err = cudaSuccess;
    if (dscale && width > 0) err = cudaMemsetAsync(dscale, 0, static_cast<size_t>(width) * sizeof(T), s);
    if (err == cudaSuccess && dbias && width > 0)
      err = cudaMemsetAsync(dbias, 0, static_cast<size_t>(width) * sizeof(T), s);
    return err;
  }
  const T e = static_cast<T>(eps);
  T* inv_std = scratch;
  cudaError_t err = ForEach(s, rows, [=] __device__(int64_t r) { inv_std[r] = T(1) / sqrt(var[r] + e); });
  if (err != cudaSuccess) return err;
  if (dscale || dbias) {
    T* partials = scratch + rows;
    ChannelView v{rows, width, 1};
    nn::ReductionSplit sp = SplitFor(v);
    if (TooManyBlocks(ColumnTiles(width) * sp.parts)) return cudaErrorInvalidConfiguration;
    err = LaunchPartials(
        v,
        [=] __device__(int64_t i, int64_t) {
          int64_t r = i / width;
          return Pair<T>{dy[i] * (x[i] - mean[r]) * inv_std[r], dy[i]};
        },
        partials, s);
    if (err != cudaSuccess) return err;
    const int64_t parts = sp.parts;
    err = ForEach(s, width, [=] __device__(int64_t j) {
      Pair<T> t = Totals(partials, width, parts, j);
      if (dscale) dscale[j] = t.a;
      if (dbias) dbias[j] = t.b;
    });
    if (err != cudaSuccess) return err;
  }
  if (dx) {
    LayerNormGradRows<T><<<RowBlocks(rows), kThreads, 0, s>>>(x, scale, mean, inv_std, dy, dx, rows, width);
    err = cudaGetLastError();
  }
  return err;
}

#define PC_INSTANTIATE(T)                                                                                              \
  template cudaError_t BatchNormTrain<T>(const ChannelView&, const T*, const T*, const T*, const T*, const T*, T*, T*, \
                                         T*, T*, T*, double, double, const void*, bool, T*, T*,                        \
                                         const BatchNormSync<T>*, cudaStream_t);                                       \
  template cudaError_t BatchNormInfer<T>(const ChannelView&, const T*, const T*, const T*, const T*, const T*, T*, T*, \
                                         T*, T*, T*, double, T*, cudaStream_t);                                        \
  template cudaError_t BatchNormBackward<T>(const ChannelView&, const T*, const T*, const T*, const T*, const T*, T*,  \
                                            T*, T*, bool, T*, T*, RankSum*, cudaStream_t);                             \
  template cudaError_t LayerNormForward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, double,         \
                                           cudaStream_t);                                                              \
  template cudaError_t LayerNormBackward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int64_t,     \
                                            int64_t, double, T*, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
#undef PC_INSTANTIATE

}  // namespace paddlec::ops::cuda
