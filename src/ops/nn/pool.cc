// pool2d and pool2d_grad: max / average pooling over NCHW tensors with PaddlePaddle's attributes
// (explicit, SAME and VALID padding, ceil_mode, exclusive averages, global and adaptive pooling).
//
// Window semantics (PaddlePaddle's Pool2dFunctor): output row oh covers input rows
// [oh * stride - pad_top, + ksize) clipped to the input; adaptive pooling covers
// [floor(oh * H / OH), ceil((oh + 1) * H / OH)). An average divides by the clipped window's size when
// `exclusive` or `adaptive`, else by ksize_h * ksize_w. A window that covers no input element (only
// possible with large paddings or ceil_mode) outputs 0. The max gradient goes to the first maximal
// element of each window in row-major order.
//
// float32 forward runs on oneDNN pooling (plain NCHW, primitive cached per op instance) unless the
// pooling is adaptive or has empty windows; the rest, and both gradients, are loops over planes.
#include <algorithm>
#include <cstring>
#include <dnnl.hpp>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "common/cpu_kernels.h"
#include "nn/conv_onednn.h"
#include "nn/nn.h"
#include "nn/pool_slots.h"
#include "nn/window.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/runtime/onednn.h"

namespace paddlec::ops {
namespace {

using namespace pool;  // NOLINT: the op's shared slots and attributes
using nn::Window2d;

struct PoolGeometry {
  int64_t n = -1, c = -1;
  Window2d w;
  bool operator==(const PoolGeometry&) const = default;
};

/// Checks attributes and the input shape and computes the pooling geometry (unknown dims stay -1).
Status PoolGeometryOf(const Dims& x, const PoolAttrs& a, PoolGeometry& g) {
  if (a.data_format == "NHWC")
    return MakeError(ErrorCode::kUnimplemented,
                     "data_format 'NHWC' is not supported: pool2d takes NCHW input (set data_format to \"NCHW\" and "
                     "transpose the input)");
  if (x.rank() != 4)
    return MakeError(ErrorCode::kShape, "X has shape {} (rank {}) but pool2d needs a 4-D NCHW input", x.ToString(),
                     x.rank());
  if (a.ksize.size() != 2)
    return MakeError(ErrorCode::kShape, "attribute 'ksize' has {} values but pool2d needs 2 (height, width)",
                     a.ksize.size());
  if (a.window.strides.size() != 2)
    return MakeError(ErrorCode::kShape, "attribute 'strides' has {} values but pool2d needs 2 (height, width)",
                     a.window.strides.size());
  if (a.window.paddings.size() != 2 && a.window.paddings.size() != 4)
    return MakeError(ErrorCode::kShape,
                     "attribute 'paddings' has {} values but pool2d needs 2 (height, width) or 4 (top, bottom, left, "
                     "right)",
                     a.window.paddings.size());
  g.n = x[0];
  g.c = x[1];
  Window2d& w = g.w;
  for (int ax = 0; ax < 2; ++ax) {
    w.in[ax] = x[2 + ax];
    w.kernel[ax] = a.ksize[ax];
    w.stride[ax] = a.window.strides[ax];
  }
  // PaddlePaddle's order: padding algorithm, then global/adaptive pooling drop the padding, then
  // global pooling widens the window to the whole input.
  nn::ResolvePadding(a.window.paddings, a.window.algorithm, w);
  if (a.global || a.adaptive) std::fill(w.pad, w.pad + 4, 0);
  if (a.global)
    for (int ax = 0; ax < 2; ++ax) w.kernel[ax] = w.in[ax];
  if (a.adaptive) {
    for (int ax = 0; ax < 2; ++ax) w.out[ax] = w.kernel[ax];
    return Status::OK();
  }
  if (a.global) {
    w.out[0] = w.out[1] = 1;
    return Status::OK();
  }
  nn::ComputeOutputSize(w, a.ceil_mode);
  for (int ax = 0; ax < 2; ++ax) {
    if (w.out[ax] != -2) continue;
    return MakeError(ErrorCode::kShape,
                     "X has shape {} but the pooling window {} {} does not fit the input {} {} padded by {} and {}",
                     x.ToString(), nn::AxisName(ax), w.kernel[ax], nn::AxisName(ax), w.in[ax], w.pad_before(ax),
                     w.pad_after(ax));
  }
  return Status::OK();
}

Status InferPool(InferShapeContext& ctx) {
  PoolGeometry g;
  PC_RETURN_IF_ERROR(PoolGeometryOf(ctx.InputDims(kX), PoolAttrs::Decode(ctx.attrs()), g));
  ctx.SetOutput(kOut, Dims{g.n, g.c, g.w.out[0], g.w.out[1]}, ctx.InputDType(kX));
  return Status::OK();
}

Status InferPoolGrad(InferShapeContext& ctx) {
  PoolGeometry g;
  Dims x = ctx.InputDims(kX);
  PC_RETURN_IF_ERROR(PoolGeometryOf(x, PoolAttrs::Decode(ctx.attrs()), g));
  Dims expected{g.n, g.c, g.w.out[0], g.w.out[1]};
  for (InSlot s : {kOutIn, kDOut})
    if (!DimsMatch(ctx.InputDims(s), expected))
      return ctx.Fail("{} has shape {} but pool2d of X {} produces {}", s.name, ctx.InputDims(s).ToString(),
                      x.ToString(), expected.ToString());
  ctx.ShareDims(kX, kDX);
  return Status::OK();
}

// ---- Loops ----------------------------------------------------------------------------------

/// The input range [begin, end) one output index covers along an axis, clipped to the input.
struct Range {
  int64_t begin, end;
};
inline Range WindowRange(const Window2d& w, int ax, int64_t o, bool adaptive) {
  if (adaptive) return {o * w.in[ax] / w.out[ax], ((o + 1) * w.in[ax] + w.out[ax] - 1) / w.out[ax]};
  int64_t b = o * w.stride[ax] - w.pad_before(ax);
  return {std::max<int64_t>(b, 0), std::min(b + w.kernel[ax], w.in[ax])};
}

/// Calls fn(plane) for every (n, c) plane, split across the CPU pool.
template <class F>
void ForEachPlane(const PoolGeometry& g, F&& fn) {
  int64_t plane = g.w.in[0] * g.w.in[1];
  ParallelFor(g.n * g.c, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(plane, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t p = b; p < e; ++p) fn(p);
              });
}

template <class T>
void PoolForwardLoops(const PoolGeometry& g, const PoolAttrs& a, const T* x, T* y) {
  const Window2d& w = g.w;
  const int64_t hw = w.in[0] * w.in[1], ohw = w.out[0] * w.out[1];
  const T full = static_cast<T>(w.kernel[0] * w.kernel[1]);
  ForEachPlane(g, [&](int64_t p) {
    const T* xp = x + p * hw;
    T* yp = y + p * ohw;
    for (int64_t oh = 0; oh < w.out[0]; ++oh) {
      Range rh = WindowRange(w, 0, oh, a.adaptive);
      for (int64_t ow = 0; ow < w.out[1]; ++ow) {
        Range rw = WindowRange(w, 1, ow, a.adaptive);
        T result = 0;
        if (rh.begin < rh.end && rw.begin < rw.end) {
          if (a.max) {
            T m = -std::numeric_limits<T>::infinity();
            for (int64_t h = rh.begin; h < rh.end; ++h)
              for (int64_t col = rw.begin; col < rw.end; ++col) m = std::max(m, xp[h * w.in[1] + col]);
            result = m;
          } else {
            T s = 0;
            for (int64_t h = rh.begin; h < rh.end; ++h)
              for (int64_t col = rw.begin; col < rw.end; ++col) s += xp[h * w.in[1] + col];
            T count = (a.exclusive || a.adaptive) ? static_cast<T>((rh.end - rh.begin) * (rw.end - rw.begin)) : full;
            result = s / count;
          }
        }
        yp[oh * w.out[1] + ow] = result;
      }
    }
  });
}

/// Whether `g` pools 2x2 max windows of stride 2 without padding (the pooling of most CNNs), their
/// outputs covering the input exactly when `exact` (an odd last row or column is otherwise left out).
bool MaxWindows2x2(const PoolGeometry& g, const PoolAttrs& a, bool exact) {
  const Window2d& w = g.w;
  if (!a.max || a.adaptive || w.kernel[0] != 2 || w.kernel[1] != 2 || w.stride[0] != 2 || w.stride[1] != 2 ||
      w.dilation[0] != 1 || w.dilation[1] != 1 || w.pad[0] || w.pad[1] || w.pad[2] || w.pad[3])
    return false;
  for (int ax = 0; ax < 2; ++ax)
    if (exact ? w.out[ax] * 2 != w.in[ax] : w.out[ax] * 2 > w.in[ax]) return false;
  return true;
}

/// The 2x2, stride-2, unpadded max pool of most CNNs, as straight vectorizable row loops: oneDNN's
/// plain-NCHW pooling runs several times slower than memory speed on these shapes.
template <class T>
bool MaxPool2x2(const PoolGeometry& g, const PoolAttrs& a, const T* x, T* y) {
  const Window2d& w = g.w;
  if (!MaxWindows2x2(g, a, false)) return false;
  const int64_t in_w = w.in[1], hw = w.in[0] * w.in[1], oh_n = w.out[0], ow = w.out[1], ohw = oh_n * ow;
  // Rows of a LeNet-sized plane are too short for the vectorizer (14 outputs), so each plane is done
  // in two long loops: the max of each row pair into scratch, then the max of each column pair.
  ForEachPlane(g, [&](int64_t p) {
    thread_local std::vector<T> scratch;
    if (static_cast<int64_t>(scratch.size()) < oh_n * 2 * ow) scratch.resize(oh_n * 2 * ow);
    T* t = scratch.data();
    const T* xp = x + p * hw;
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      const T* r0 = xp + 2 * oh * in_w;
      const T* r1 = r0 + in_w;
      T* tr = t + oh * 2 * ow;
      for (int64_t k = 0; k < 2 * ow; ++k) tr[k] = std::max(r0[k], r1[k]);
    }
    T* yp = y + p * ohw;
    for (int64_t q = 0; q < ohw; ++q) yp[q] = std::max(t[2 * q], t[2 * q + 1]);
  });
  return true;
}

