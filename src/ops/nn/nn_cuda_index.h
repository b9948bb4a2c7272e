// Index arithmetic and per-element bodies of the nn family's CUDA kernels, as __host__ __device__
// functions on plain types, so the .cu files and a host doctest (nn_cuda_index_test.cc, which checks
// them against the CPU kernels) run the same code. No paddlec headers beyond philox.h.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/philox.h"

#ifdef __CUDACC__
#define PC_NN_HD __host__ __device__
#else
#define PC_NN_HD
#endif

namespace paddlec::ops::nn {

/// A half-open index range [begin, end); empty when begin >= end.
struct IndexSpan {
  int64_t begin, end;
};

/// floor(a / d) for d > 0 and any sign of a (C++ division truncates toward zero).
PC_NN_HD inline int64_t FloorDiv(int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); }

// ---- Pooling windows (pool2d, pool2d_grad) -------------------------------------------------

/// One spatial axis of a pooling op: sizes, window and the padding before the first element.
struct PoolAxis {
  int64_t in, out, kernel, stride, pad_before;
};

/// The input range output index `o` covers, clipped to the input (pool.cc's WindowRange): a sliding
/// window [o * stride - pad_before, + kernel), or adaptive [floor(o * in / out), ceil((o + 1) * in / out)).
PC_NN_HD inline IndexSpan PoolWindow(const PoolAxis& a, int64_t o, bool adaptive) {
  if (adaptive) return {o * a.in / a.out, ((o + 1) * a.in + a.out - 1) / a.out};
  int64_t b = o * a.stride - a.pad_before;
  int64_t e = b + a.kernel;
  return {b < 0 ? 0 : b, e < a.in ? e : a.in};
}

/// The output indices whose window (PoolWindow) contains input index `i`, as a range [begin, end)
/// within [0, out). Sliding: o * stride - pad <= i < o * stride - pad + kernel, i.e.
/// floor((i + pad - kernel) / stride) < o <= floor((i + pad) / stride). Adaptive: floor(o * in / out) <= i
/// iff o <= floor(((i + 1) * out - 1) / in), and ceil((o + 1) * in / out) > i iff o >= floor(i * out / in).
PC_NN_HD inline IndexSpan PoolCovering(const PoolAxis& a, int64_t i, bool adaptive) {
  int64_t lo, hi;
  if (adaptive) {
    lo = i * a.out / a.in;
    hi = ((i + 1) * a.out - 1) / a.in + 1;
  } else {
    lo = FloorDiv(i + a.pad_before - a.kernel, a.stride) + 1;
    hi = FloorDiv(i + a.pad_before, a.stride) + 1;
  }
  if (lo < 0) lo = 0;
  if (hi > a.out) hi = a.out;
  return {lo, hi};
}

/// True when cuDNN's pooling computes exactly pool.cc's windows on this axis: symmetric padding
/// (cuDNN has one pad per axis), pad < kernel (cuDNN's requirement, and the first window then reaches
/// the input), cuDNN's floor formula giving the same output size (so ceil_mode adds no window), and the
/// last window starting inside the input. Every window then lies inside the padded input, so cuDNN's
/// "count include padding" divisor is kernel (pool.cc's ksize_h * ksize_w) and "exclude padding" is the
/// clipped window's size; max pooling never sees only padding.
PC_NN_HD inline bool PoolAxisFitsCudnn(const PoolAxis& a, int64_t pad_after) {
  if (a.pad_before != pad_after || a.pad_before >= a.kernel) return false;
  int64_t span = a.in + 2 * a.pad_before - a.kernel;
  if (span < 0 || span / a.stride + 1 != a.out) return false;
  return (a.out - 1) * a.stride - a.pad_before < a.in;
}

/// A pool2d instance over `planes` = N * C planes (axis 0 = height, 1 = width).
struct PoolShape {
  int64_t planes;
  PoolAxis axis[2];
  bool max, adaptive;
  /// Average divisor: the clipped window's size (exclusive or adaptive) or kernel_h * kernel_w.
  bool count_clipped;
};

/// The input rectangle of one output element.
struct PoolRect {
  IndexSpan h, w;
  PC_NN_HD bool empty() const { return h.begin >= h.end || w.begin >= w.end; }
  PC_NN_HD bool contains(int64_t row, int64_t col) const {
    return row >= h.begin && row < h.end && col >= w.begin && col < w.end;
  }
};

PC_NN_HD inline PoolRect OutputRect(const PoolShape& p, int64_t oh, int64_t ow) {
  return {PoolWindow(p.axis[0], oh, p.adaptive), PoolWindow(p.axis[1], ow, p.adaptive)};
}

template <class T>
PC_NN_HD T PoolDivisor(const PoolShape& p, const PoolRect& r) {
  if (p.count_clipped) return static_cast<T>((r.h.end - r.h.begin) * (r.w.end - r.w.begin));
  return static_cast<T>(p.axis[0].kernel * p.axis[1].kernel);
}

