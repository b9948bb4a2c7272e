// nearest_interp_v2's and bilinear_interp_v2's geometry and per-element bodies as __host__ __device__
// functions on plain types, run by the CPU kernels (interp.cc) and the CUDA kernels (interp.cu) alike.
// No paddlec headers: nvcc compiles it.
//
// The source coordinates follow PaddlePaddle's interpolate kernels operation for operation, in float
// where they compute in float (a nearest index that lands on an integer boundary otherwise differs).
// The gradients gather instead of scattering: an input element sums over the outputs that read it, a
// contiguous range because the source index never decreases along an axis (InterpCovering), so no
// atomics are needed, the result is deterministic, and the CPU and the GPU add in the same order.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define PC_INTERP_HD __host__ __device__
#else
#define PC_INTERP_HD
#endif

namespace paddlec::ops::nn {

/// One resized axis: input and output sizes and the output-to-input coordinate ratio.
struct InterpAxis {
  int64_t in, out;
  float ratio;
};

/// A 2-D interpolation over [n, c, h, w] (channel_last: [n, h, w, c]); axis 0 = height, 1 = width.
struct InterpShape {
  int64_t n, c;
  InterpAxis axis[2];
  bool nearest;        // nearest neighbour, else bilinear
  bool align_corners;  // the corner pixels' centres are aligned (ratio (in - 1) / (out - 1))
  bool half_pixel;     // bilinear sampling at pixel centres: align_mode 0 without align_corners
  bool channel_last;
};

/// The two input indices and weights an output index samples along an axis (lo == hi at the edges;
/// nearest: lo == hi, w_lo = 1, w_hi = 0).
struct InterpTaps {
  int64_t lo, hi;
  float w_lo, w_hi;
};

PC_INTERP_HD inline InterpTaps InterpSource(const InterpShape& s, const InterpAxis& a, int64_t o) {
  const float r = a.ratio;
  if (s.nearest) {
    int64_t i = s.align_corners ? static_cast<int64_t>(static_cast<double>(r * static_cast<float>(o)) + 0.5)
                                : static_cast<int64_t>(r * static_cast<float>(o));
    i = i < a.in - 1 ? i : a.in - 1;  // a scale inconsistent with OutSize could reach past the edge
    return {i, i, 1.0f, 0.0f};
  }
  const double centre = static_cast<double>(r) * (static_cast<double>(o) + 0.5) - 0.5;
  int64_t lo = s.half_pixel ? static_cast<int64_t>(centre) : static_cast<int64_t>(r * static_cast<float>(o));
  lo = lo > 0 ? lo : 0;
  lo = lo < a.in - 1 ? lo : a.in - 1;
  const int64_t hi = lo + 1 < a.in - 1 ? lo + 1 : a.in - 1;
  float src = static_cast<float>(centre);
  src = src > 0 ? src : 0.0f;
  const float lambda = s.half_pixel ? src - static_cast<float>(lo) : r * static_cast<float>(o) - static_cast<float>(lo);
  return {lo, hi, 1.0f - lambda, lambda};
}

/// The weight with which output index o (taps t) reads input index i along an axis.
PC_INTERP_HD inline float InterpWeight(const InterpTaps& t, int64_t i) {
  return (t.lo == i ? t.w_lo : 0.0f) + (t.hi == i ? t.w_hi : 0.0f);
}

/// The smallest output index whose low tap is at least v (out when none): a binary search, the low
/// tap never decreasing along the axis.
PC_INTERP_HD inline int64_t InterpFirstAtLeast(const InterpShape& s, const InterpAxis& a, int64_t v) {
  int64_t lo = 0, hi = a.out;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (InterpSource(s, a, mid).lo >= v)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/// The output indices [begin, end) whose taps can read input index i: the low tap is i - 1 (the high
/// tap is then i) or i.
PC_INTERP_HD inline void InterpCovering(const InterpShape& s, const InterpAxis& a, int64_t i, int64_t* begin,
                                        int64_t* end) {
  *begin = InterpFirstAtLeast(s, a, s.nearest ? i : i - 1);
  *end = InterpFirstAtLeast(s, a, i + 1);
}

/// Offset of element (n, c, h, w) in a tensor with spatial sizes (hs, ws), in the layout of `s`.
PC_INTERP_HD inline int64_t InterpOffset(const InterpShape& s, int64_t n, int64_t c, int64_t hs, int64_t ws, int64_t h,
                                         int64_t w) {
  return s.channel_last ? ((n * hs + h) * ws + w) * s.c + c : ((n * s.c + c) * hs + h) * ws + w;
}

/// Splits a flat index over a tensor of spatial sizes (hs, ws) in the layout of `s` into n, c, h, w.
PC_INTERP_HD inline void InterpSplit(const InterpShape& s, int64_t hs, int64_t ws, int64_t q, int64_t idx[4]) {
  if (s.channel_last) {
    idx[1] = q % s.c;
    q /= s.c;
  }
  idx[3] = q % ws;
  q /= ws;
  idx[2] = q % hs;
  q /= hs;
  if (!s.channel_last) {
    idx[1] = q % s.c;
    q /= s.c;
  }
  idx[0] = q;
}

/// PaddlePaddle's bilinear sum of the four samples x_<h tap><w tap>, in its order of operations.
template <class T>
PC_INTERP_HD T InterpBlend(T x_ll, T x_hl, T x_lh, T x_hh, const InterpTaps& th, const InterpTaps& tw) {
  return x_ll * th.w_lo * tw.w_lo + x_hl * th.w_hi * tw.w_lo + x_lh * th.w_lo * tw.w_hi + x_hh * th.w_hi * tw.w_hi;
}

/// Output element q (flat): the nearest sample, or InterpBlend of the four around the source point.
template <class T>
PC_INTERP_HD T InterpOutputAt(const InterpShape& s, const T* x, int64_t q) {
  const InterpAxis &ah = s.axis[0], &aw = s.axis[1];
  int64_t idx[4];
  InterpSplit(s, ah.out, aw.out, q, idx);
  const InterpTaps th = InterpSource(s, ah, idx[2]), tw = InterpSource(s, aw, idx[3]);
  auto at = [&](int64_t h, int64_t w) { return x[InterpOffset(s, idx[0], idx[1], ah.in, aw.in, h, w)]; };
  if (s.nearest) return at(th.lo, tw.lo);
  return InterpBlend(at(th.lo, tw.lo), at(th.hi, tw.lo), at(th.lo, tw.hi), at(th.hi, tw.hi), th, tw);
}

/// Input gradient element q (flat): the sum over the output rows, then columns, reading it (ascending)
/// of dy times both axes' weights.
template <class T>
PC_INTERP_HD T InterpGradAt(const InterpShape& s, const T* dy, int64_t q) {
  const InterpAxis &ah = s.axis[0], &aw = s.axis[1];
  int64_t idx[4];
  InterpSplit(s, ah.in, aw.in, q, idx);
  int64_t h0, h1, w0, w1;
  InterpCovering(s, ah, idx[2], &h0, &h1);
  InterpCovering(s, aw, idx[3], &w0, &w1);
  T sum = 0;
  for (int64_t oh = h0; oh < h1; ++oh) {
    const float wh = InterpWeight(InterpSource(s, ah, oh), idx[2]);
    if (wh == 0.0f) continue;
    T row = 0;
    for (int64_t ow = w0; ow < w1; ++ow) {
      const float ww = InterpWeight(InterpSource(s, aw, ow), idx[3]);
      if (ww != 0.0f) row += dy[InterpOffset(s, idx[0], idx[1], ah.out, aw.out, oh, ow)] * ww;
    }
    sum += row * wh;
  }
  return sum;
}

}  // namespace paddlec::ops::nn