#if defined(__AVX2__)
/// One row of MaxPool2x2Backward's windows in AVX2 lanes, 4 windows (8 columns) a step: lanes 2i and
/// 2i + 1 are one window's two columns, its maximum and gradient spread to both. The same first-max
/// rule as the scalar loop, as lane masks.
void MaxPool2x2BackwardRow(const float* x0, const float* x1, const float* m, const float* d, float* d0, float* d1,
                           int64_t cols) {
  const __m256i spread = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const __m256i first = _mm256_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6);  // each lane's window's first column
  const __m256i other = _mm256_setr_epi32(1, 0, 3, 2, 5, 4, 7, 6);  // the window's other column
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 second = _mm256_castsi256_ps(_mm256_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1));
  const __m256 all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  auto window = [&](__m256 a0, __m256 a1, __m128 m4, __m128 d4, __m256& out0, __m256& out1) {
    const __m256 mv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(m4), spread);
    const __m256 dv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(d4), spread);
    const __m256 e0 = _mm256_cmp_ps(a0, mv, _CMP_EQ_OQ), e1 = _mm256_cmp_ps(a1, mv, _CMP_EQ_OQ);
    // Top row: a maximal column, the second one only when the first is not maximal.
    const __m256 top = _mm256_andnot_ps(_mm256_and_ps(second, _mm256_permutevar8x32_ps(e0, first)), e0);
    // Bottom row, only when no top column is maximal: the first column if maximal; the second when
    // the first is not (it takes the gradient then even if not equal, as the scalar loop's a11).
    const __m256 top_any = _mm256_or_ps(e0, _mm256_permutevar8x32_ps(e0, other));
    const __m256 bottom_first = _mm256_andnot_ps(top_any, e1);
    const __m256 bottom_second = _mm256_andnot_ps(_mm256_or_ps(top_any, _mm256_permutevar8x32_ps(e1, first)), all);
    out0 = _mm256_and_ps(top, dv);
    out1 = _mm256_and_ps(_mm256_blendv_ps(bottom_first, bottom_second, second), dv);
  };
  int64_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    __m256 out0, out1;
    window(_mm256_loadu_ps(x0 + j), _mm256_loadu_ps(x1 + j), _mm_loadu_ps(m + j / 2), _mm_loadu_ps(d + j / 2), out0,
           out1);
    _mm256_storeu_ps(d0 + j, out0);
    _mm256_storeu_ps(d1 + j, out1);
  }
  if (j < cols) {  // 1 to 3 windows left: masked lanes neither read nor write memory
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(cols - j)), lane);
    const __m128i mask4 = _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>((cols - j) / 2)), _mm_setr_epi32(0, 1, 2, 3));
    __m256 out0, out1;
    window(_mm256_maskload_ps(x0 + j, mask), _mm256_maskload_ps(x1 + j, mask), _mm_maskload_ps(m + j / 2, mask4),
           _mm_maskload_ps(d + j / 2, mask4), out0, out1);
    _mm256_maskstore_ps(d0 + j, mask, out0);
    _mm256_maskstore_ps(d1 + j, mask, out1);
  }
}
#endif