/// Output element q (flat over [planes, out_h, out_w]): the max (skipping NaNs, as std::max does) or
/// the average of its window, summed row-major; 0 for an empty window. pool.cc's loops, step for step.
template <class T>
PC_NN_HD T PoolOutputAt(const PoolShape& p, const T* x, int64_t q) {
  const int64_t in_h = p.axis[0].in, in_w = p.axis[1].in, out_h = p.axis[0].out, out_w = p.axis[1].out;
  const int64_t ow = q % out_w, oh = (q / out_w) % out_h, plane = q / (out_w * out_h);
  PoolRect r = OutputRect(p, oh, ow);
  if (r.empty()) return T(0);
  const T* xp = x + plane * in_h * in_w;
  if (p.max) {
    T m = -static_cast<T>(INFINITY);
    for (int64_t h = r.h.begin; h < r.h.end; ++h)
      for (int64_t c = r.w.begin; c < r.w.end; ++c) {
        T v = xp[h * in_w + c];
        m = m < v ? v : m;
      }
    return m;
  }
  T sum = 0;
  for (int64_t h = r.h.begin; h < r.h.end; ++h)
    for (int64_t c = r.w.begin; c < r.w.end; ++c) sum += xp[h * in_w + c];
  return sum / PoolDivisor<T>(p, r);
}

/// The plane-local index of the first element (row-major) of output q's window equal to y[q], or -1
/// (empty window, or a NaN maximum): the element pool.cc's max gradient goes to.
template <class T>
PC_NN_HD int32_t PoolArgMaxAt(const PoolShape& p, const T* x, const T* y, int64_t q) {
  const int64_t in_h = p.axis[0].in, in_w = p.axis[1].in, out_h = p.axis[0].out, out_w = p.axis[1].out;
  const int64_t ow = q % out_w, oh = (q / out_w) % out_h, plane = q / (out_w * out_h);
  PoolRect r = OutputRect(p, oh, ow);
  const T* xp = x + plane * in_h * in_w;
  const T m = y[q];
  for (int64_t h = r.h.begin; h < r.h.end; ++h)
    for (int64_t c = r.w.begin; c < r.w.end; ++c)
      if (xp[h * in_w + c] == m) return static_cast<int32_t>(h * in_w + c);
  return -1;
}

/// X@GRAD element i of max pooling: the sum of dy over the outputs whose arg-max is i, gathered over
/// the covering outputs in row-major order, the order in which pool.cc's loops add into dx[i].
template <class T>
PC_NN_HD T PoolMaxGradAt(const PoolShape& p, const int32_t* arg, const T* dy, int64_t i) {
  const int64_t in_h = p.axis[0].in, in_w = p.axis[1].in, out_h = p.axis[0].out, out_w = p.axis[1].out;
  const int64_t c = i % in_w, h = (i / in_w) % in_h, plane = i / (in_w * in_h);
  const int32_t self = static_cast<int32_t>(h * in_w + c);
  IndexSpan rh = PoolCovering(p.axis[0], h, p.adaptive), rw = PoolCovering(p.axis[1], c, p.adaptive);
  const int64_t base = plane * out_h * out_w;
  T acc = 0;
  for (int64_t oh = rh.begin; oh < rh.end; ++oh)
    for (int64_t ow = rw.begin; ow < rw.end; ++ow) {
      const int64_t q = base + oh * out_w + ow;
      if (arg[q] == self) acc += dy[q];  // an arg-max lies inside its window: no membership test needed
    }
  return acc;
}

/// X@GRAD element i of average pooling: the sum of dy / divisor over the windows containing i, in
/// row-major output order (pool.cc's order of additions).
template <class T>
PC_NN_HD T PoolAvgGradAt(const PoolShape& p, const T* dy, int64_t i) {
  const int64_t in_h = p.axis[0].in, in_w = p.axis[1].in, out_h = p.axis[0].out, out_w = p.axis[1].out;
  const int64_t c = i % in_w, h = (i / in_w) % in_h, plane = i / (in_w * in_h);
  IndexSpan rh = PoolCovering(p.axis[0], h, p.adaptive), rw = PoolCovering(p.axis[1], c, p.adaptive);
  const int64_t base = plane * out_h * out_w;
  T acc = 0;
  for (int64_t oh = rh.begin; oh < rh.end; ++oh)
    for (int64_t ow = rw.begin; ow < rw.end; ++ow) {
      PoolRect r = OutputRect(p, oh, ow);
      // PoolCovering is exact (tested); the check keeps this right even if it were only a superset.
      if (!r.contains(h, c)) continue;
      acc += dy[base + oh * out_w + ow] / PoolDivisor<T>(p, r);
    }
  return acc;
}

// ---- Per-channel reductions (batch_norm) and column reductions (layer_norm) ----------------

