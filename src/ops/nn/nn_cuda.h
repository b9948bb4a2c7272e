// Launchers of the nn family's CUDA kernels (conv.cu, pool.cu, norm.cu, dropout.cu, embedding.cu, pad.cu,
// interp.cu), in plain types. Every launcher queues work on `s` and returns the launch error; none waits for the GPU.
// Explicitly instantiated for float and double (T); id types I are int32_t and int64_t.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "nn/interp_index.h"
#include "nn/nn_cuda_index.h"
#include "nn/pad_index.h"

namespace paddlec::ops::cuda {

// ---- conv.cu -------------------------------------------------------------------------------

/// xp[p, i, j] = x[p, i - top, j - left] inside x, else 0: `planes` planes of h x w into hp x wp.
template <class T>
cudaError_t PadPlanes(const T* x, T* xp, int64_t planes, int64_t h, int64_t w, int64_t hp, int64_t wp, int64_t top,
                      int64_t left, cudaStream_t s);
/// dx[p, i, j] = dxp[p, i + top, j + left]: the inverse crop of PadPlanes.
template <class T>
cudaError_t CropPlanes(const T* dxp, T* dx, int64_t planes, int64_t h, int64_t w, int64_t hp, int64_t wp, int64_t top,
                       int64_t left, cudaStream_t s);
/// Folds an inference batch norm into a convolution: with a = scale[o] / sqrt(var[o] + eps),
/// filter_out[o, k] = filter[o, k] * a and bias_out[o] = bias[o] - mean[o] * a (per_out = C/g * KH * KW).
template <class T>
cudaError_t FoldBatchNorm(const T* filter, const T* scale, const T* bias, const T* mean, const T* var, double eps,
                          int64_t o, int64_t per_out, T* filter_out, T* bias_out, cudaStream_t s);
/// y[n, o, :] = act(y[n, o, :] + bias[o]) in place over [n, channels, plane]; act = relu or identity.
template <class T>
cudaError_t BiasActivation(T* y, const T* bias, int64_t n, int64_t channels, int64_t plane, bool relu, cudaStream_t s);

// ---- pool.cu -------------------------------------------------------------------------------

using nn::PoolShape;

/// Out = max or average of every window; an empty window gives 0 (pool.cc's loops).
template <class T>
cudaError_t PoolForward(const PoolShape& p, const T* x, T* y, cudaStream_t s);
/// arg[q] = plane-local index of the first element (row-major) of output q's window equal to y[q],
/// or -1. Needs in_h * in_w < 2^31.
template <class T>
cudaError_t PoolArgMax(const PoolShape& p, const T* x, const T* y, int32_t* arg, cudaStream_t s);
/// dx = sum of dy over the windows whose arg is this element (gathered, no atomics).
template <class T>
cudaError_t PoolMaxBackward(const PoolShape& p, const int32_t* arg, const T* dy, T* dx, cudaStream_t s);
/// dx = sum of dy / count over the windows containing this element (gathered, no atomics).
template <class T>
cudaError_t PoolAvgBackward(const PoolShape& p, const T* dy, T* dx, cudaStream_t s);

// ---- norm.cu -------------------------------------------------------------------------------

/// A tensor viewed as [outer, channels, inner] (batch_norm's channel view).
struct ChannelView {
  int64_t outer, channels, inner;
  int64_t per_channel() const { return outer * inner; }
};

/// Scratch elements (of T) the batch_norm launchers need for per-block partial sums.
int64_t BatchNormPartialsSize(const ChannelView& v);

/// sync_batch_norm's collective, called between batch_norm's reductions: in place, the `n` values
/// at `buf` (device memory written by work queued on `s`) become their sums over the data-parallel
/// ranks, queued on `s`. Returns false when it could not be queued (the implementation keeps why).
class RankSum {
 public:
  virtual ~RankSum() = default;
  virtual bool Sum(void* buf, int64_t n, cudaStream_t s) = 0;
};

/// What sync_batch_norm adds to batch_norm in training: the per-channel sums (and the element count)
/// go through `sum` before they are used, so the statistics are the global batch's. `stats` is
/// channels + 1 scratch elements (of T) where the sums wait for it.
template <class T>
struct BatchNormSync {
  RankSum* sum;
  T* stats;
};
/// What a batch_norm launcher returns when `BatchNormSync::sum` failed.
inline constexpr cudaError_t kRankSumFailed = cudaErrorUnknown;

/// Training-mode batch_norm (outer * inner > 1): batch mean and biased variance per channel in two
/// deterministic passes, running statistics updated (mean_out / var_out may alias mean / var),
/// saved_mean = batch mean, saved_inv_std = 1 / sqrt(var + eps), then y = x * a + b with a = scale *
/// inv_std, b = bias - mean * a. `momentum_ptr` (device, float or double per momentum_is_double)
/// overrides `momentum` when not null. `ab` holds 2 * channels scratch, `partials`
/// BatchNormPartialsSize. With `sync` (sync_batch_norm) the statistics are the global batch's, and
/// a global count of 1 passes x through as batch_norm does for one value per channel (any
/// outer * inner is accepted then, this rank's may even be 0).
template <class T>
cudaError_t BatchNormTrain(const ChannelView& v, const T* x, const T* scale, const T* bias, const T* mean, const T* var,
                           T* y, T* mean_out, T* var_out, T* saved_mean, T* saved_inv_std, double eps, double momentum,
                           const void* momentum_ptr, bool momentum_is_double, T* ab, T* partials,
                           const BatchNormSync<T>* sync, cudaStream_t s);
/// Test-mode batch_norm: normalizes with the running statistics, copies them to mean_out / var_out
/// (when they are other buffers), saved_mean = mean, saved_inv_std = 1 / sqrt(var + eps).
template <class T>
cudaError_t BatchNormInfer(const ChannelView& v, const T* x, const T* scale, const T* bias, const T* mean, const T* var,
                           T* y, T* mean_out, T* var_out, T* saved_mean, T* saved_inv_std, double eps, T* ab,
                           cudaStream_t s);
/// batch_norm_grad. dx, dscale, dbias may be null. `global_stats`: the statistics were constants.
/// `scratch` holds 2 * channels, `partials` BatchNormPartialsSize. With `sum` (sync_batch_norm_grad
/// in training; `scratch` then holds 2 * channels + 1) dx uses the sums of dy and dy * (x - mean)
/// and the element count summed over the ranks, while dscale and dbias stay this rank's; a global
/// count of 1 passes dy through (dscale = dbias = 0), as the forward passed x.
template <class T>
cudaError_t BatchNormBackward(const ChannelView& v, const T* x, const T* scale, const T* saved_mean,
                              const T* saved_inv_std, const T* dy, T* dx, T* dscale, T* dbias, bool global_stats,
                              T* scratch, T* partials, RankSum* sum, cudaStream_t s);

/// layer_norm over `rows` rows of `width`: y = (x - mean) * inv_std [* scale] [+ bias]; mean / var
/// (biased) per row when not null. scale and bias may be null.
template <class T>
cudaError_t LayerNormForward(const T* x, const T* scale, const T* bias, T* y, T* mean, T* var, int64_t rows,
                             int64_t width, double eps, cudaStream_t s);
/// Scratch elements (of T) LayerNormBackward needs.
int64_t LayerNormBackwardScratchSize(int64_t rows, int64_t width);
/// layer_norm_grad. dx, dscale, dbias may be null; scale may be null (all ones).
template <class T>
cudaError_t LayerNormBackward(const T* x, const T* scale, const T* mean, const T* var, const T* dy, T* dx, T* dscale,
                              T* dbias, int64_t rows, int64_t width, double eps, T* scratch, cudaStream_t s);

// ---- dropout.cu ----------------------------------------------------------------------------

/// Training-mode dropout: element i keeps iff Philox(seed).Block(step, i / 4)[i % 4] as a 24-bit
/// uniform is >= p (dropout.cc's stream, bit for bit); y = keep ? x * scale : 0, mask[i] = keep (mask
/// may be null). The seed is *seed_i32 or *seed_i64 (device, read by the kernel) when one is given,
/// else `seed`.
template <class T>
cudaError_t DropoutTrain(const T* x, T* y, uint8_t* mask, int64_t n, uint64_t seed, const int32_t* seed_i32,
                         const int64_t* seed_i64, uint64_t step, float p, double scale, cudaStream_t s);
/// y = x * scale.
template <class T>
cudaError_t Scale(const T* x, T* y, int64_t n, double scale, cudaStream_t s);
/// dx = mask ? dy * scale : 0.
template <class T>
cudaError_t DropoutBackward(const uint8_t* mask, const T* dy, T* dx, int64_t n, double scale, cudaStream_t s);

// ---- embedding.cu --------------------------------------------------------------------------

/// out[i, :] = w[ids[i], :], zeros for the padding index and for out-of-range ids; the smallest
/// position of an out-of-range id (not the padding index) is atomicMin'ed into *bad_pos (which the
/// caller sets to ~0 first).
template <class T, class I>
cudaError_t EmbeddingLookup(const T* w, const I* ids, int64_t n, int64_t vocab, int64_t dim, int64_t padding_idx,
                            T* out, unsigned long long* bad_pos, cudaStream_t s);
/// A SelectedRows W@GRAD's values: row k = dout row positions[k] (k < rows).
template <class T>
cudaError_t EmbeddingGatherRows(const T* dout, const int64_t* positions, int64_t rows, int64_t dim, T* values,
                                cudaStream_t s);
/// Bytes of cub radix-sort scratch EmbeddingBackward needs for n ids (host-side query, no GPU work).
cudaError_t EmbeddingSortScratchBytes(int64_t n, int64_t vocab, size_t* bytes);
/// dw = 0, then dw[id, :] = sum of dout[i, :] over the positions i of id in increasing i (padding and
/// out-of-range ids skipped): keys/positions radix-sorted (stable), then one thread per (run, column)
/// sums its run in order. Deterministic, no atomics. keys/pos are 4 * n uint32 scratch; sort_scratch
/// has EmbeddingSortScratchBytes. Needs n < 2^31 and vocab < 2^31.
template <class T, class I>
cudaError_t EmbeddingBackward(const I* ids, const T* dout, T* dw, int64_t n, int64_t vocab, int64_t dim,
                              int64_t padding_idx, uint32_t* keys_pos, void* sort_scratch, size_t sort_scratch_bytes,
                              cudaStream_t s);

// ---- pad.cu --------------------------------------------------------------------------------

/// y[q] = pad_index.h's PadOutputAt for the n output elements (T: float, double, int32_t, int64_t).
template <class T>
cudaError_t PadForward(const nn::Pad3dShape& p, const T* x, T* y, int64_t n, cudaStream_t s);
/// dx[q] = PadGradAt for the n input elements (T: float, double).
template <class T>
cudaError_t PadBackward(const nn::Pad3dShape& p, const T* dy, T* dx, int64_t n, cudaStream_t s);

// ---- interp.cu -----------------------------------------------------------------------------

/// y[q] = interp_index.h's InterpOutputAt for the n output elements.
template <class T>
cudaError_t InterpForward(const nn::InterpShape& s, const T* x, T* y, int64_t n, cudaStream_t st);
/// dx[q] = InterpGradAt for the n input elements.
template <class T>
cudaError_t InterpBackward(const nn::InterpShape& s, const T* dy, T* dx, int64_t n, cudaStream_t st);

}  // namespace paddlec::ops::cuda