/// Backward of MaxPool2x2: each window's gradient goes to its first maximal element (row-major, as
/// PoolBackwardLoops), chosen by masks over the four positions so every dX element is stored once,
/// with no zero fill and no branches: the generic loops ran at 2.6x PyTorch's time per call. float32
/// rows run in AVX2 lanes (MaxPool2x2BackwardRow): GCC left LeNet's 14- and 7-window rows scalar, at
/// 1.04 ms a call (both layers' average), 7x the forward pool's time.
template <class T>
bool MaxPool2x2Backward(const PoolGeometry& g, const PoolAttrs& a, const T* x, const T* y, const T* dy, T* dx) {
  const Window2d& w = g.w;
  if (!MaxWindows2x2(g, a, true)) return false;
  const int64_t in_w = w.in[1], hw = w.in[0] * w.in[1], oh_n = w.out[0], ow_n = w.out[1], ohw = oh_n * ow_n;
  ForEachPlane(g, [&](int64_t p) {
    const T* xp = x + p * hw;
    const T* yp = y + p * ohw;
    const T* dyp = dy + p * ohw;
    T* dxp = dx + p * hw;
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      const T* x0 = xp + 2 * oh * in_w;
      const T* x1 = x0 + in_w;
      T* d0 = dxp + 2 * oh * in_w;
      T* d1 = d0 + in_w;
      const T* m = yp + oh * ow_n;
      const T* d = dyp + oh * ow_n;
#if defined(__AVX2__)
      if constexpr (std::is_same_v<T, float>) {
        MaxPool2x2BackwardRow(x0, x1, m, d, d0, d1, in_w);
        continue;
      }
#endif
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        // Bitwise, not short-circuit, logic: which element is maximal is data, so branches on it
        // mispredict about every other window.
        const T mv = m[ow], dv = d[ow];
        const bool e00 = x0[2 * ow] == mv, e01 = x0[2 * ow + 1] == mv, e10 = x1[2 * ow] == mv;
        const bool a01 = e01 & !e00, a10 = e10 & !(e00 | e01), a11 = !(e00 | e01 | e10);
        d0[2 * ow] = e00 ? dv : T(0);
        d0[2 * ow + 1] = a01 ? dv : T(0);
        d1[2 * ow] = a10 ? dv : T(0);
        d1[2 * ow + 1] = a11 ? dv : T(0);
      }
    }
  });
  return true;
}