/// Channel of flat element `i` of a tensor viewed as [outer, channels, inner].
PC_NN_HD inline int64_t ChannelOf(int64_t i, int64_t channels, int64_t inner) { return (i / inner) % channels; }

/// Flat index of the j-th element (j in [0, outer * inner)) of channel `c` in an [outer, channels, inner]
/// view, in memory order.
PC_NN_HD inline int64_t ChannelElement(int64_t c, int64_t j, int64_t channels, int64_t inner) {
  return ((j / inner) * channels + c) * inner + j % inner;
}

/// How a reduction of `m` elements per line over `lines` lines (channels, columns) is cut into
/// `parts` chunks of `chunk` consecutive elements each, one CUDA block per (line, part): enough
/// blocks to fill a GPU (about kTargetBlocks), at least kMinChunk elements per block. It depends only
/// on the sizes, never on the device, so the summation order (hence every bit of the result) is the
/// same on every GPU and every run.
struct ReductionSplit {
  int64_t parts, chunk;
};
inline constexpr int64_t kReductionTargetBlocks = 1024;
inline constexpr int64_t kReductionMinChunk = 2048;

PC_NN_HD inline ReductionSplit SplitReduction(int64_t m, int64_t lines) {
  if (m <= 0) return {1, 0};
  int64_t by_size = (m + kReductionMinChunk - 1) / kReductionMinChunk;
  int64_t by_blocks = lines > 0 ? (kReductionTargetBlocks + lines - 1) / lines : 1;
  int64_t parts = by_size < by_blocks ? by_size : by_blocks;
  if (parts < 1) parts = 1;
  int64_t chunk = (m + parts - 1) / parts;
  parts = (m + chunk - 1) / chunk;  // no empty trailing part
  return {parts, chunk};
}

// ---- Explicit padding (conv2d with asymmetric padding) -------------------------------------

/// The source row/column of padded index `p` of an axis padded by `before` in front of `in`
/// elements, or -1 in the padding.
PC_NN_HD inline int64_t UnpaddedIndex(int64_t p, int64_t before, int64_t in) {
  int64_t i = p - before;
  return (i >= 0 && i < in) ? i : -1;
}

// ---- Embedding (lookup_table_v2) ---------------------------------------------------------------

inline constexpr int64_t kNoPaddingIdx = -1;

/// True when `id` is the padding index (rows of zeros, no gradient).
PC_NN_HD inline bool IsPaddingId(int64_t id, int64_t padding_idx) {
  return padding_idx != kNoPaddingIdx && id == padding_idx;
}

/// The sort key of an id in the gradient: the row it adds into, or `vocab` (sorted last and skipped)
/// for the padding index and out-of-range ids.
PC_NN_HD inline uint32_t EmbeddingKey(int64_t id, int64_t vocab, int64_t padding_idx) {
  if (IsPaddingId(id, padding_idx) || id < 0 || id >= vocab) return static_cast<uint32_t>(vocab);
  return static_cast<uint32_t>(id);
}

/// The W@GRAD element (key, j) contributed by sorted position r, when r starts the run of its key:
/// the sum of dout[pos[q], j] over the run q = r, r + 1, ... in order. False (nothing to write) when r
/// does not start a run or its key is `skip` (padding and out-of-range ids).
template <class T>
PC_NN_HD bool EmbeddingRunSum(const uint32_t* sorted_keys, const uint32_t* sorted_pos, int64_t n, int64_t dim,
                              uint32_t skip, const T* dout, int64_t r, int64_t j, T* sum) {
  const uint32_t key = sorted_keys[r];
  if (key == skip || (r > 0 && sorted_keys[r - 1] == key)) return false;
  T acc = 0;
  for (int64_t q = r; q < n && sorted_keys[q] == key; ++q) acc += dout[static_cast<int64_t>(sorted_pos[q]) * dim + j];
  *sum = acc;
  return true;
}

/// The number of low bits that hold every key in [0, vocab] (the radix sort's end_bit).
PC_NN_HD inline int KeyBits(int64_t vocab) {
  int bits = 1;
  while (bits < 63 && (int64_t{1} << bits) <= vocab) ++bits;
  return bits;
}

// ---- Dropout -------------------------------------------------------------------------------------

/// Keep bits (bit l for element 4 * blk + l) of Philox block `blk` of draw `step`: dropout.cc keeps
/// element i iff ToUnitFloat(Block(step, i / 4)[i % 4]) >= p.
PC_NN_HD inline unsigned DropoutKeepBits(const Philox& philox, uint64_t step, int64_t blk, float p) {
  auto words = philox.Block(step, static_cast<uint64_t>(blk));
  unsigned bits = 0;
  for (int l = 0; l < 4; ++l) bits |= (Philox::ToUnitFloat(words[l]) >= p ? 1u : 0u) << l;
  return bits;
}

}  // namespace paddlec::ops::nn