// ---- Blocked layouts ---------------------------------------------------------------------------

/// The channels a ChannelLanes step covers: the smallest block of oneDNN's layouts (nChw8c), so the
/// same loops serve nChw16c, whose blocks are two such steps.
constexpr int64_t kPoolLanes = 8;

/// An NCHW-shaped float32 tensor read kPoolLanes channels at a time, in either layout: channels c0 to
/// c0 + 7 (c0 a multiple of 8) of one pixel lie Lane() floats apart (1 when blocked, H * W when
/// plain), and pixel (y, x) of those channels starts (y * W + x) * Pixel() floats after Base.
template <bool kBlocked>
struct ChannelLanes {
  int64_t c, h, w;
  int block;  // channels per block when kBlocked
  int64_t Base(int64_t n, int64_t c0) const {
    if constexpr (kBlocked) return (n * (c / block) + c0 / block) * h * w * block + c0 % block;
    return (n * c + c0) * h * w;
  }
  int64_t Pixel() const { return kBlocked ? block : 1; }
  int64_t Lane() const { return kBlocked ? 1 : h * w; }
};

/// Calls fn(n, c0, row) for every image, group of kPoolLanes channels and row of `rows`, split
/// across the CPU pool.
template <class F>
void ForEachLaneRow(const PoolGeometry& g, int64_t rows, int64_t row_floats, F&& fn) {
  const int64_t groups = g.c / kPoolLanes;
  ParallelFor(g.n * groups * rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(row_floats, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) fn(r / rows / groups, r / rows % groups * kPoolLanes, r % rows);
              });
}

#if defined(__AVX2__)
/// kPoolLanes channels' values, kContiguous or `step` floats apart, as one vector (and back).
template <bool kContiguous>
__m256 LoadLanes(const float* p, int64_t step) {
  if constexpr (kContiguous) return _mm256_loadu_ps(p);
  return _mm256_setr_ps(p[0], p[step], p[2 * step], p[3 * step], p[4 * step], p[5 * step], p[6 * step], p[7 * step]);
}
template <bool kContiguous>
void StoreLanes(float* p, int64_t step, __m256 v) {
  if constexpr (kContiguous) {
    _mm256_storeu_ps(p, v);
  } else {
    alignas(32) float t[kPoolLanes];
    _mm256_store_ps(t, v);
    for (int64_t l = 0; l < kPoolLanes; ++l) p[l * step] = t[l];
  }
}
#endif

/// MaxPool2x2 with X and Out each in either layout: lane l of a step is channel c0 + l, so the
/// channel-blocked layout is read and written in whole vectors with no shuffles. std::max in
/// MaxPool2x2's order (rows first, then columns), so NaNs propagate as there; _mm256_max_ps(b, a)
/// is std::max(a, b), NaNs and signed zeros included.
template <bool kXBlocked, bool kYBlocked>
void MaxPool2x2Lanes(const PoolGeometry& g, int block, const float* x, float* y) {
  const ChannelLanes<kXBlocked> xv{g.c, g.w.in[0], g.w.in[1], block};
  const ChannelLanes<kYBlocked> yv{g.c, g.w.out[0], g.w.out[1], block};
  const int64_t xl = xv.Lane(), xp = xv.Pixel(), xr = g.w.in[1] * xp, yl = yv.Lane(), yp = yv.Pixel();
  const int64_t ow_n = g.w.out[1];
  ForEachLaneRow(g, g.w.out[0], 4 * kPoolLanes * ow_n, [&](int64_t n, int64_t c0, int64_t oh) {
    const float* r0 = x + xv.Base(n, c0) + 2 * oh * xr;
    const float* r1 = r0 + xr;
    float* q = y + yv.Base(n, c0) + oh * ow_n * yp;
    for (int64_t ow = 0; ow < ow_n; ++ow, r0 += 2 * xp, r1 += 2 * xp, q += yp) {
#if defined(__AVX2__)
      const __m256 left = _mm256_max_ps(LoadLanes<kXBlocked>(r1, xl), LoadLanes<kXBlocked>(r0, xl));
      const __m256 right = _mm256_max_ps(LoadLanes<kXBlocked>(r1 + xp, xl), LoadLanes<kXBlocked>(r0 + xp, xl));
      StoreLanes<kYBlocked>(q, yl, _mm256_max_ps(right, left));
#else
      for (int64_t l = 0; l < kPoolLanes; ++l)
        q[l * yl] = std::max(std::max(r0[l * xl], r1[l * xl]), std::max(r0[xp + l * xl], r1[xp + l * xl]));
#endif
    }
  });
}

/// MaxPool2x2Backward with X (and X@GRAD) and Out (and Out@GRAD) each in either layout: the same
/// first-maximum rule, as lane masks.
template <bool kXBlocked, bool kYBlocked>
void MaxPool2x2BackwardLanes(const PoolGeometry& g, int block, const float* x, const float* y, const float* dy,
                             float* dx) {
  const ChannelLanes<kXBlocked> xv{g.c, g.w.in[0], g.w.in[1], block};
  const ChannelLanes<kYBlocked> yv{g.c, g.w.out[0], g.w.out[1], block};
  const int64_t xl = xv.Lane(), xp = xv.Pixel(), xr = g.w.in[1] * xp, yl = yv.Lane(), yp = yv.Pixel();
  const int64_t ow_n = g.w.out[1];
  ForEachLaneRow(g, g.w.out[0], 4 * kPoolLanes * ow_n, [&](int64_t n, int64_t c0, int64_t oh) {
    const int64_t xo = xv.Base(n, c0) + 2 * oh * xr, yo = yv.Base(n, c0) + oh * ow_n * yp;
    const float *x0 = x + xo, *x1 = x0 + xr, *m = y + yo, *d = dy + yo;
    float *d0 = dx + xo, *d1 = d0 + xr;
    for (int64_t ow = 0; ow < ow_n; ++ow, x0 += 2 * xp, x1 += 2 * xp, d0 += 2 * xp, d1 += 2 * xp, m += yp, d += yp) {
#if defined(__AVX2__)
      const __m256 mv = LoadLanes<kYBlocked>(m, yl), dv = LoadLanes<kYBlocked>(d, yl);
      const __m256 e00 = _mm256_cmp_ps(LoadLanes<kXBlocked>(x0, xl), mv, _CMP_EQ_OQ);
      const __m256 e01 = _mm256_cmp_ps(LoadLanes<kXBlocked>(x0 + xp, xl), mv, _CMP_EQ_OQ);
      const __m256 e10 = _mm256_cmp_ps(LoadLanes<kXBlocked>(x1, xl), mv, _CMP_EQ_OQ);
      const __m256 top = _mm256_or_ps(e00, e01);
      StoreLanes<kXBlocked>(d0, xl, _mm256_and_ps(e00, dv));
      StoreLanes<kXBlocked>(d0 + xp, xl, _mm256_and_ps(_mm256_andnot_ps(e00, e01), dv));
      StoreLanes<kXBlocked>(d1, xl, _mm256_and_ps(_mm256_andnot_ps(top, e10), dv));
      StoreLanes<kXBlocked>(d1 + xp, xl, _mm256_andnot_ps(_mm256_or_ps(top, e10), dv));
#else
      for (int64_t l = 0; l < kPoolLanes; ++l) {
        const float mv = m[l * yl], dv = d[l * yl];
        const bool e00 = x0[l * xl] == mv, e01 = x0[xp + l * xl] == mv, e10 = x1[l * xl] == mv;
        d0[l * xl] = e00 ? dv : 0.0f;
        d0[xp + l * xl] = (e01 && !e00) ? dv : 0.0f;
        d1[l * xl] = (e10 && !(e00 || e01)) ? dv : 0.0f;
        d1[xp + l * xl] = !(e00 || e01 || e10) ? dv : 0.0f;
      }
#endif
    }
  });
}

/// Global average pooling with X (and X@GRAD) in either layout. Out is [N, C, 1, 1], the same bytes
/// in both layouts. Each channel sums its pixels in row-major order, as PoolForwardLoops.
template <bool kXBlocked>
void GlobalAvgLanes(const PoolGeometry& g, int block, const float* x, float* y) {
  const ChannelLanes<kXBlocked> xv{g.c, g.w.in[0], g.w.in[1], block};
  const int64_t xl = xv.Lane(), xp = xv.Pixel(), hw = g.w.in[0] * g.w.in[1];
  ForEachLaneRow(g, 1, kPoolLanes * hw, [&](int64_t n, int64_t c0, int64_t) {
    const float* __restrict p = x + xv.Base(n, c0);
    float sum[kPoolLanes] = {};
    for (int64_t i = 0; i < hw; ++i, p += xp)
      for (int64_t l = 0; l < kPoolLanes; ++l) sum[l] += p[l * xl];
    for (int64_t l = 0; l < kPoolLanes; ++l) y[n * g.c + c0 + l] = sum[l] / static_cast<float>(hw);
  });
}

/// The gradient of GlobalAvgLanes: every pixel of a channel gets its share of dy, in X's layout.
template <bool kXBlocked>
void GlobalAvgBackwardLanes(const PoolGeometry& g, int block, const float* dy, float* dx) {
  const ChannelLanes<kXBlocked> xv{g.c, g.w.in[0], g.w.in[1], block};
  const int64_t xl = xv.Lane(), xp = xv.Pixel(), hw = g.w.in[0] * g.w.in[1];
  ForEachLaneRow(g, 1, kPoolLanes * hw, [&](int64_t n, int64_t c0, int64_t) {
    float share[kPoolLanes];
    for (int64_t l = 0; l < kPoolLanes; ++l) share[l] = dy[n * g.c + c0 + l] / static_cast<float>(hw);
    float* __restrict p = dx + xv.Base(n, c0);
    for (int64_t i = 0; i < hw; ++i, p += xp)
      for (int64_t l = 0; l < kPoolLanes; ++l) p[l * xl] = share[l];
  });
}

/// The poolings the blocked layout supports (the layout pass blocks no other): 2x2 max windows of
/// stride 2 tiling the input exactly, and global averages.
enum class LanePool { kNone, kMax2x2, kGlobalAvg };

LanePool LanePoolOf(const PoolGeometry& g, const PoolAttrs& a) {
  if (!a.max && a.global && !a.adaptive) return LanePool::kGlobalAvg;
  if (MaxWindows2x2(g, a, true)) return LanePool::kMax2x2;
  return LanePool::kNone;
}

/// An error unless a pooling said to have blocked tensors can: float32, channels a whole number of
/// blocks, and a LanePool.
template <class T>
Status CheckBlockedPool(const PoolGeometry& g, const PoolAttrs& a, int block) {
  if (!std::is_same_v<T, float>)
    return MakeError(ErrorCode::kUnimplemented,
                     "blocked_input and blocked_output (oneDNN's blocked layout) need float32, not float64");
  if (g.c % block != 0)
    return MakeError(ErrorCode::kShape, "X has {} channels, not a multiple of the blocked layout's {}", g.c, block);
  if (LanePoolOf(g, a) == LanePool::kNone)
    return MakeError(ErrorCode::kUnimplemented,
                     "blocked_input and blocked_output are implemented for 2x2 max pooling of stride 2 without "
                     "padding over even input sizes, and for global average pooling; compile at -O1 or below to "
                     "keep NCHW");
  return Status::OK();
}

/// Calls fn.template operator()<kXBlocked, kYBlocked>() for the layouts in `a`.
template <class F>
void WithLayouts(const PoolAttrs& a, F&& fn) {
  if (a.blocked_input)
    a.blocked_output ? fn.template operator()<true, true>() : fn.template operator()<true, false>();
  else
    a.blocked_output ? fn.template operator()<false, true>() : fn.template operator()<false, false>();
}

void PoolLanes(const PoolGeometry& g, const PoolAttrs& a, int block, const float* x, float* y) {
  WithLayouts(a, [&]<bool kX, bool kY>() {
    if (LanePoolOf(g, a) == LanePool::kMax2x2)
      MaxPool2x2Lanes<kX, kY>(g, block, x, y);
    else
      GlobalAvgLanes<kX>(g, block, x, y);
  });
}

void PoolBackwardLanes(const PoolGeometry& g, const PoolAttrs& a, int block, const float* x, const float* y,
                       const float* dy, float* dx) {
  WithLayouts(a, [&]<bool kX, bool kY>() {
    if (LanePoolOf(g, a) == LanePool::kMax2x2)
      MaxPool2x2BackwardLanes<kX, kY>(g, block, x, y, dy, dx);
    else
      GlobalAvgBackwardLanes<kX>(g, block, dy, dx);
  });
}

template <class T>
void PoolBackwardLoops(const PoolGeometry& g, const PoolAttrs& a, const T* x, const T* y, const T* dy, T* dx) {
  const Window2d& w = g.w;
  const int64_t hw = w.in[0] * w.in[1], ohw = w.out[0] * w.out[1];
  const T full = static_cast<T>(w.kernel[0] * w.kernel[1]);
  ForEachPlane(g, [&](int64_t p) {
    const T* xp = x + p * hw;
    const T* yp = y + p * ohw;
    const T* dyp = dy + p * ohw;
    T* dxp = dx + p * hw;
    std::fill(dxp, dxp + hw, T(0));
    for (int64_t oh = 0; oh < w.out[0]; ++oh) {
      Range rh = WindowRange(w, 0, oh, a.adaptive);
      for (int64_t ow = 0; ow < w.out[1]; ++ow) {
        Range rw = WindowRange(w, 1, ow, a.adaptive);
        if (rh.begin >= rh.end || rw.begin >= rw.end) continue;
        T d = dyp[oh * w.out[1] + ow];
        if (a.max) {
          T m = yp[oh * w.out[1] + ow];
          bool done = false;
          for (int64_t h = rh.begin; h < rh.end && !done; ++h)
            for (int64_t col = rw.begin; col < rw.end; ++col)
              if (xp[h * w.in[1] + col] == m) {
                dxp[h * w.in[1] + col] += d;
                done = true;
                break;
              }
        } else {
          T count = (a.exclusive || a.adaptive) ? static_cast<T>((rh.end - rh.begin) * (rw.end - rw.begin)) : full;
          T share = d / count;
          for (int64_t h = rh.begin; h < rh.end; ++h)
            for (int64_t col = rw.begin; col < rw.end; ++col) dxp[h * w.in[1] + col] += share;
        }
      }
    }
  });
}

/// True when some output window covers no input element (large paddings or ceil_mode).
bool HasEmptyWindow(const Window2d& w) {
  for (int ax = 0; ax < 2; ++ax)
    if (w.pad_before(ax) >= w.kernel[ax] || (w.out[ax] - 1) * w.stride[ax] - w.pad_before(ax) >= w.in[ax]) return true;
  return false;
}

// ---- Kernels --------------------------------------------------------------------------------

PoolGeometry RunGeometry(const Dims& x, const PoolAttrs& attrs) {
  PoolGeometry g;
  Status st = PoolGeometryOf(x, attrs, g);
  (void)st;  // shape inference already reported any error
  return g;
}

/// oneDNN pooling on plain NCHW float32, rebuilt when the geometry changes. Only its jit
/// implementations are used: for few channels oneDNN falls back to simple_nchw, which measured 6x
/// slower than the loops (0.031 vs 0.005 ms for 2x3x28x28, 2x2 max), while on the LeNet shapes the jit
/// kernel is 4-6x faster than the loops (64x32x28x28: 0.27 vs 0.99-1.20 ms; 64x64x14x14: 0.14 vs
/// 0.65-0.82 ms; 1 thread).
class OneDnnPool {
 public:
  /// Pools x into y and sets *done, or leaves *done false when the loops should do it.
  Status Forward(runtime::OneDnnHandles& h, const PoolGeometry& g, const PoolAttrs& a, const float* x, float* y,
                 bool* done) {
    *done = false;
    if (!(g_ == g) || !built_) {
      g_ = g;
      built_ = true;
      use_ = a.adaptive || HasEmptyWindow(g.w) ? false : Build(h, g, a);
    }
    if (!use_) return Status::OK();
    try {
      src_.set_data_handle(const_cast<float*>(x));
      dst_.set_data_handle(y);
      prim_.execute(h.stream, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}, {DNNL_ARG_SCRATCHPAD, scratch_}});
      h.stream.wait();
    } catch (const dnnl::error& e) {
      return MakeError(ErrorCode::kInternal, "oneDNN pooling failed: {} (status {})", e.what(),
                       static_cast<int>(e.status));
    }
    *done = true;
    return Status::OK();
  }

 private:
  /// Builds the primitive; false when oneDNN has no fast implementation for this configuration.
  bool Build(runtime::OneDnnHandles& h, const PoolGeometry& g, const PoolAttrs& a) {
    const Window2d& w = g.w;
    using dnnl::memory;
    try {
      memory::desc src({g.n, g.c, w.in[0], w.in[1]}, memory::data_type::f32, memory::format_tag::nchw);
      memory::desc dst({g.n, g.c, w.out[0], w.out[1]}, memory::data_type::f32, memory::format_tag::nchw);
      // oneDNN wants the right/bottom padding that makes its floor formula give our output size.
      memory::dims pad_r(2);
      for (int ax = 0; ax < 2; ++ax)
        pad_r[ax] =
            std::max(w.pad_after(ax), (w.out[ax] - 1) * w.stride[ax] + w.kernel[ax] - w.in[ax] - w.pad_before(ax));
      auto alg = a.max         ? dnnl::algorithm::pooling_max
                 : a.exclusive ? dnnl::algorithm::pooling_avg_exclude_padding
                               : dnnl::algorithm::pooling_avg_include_padding;
      dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src, dst, {w.stride[0], w.stride[1]},
                                       {w.kernel[0], w.kernel[1]}, {w.pad_before(0), w.pad_before(1)}, pad_r);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::pooling_forward::primitive_desc pd(desc, attr, h.engine);
      if (!std::string_view(pd.impl_info_str()).starts_with("jit")) return false;
      prim_ = dnnl::pooling_forward(pd);
      src_ = memory(src, h.engine, DNNL_MEMORY_NONE);
      dst_ = memory(dst, h.engine, DNNL_MEMORY_NONE);
      scratch_ = memory(pd.scratchpad_desc(), h.engine);
    } catch (const dnnl::error&) {
      return false;  // a configuration oneDNN does not implement (e.g. padding >= window): loops
    }
    return true;
  }

  bool built_ = false, use_ = false;
  PoolGeometry g_;
  dnnl::pooling_forward prim_;
  dnnl::memory src_, dst_, scratch_;
};

template <class T>
class PoolKernel final : public OpKernel {
 public:
  explicit PoolKernel(const KernelInit& init) : attrs_(PoolAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    Tensor& out = ctx.Out(kOut);
    PoolGeometry g = RunGeometry(x.dims(), attrs_);
    if (out.numel() == 0) return Status::OK();
    if (attrs_.blocked_input || attrs_.blocked_output) {
      const int block = nn::ActivationBlockChannels();
      PC_RETURN_IF_ERROR(CheckBlockedPool<T>(g, attrs_, block));
      if constexpr (std::is_same_v<T, float>) PoolLanes(g, attrs_, block, x.data<float>(), out.data<float>());
      return Status::OK();
    }
    if (MaxPool2x2(g, attrs_, x.data<T>(), out.data<T>())) return Status::OK();
    if constexpr (std::is_same_v<T, float>) {
      bool done = false;
      PC_RETURN_IF_ERROR(onednn_.Forward(ctx.device_as<runtime::CpuContext>().onednn(), g, attrs_, x.data<float>(),
                                         out.data<float>(), &done));
      if (done) return Status::OK();
    }
    PoolForwardLoops(g, attrs_, x.data<T>(), out.data<T>());
    return Status::OK();
  }

 private:
  PoolAttrs attrs_;
  OneDnnPool onednn_;
};

template <class T>
Status PoolGradCpu(KernelContext& ctx, const PoolAttrs& attrs) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr || dx->numel() == 0) return Status::OK();
  const Tensor& x = ctx.In(kX);
  PoolGeometry g = RunGeometry(x.dims(), attrs);
  if (attrs.blocked_input || attrs.blocked_output) {
    const int block = nn::ActivationBlockChannels();
    PC_RETURN_IF_ERROR(CheckBlockedPool<T>(g, attrs, block));
    if constexpr (std::is_same_v<T, float>)
      PoolBackwardLanes(g, attrs, block, x.data<float>(), ctx.In(kOutIn).data<float>(), ctx.In(kDOut).data<float>(),
                        dx->data<float>());
    return Status::OK();
  }
  if (MaxPool2x2Backward(g, attrs, x.data<T>(), ctx.In(kOutIn).data<T>(), ctx.In(kDOut).data<T>(), dx->data<T>()))
    return Status::OK();
  PoolBackwardLoops(g, attrs, x.data<T>(), ctx.In(kOutIn).data<T>(), ctx.In(kDOut).data<T>(), dx->data<T>());
  return Status::OK();
}

}  // namespace

void RegisterPoolOps(OpRegistry& r) {
  r.Add("pool2d")
      .Doc(
          "2-D max or average pooling of an NCHW batch over ksize windows moved by strides, with zero padding "
          "excluded from maxima; global pooling reduces each plane to 1x1, adaptive pooling splits each plane into "
          "ksize nearly equal windows.")
      .Input(kX, "Input batch [N, C, H, W].")
      .Output(kOut, "Pooled batch [N, C, OH, OW].")
      .Attr("pooling_type", "max", "max or avg.")
      .AllowedValues({"max", "avg"})
      .RequiredAttr<std::vector<int>>("ksize", "Window size (height, width); the output size when adaptive.")
      .NonEmpty()
      .Min(1)
      .Attr("strides", std::vector<int>{1, 1}, "Window strides (height, width).")
      .Min(1)
      .Attr("paddings", std::vector<int>{0, 0},
            "Padding: 2 values (height, width; both sides) or 4 (top, bottom, left, right). Used when "
            "padding_algorithm is EXPLICIT; ignored by global and adaptive pooling.")
      .Min(0)
      .Attr("global_pooling", false, "Pool each whole plane to 1x1 (ksize and paddings are ignored).")
      .Attr("ceil_mode", false, "Round the output size up instead of down.")
      .Attr("exclusive", true, "Average over the window's input elements only, not over ksize_h * ksize_w.")
      .Attr("adaptive", false, "Adaptive pooling: ksize is the output size; windows tile the input.")
      .Attr("data_format", "NCHW", "Layout of X and Out. Only NCHW (and AnyLayout, read as NCHW) is supported.")
      .AllowedValues({"NCHW", "NHWC", "AnyLayout"})
      .Attr("padding_algorithm", "EXPLICIT",
            "EXPLICIT uses `paddings`; SAME pads so that OH = ceil(H / stride_h) (extra pixel at the bottom/right); "
            "VALID pads nothing.")
      .AllowedValues({"EXPLICIT", "SAME", "VALID"})
      .Attr("is_test", false, "PaddlePaddle hint: inference only; ignored.")
      .ExtraAttr()
      .Attr("blocked_input", false,
            "paddlec: X (and in the gradient op X@GRAD) is in oneDNN's channel-blocked layout (nChw16c, or nChw8c "
            "without AVX-512), set by the layout pass for 2x2 max pooling of stride 2 and global average pooling; "
            "the float32 CPU kernels honour it, the GPU kernels keep NCHW throughout.")
      .Attr("blocked_output", false,
            "paddlec: Out (and in the gradient op Out@GRAD) is in oneDNN's channel-blocked layout, as blocked_input.")
      .InferShape(InferPool)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<PoolKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<PoolKernel<double>>());

  r.Add("pool2d_grad")
      .GradOf("pool2d")
      .Doc(
          "Gradient of pool2d: a max window's gradient goes to its first maximal element; an average window's is "
          "shared equally by the elements it averaged.")
      .Input(kX, "The forward input.")
      .Input(kOutIn, "The forward output (locates the maxima).")
      .Input(kDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferPoolGrad)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(PoolGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(PoolGradCpu<double>));
}

}  // namespace paddlec::ops
