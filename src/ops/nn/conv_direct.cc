// The few-input-channel direct convolution (conv_direct.h).
#include "nn/conv_direct.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <vector>

#include "common/microkernel.h"
#include "paddlec/runtime/threads.h"

namespace paddlec::ops::nn {

bool SmallConvFits(const ConvGeometry& g) {
#if defined(__AVX2__) && defined(__FMA__)
  const Window2d& w = g.w;
  if (g.groups != 1 || g.c > kSmallConvMaxChannels || g.c < 1 || g.o < 8) return false;
  for (int a = 0; a < 2; ++a)
    if (w.kernel[a] > 7 || w.stride[a] != 1 || w.dilation[a] != 1 || w.out[a] <= 0) return false;
  return true;
#else
  (void)g;  // AVX2 + FMA only; other builds run oneDNN's
  return false;
#endif
}

void SmallChannelConv::SetFilter(const ConvGeometry& g, const float* w) {
  const int64_t taps = g.c * g.w.kernel[0] * g.w.kernel[1];
  out_padded_ = (g.o + 7) / 8 * 8;
  w_.assign(out_padded_ * taps, 0.0f);
  for (int64_t o = 0; o < g.o; ++o)
    for (int64_t t = 0; t < taps; ++t) w_[((o / 8) * taps + t) * 8 + o % 8] = w[o * taps + t];
  w16_.clear();
#if defined(__AVX2__) && defined(__FMA__)
  if (!TilesUseAvx512()) return;
  // Pairs of 8-channel groups as 16 lanes: [out_padded / 16][c][kh][kw][16].
  w16_.assign(out_padded_ / 16 * taps * 16, 0.0f);
  for (int64_t o = 0; o < out_padded_ / 16 * 16 && o < g.o; ++o)
    for (int64_t t = 0; t < taps; ++t) w16_[((o / 16) * taps + t) * 16 + o % 16] = w[o * taps + t];
#endif
}

#if defined(__AVX2__) && defined(__FMA__)
namespace {

/// Eight adjacent output pixels of 8 channels whose windows lie inside the input: each filter
/// vector is loaded once for the eight (the tap loop is unrolled for the kernel width KW), and the
/// eight sums are independent, enough to hide the FMA latency (four ran at half the FMA rate).
template <int KW>
void EightPixels(const float* x, int64_t c_stride, int64_t row_stride, int64_t channels, int64_t kh, const float* w,
                 __m256 bias, bool relu, float* out) {
  __m256 a0 = bias, a1 = bias, a2 = bias, a3 = bias, a4 = bias, a5 = bias, a6 = bias, a7 = bias;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < kh; ++i) {
      const float* xr = x + c * c_stride + i * row_stride;
      const float* wr = w + (c * kh + i) * KW * 8;
#pragma GCC unroll 7
      for (int j = 0; j < KW; ++j) {
        const __m256 wj = _mm256_loadu_ps(wr + 8 * j);
        a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + j), wj, a0);
        a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + j + 1), wj, a1);
        a2 = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + j + 2), wj, a2);
        a3 = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + j + 3), wj, a3);
        a4 = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + j + 4), wj, a4);
        a5 = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + j + 5), wj, a5);
        a6 = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + j + 6), wj, a6);
        a7 = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + j + 7), wj, a7);
      }
    }
  __m256 acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
  for (int q = 0; q < 8; ++q) _mm256_storeu_ps(out + 8 * q, relu ? _mm256_max_ps(acc[q], _mm256_setzero_ps()) : acc[q]);
}

using EightPixelsFn = void (*)(const float*, int64_t, int64_t, int64_t, int64_t, const float*, __m256, bool, float*);
constexpr EightPixelsFn kEightPixels[] = {nullptr,        EightPixels<1>, EightPixels<2>, EightPixels<3>,
                                          EightPixels<4>, EightPixels<5>, EightPixels<6>, EightPixels<7>};

/// EightPixels for two groups of 8 output channels at once, in 16-lane registers, where the tiles
/// run on AVX-512 (common/microkernel.h's TilesUseAvx512): `w` is SetFilter's 16-lane packing,
/// and each pixel's lower 8 channels go to `lo`, the upper 8 to `hi`, as EightPixels writes a group.
template <int KW>
__attribute__((target("avx512f"))) void SixteenChannels(const float* x, int64_t c_stride, int64_t row_stride,
                                                        int64_t channels, int64_t kh, const float* w,
                                                        const float* bias16, bool relu, float* lo, float* hi) {
  const __m512 bias = _mm512_loadu_ps(bias16);
  __m512 a0 = bias, a1 = bias, a2 = bias, a3 = bias, a4 = bias, a5 = bias, a6 = bias, a7 = bias;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < kh; ++i) {
      const float* xr = x + c * c_stride + i * row_stride;
      const float* wr = w + (c * kh + i) * KW * 16;
#pragma GCC unroll 7
      for (int j = 0; j < KW; ++j) {
        const __m512 wj = _mm512_loadu_ps(wr + 16 * j);
        a0 = _mm512_fmadd_ps(_mm512_set1_ps(xr[j]), wj, a0);
        a1 = _mm512_fmadd_ps(_mm512_set1_ps(xr[j + 1]), wj, a1);
        a2 = _mm512_fmadd_ps(_mm512_set1_ps(xr[j + 2]), wj, a2);
        a3 = _mm512_fmadd_ps(_mm512_set1_ps(xr[j + 3]), wj, a3);
        a4 = _mm512_fmadd_ps(_mm512_set1_ps(xr[j + 4]), wj, a4);
        a5 = _mm512_fmadd_ps(_mm512_set1_ps(xr[j + 5]), wj, a5);
        a6 = _mm512_fmadd_ps(_mm512_set1_ps(xr[j + 6]), wj, a6);
        a7 = _mm512_fmadd_ps(_mm512_set1_ps(xr[j + 7]), wj, a7);
      }
    }
  const __m512 acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
  for (int q = 0; q < 8; ++q) {
    // The all-lanes masked forms: GCC 12's _mm512_max_ps, _mm512_castps512_ps256 and
    // _mm512_extractf64x4_pd warn of their own undefined operands.
    const __m512d v = _mm512_castps_pd(
        relu ? _mm512_maskz_max_ps(static_cast<__mmask16>(0xFFFF), acc[q], _mm512_setzero_ps()) : acc[q]);
    constexpr __mmask8 kAll = 0xFF;
    _mm256_storeu_ps(lo + 8 * q, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(kAll, v, 0)));
    _mm256_storeu_ps(hi + 8 * q, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(kAll, v, 1)));
  }
}

using SixteenChannelsFn = void (*)(const float*, int64_t, int64_t, int64_t, int64_t, const float*, const float*, bool,
                                   float*, float*);
constexpr SixteenChannelsFn kSixteenChannels[] = {nullptr,
                                                  SixteenChannels<1>,
                                                  SixteenChannels<2>,
                                                  SixteenChannels<3>,
                                                  SixteenChannels<4>,
                                                  SixteenChannels<5>,
                                                  SixteenChannels<6>,
                                                  SixteenChannels<7>};

}  // namespace

void SmallChannelConv::Forward(const ConvGeometry& g, const float* x, float* y, ActivationLayout yl,
                               const WinogradEpilogue& e, int threads) const {
  const int64_t C = g.c, H = g.w.in[0], W = g.w.in[1], KH = g.w.kernel[0], KW = g.w.kernel[1];
  const int64_t OH = g.w.out[0], OW = g.w.out[1], pt = g.w.pad_before(0), pl = g.w.pad_before(1);
  const int64_t K = g.o, groups = out_padded_ / 8, taps = C * KH * KW;
  const bool pooled = e.pool != nullptr, pool_max = pooled && e.pool->max;
  const int64_t YH = pooled ? OH / 2 : OH, YW = pooled ? OW / 2 : OW;
  // Each item copies its image into a zero-padded buffer first, so that every window lies inside
  // it: rows cover the padding, columns also the last group of eight pixels' overrun.
  const int64_t OW8 = (OW + 7) / 8 * 8, PH = OH + KH - 1, PW = OW8 + KW - 1;
  const EightPixelsFn eight = kEightPixels[KW];

  struct Buffers {
    AlignedVector<float> image, rows;
  };
  // An item is one image's 8 output channels or, on 16-lane registers, two such groups.
  const int64_t per_item = w16_.empty() ? 1 : 2, items_per_image = (groups + per_item - 1) / per_item;
  const int64_t items = g.n * items_per_image;
  auto run_item = [&](int64_t item, Buffers& buf) {
    const int64_t n = item / items_per_image, first = item % items_per_image * per_item;
    const int64_t count = std::min(per_item, groups - first);  // groups of 8 channels
    float bias_lanes[16] = {};
    if (e.bias != nullptr)
      for (int64_t l = 0; l < 8 * count && first * 8 + l < K; ++l) bias_lanes[l] = e.bias[first * 8 + l];
    buf.image.assign(C * PH * PW, 0.0f);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t r = 0; r < PH; ++r) {
        const int64_t h = r - pt;
        if (h < 0 || h >= H) continue;
        const int64_t c0 = std::max<int64_t>(0, pl), c1 = std::min(PW, W + pl);  // padded columns inside x
        if (c1 > c0)
          std::copy_n(x + ((n * C + c) * H + h) * W + c0 - pl, c1 - c0, buf.image.data() + (c * PH + r) * PW + c0);
      }
    // Group j's rows: two output rows of 8 channels per pixel, at rows(j) and rows(j) + 8 * OW8.
    buf.rows.resize(count * 2 * OW8 * 8);
    auto rows = [&](int64_t j) { return buf.rows.data() + j * 2 * OW8 * 8; };
    auto conv_row = [&](int64_t oh, int64_t slot) {
      const float* in = buf.image.data() + oh * PW;
      if (count == 2) {
        const float* wv = w16_.data() + first / 2 * taps * 16;
        for (int64_t ow = 0; ow < OW8; ow += 8)
          kSixteenChannels[KW](in + ow, PH * PW, PW, C, KH, wv, bias_lanes, e.relu, rows(0) + slot * 8 * OW8 + 8 * ow,
                               rows(1) + slot * 8 * OW8 + 8 * ow);
        return;
      }
      const float* wv = w_.data() + first * taps * 8;
      const __m256 bias = _mm256_loadu_ps(bias_lanes);
      for (int64_t ow = 0; ow < OW8; ow += 8)
        eight(in + ow, PH * PW, PW, C, KH, wv, bias, e.relu, rows(0) + slot * 8 * OW8 + 8 * ow);
    };
    // Where output pixel (h, w)'s 8 channels of group j go: contiguous in a blocked layout, a plane
    // apart in NCHW.
    const int64_t b = yl.block;
    float* base[2];
    int64_t lanes[2];
    for (int64_t j = 0; j < count; ++j) {
      const int64_t k0 = (first + j) * 8;
      base[j] = b != 0 ? y + ((n * (K / b) + k0 / b) * YH * YW) * b + k0 % b : y + (n * K + k0) * YH * YW;
      lanes[j] = std::min<int64_t>(8, K - k0);
    }
    alignas(32) float tmp[8];
    auto store = [&](int64_t j, int64_t h, int64_t w, __m256 v) {
      if (b != 0) {
        _mm256_storeu_ps(base[j] + (h * YW + w) * b, v);
        return;
      }
      _mm256_store_ps(tmp, v);
      for (int64_t l = 0; l < lanes[j]; ++l) base[j][l * YH * YW + h * YW + w] = tmp[l];
    };
    if (!pooled) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        conv_row(oh, 0);
        for (int64_t j = 0; j < count; ++j)
          for (int64_t ow = 0; ow < OW; ++ow) store(j, oh, ow, _mm256_loadu_ps(rows(j) + 8 * ow));
      }
      return;
    }
    const __m256 quarter = _mm256_set1_ps(0.25f);
    for (int64_t ph = 0; ph < YH; ++ph) {
      conv_row(2 * ph, 0);
      conv_row(2 * ph + 1, 1);
      for (int64_t j = 0; j < count; ++j)
        for (int64_t pw = 0; pw < YW; ++pw) {
          const float* r = rows(j) + 16 * pw;
          const __m256 p = _mm256_loadu_ps(r), q = _mm256_loadu_ps(r + 8);
          const __m256 u = _mm256_loadu_ps(r + 8 * OW8), v = _mm256_loadu_ps(r + 8 * OW8 + 8);
          store(j, ph, pw,
                pool_max ? _mm256_max_ps(_mm256_max_ps(p, q), _mm256_max_ps(u, v))
                         : _mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(p, q), _mm256_add_ps(u, v)), quarter));
        }
    }
  };

  const int team = static_cast<int>(std::min<int64_t>(std::max(threads, 1), items));
  if (team <= 1) {
    Buffers buf;
    for (int64_t i = 0; i < items; ++i) run_item(i, buf);
    return;
  }
  std::vector<Buffers> bufs(team);
  runtime::RunTasks(items, team, [&](int64_t i, int slot) { run_item(i, bufs[slot]); });
}
namespace {

/// Images whose filter gradients one work item sums (in order) before they join the total.
constexpr int64_t kImagesPerItem = 4;

/// acc[kw] (8 output channels) += dy8 at each of a row's `ow` pixels times the input KW taps to
/// its right, for one filter row: `xr` is that row of the padded image, `d` the row's pixels'
/// gradients, 8 floats each. Pixels go in pairs, each with its own accumulators, so that 2 x KW
/// independent sums hide the FMA latency (KW chains alone ran at a third of the FMA throughput).
template <int KW>
void TapRow(const float* xr, const float* d, int64_t ow, __m256* acc) {
  __m256 a[KW], b[KW];
  for (int j = 0; j < KW; ++j) a[j] = acc[j], b[j] = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 2 <= ow; p += 2) {
    const __m256 d0 = _mm256_loadu_ps(d + 8 * p), d1 = _mm256_loadu_ps(d + 8 * p + 8);
#pragma GCC unroll 7
    for (int j = 0; j < KW; ++j) {
      a[j] = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + p + j), d0, a[j]);
      b[j] = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + p + 1 + j), d1, b[j]);
    }
  }
  if (p < ow) {
    const __m256 d0 = _mm256_loadu_ps(d + 8 * p);
    for (int j = 0; j < KW; ++j) a[j] = _mm256_fmadd_ps(_mm256_broadcast_ss(xr + p + j), d0, a[j]);
  }
  for (int j = 0; j < KW; ++j) acc[j] = _mm256_add_ps(a[j], b[j]);
}

/// out[p * 8 + l] = planes[l][p] for 8 planes of `pixels` floats (planes past `lanes` read as zeros):
/// 8 x 8 blocks transposed in registers.
void InterleavePlanes(const float* const planes[8], int64_t lanes, int64_t pixels, float* out) {
  int64_t p = 0;
  const __m256 zero = _mm256_setzero_ps();
  for (; p + 8 <= pixels; p += 8) {
    __m256 r[8];
    for (int l = 0; l < 8; ++l) r[l] = l < lanes ? _mm256_loadu_ps(planes[l] + p) : zero;
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    float* o = out + p * 8;
    _mm256_storeu_ps(o + 0, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(o + 8, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(o + 16, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(o + 24, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(o + 32, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(o + 40, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(o + 48, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(o + 56, _mm256_permute2f128_ps(u3, u7, 0x31));
  }
  for (; p < pixels; ++p)
    for (int64_t l = 0; l < 8; ++l) out[p * 8 + l] = l < lanes ? planes[l][p] : 0.0f;
}

using TapRowFn = void (*)(const float*, const float*, int64_t, __m256*);
constexpr TapRowFn kTapRow[] = {nullptr, TapRow<1>, TapRow<2>, TapRow<3>, TapRow<4>, TapRow<5>, TapRow<6>, TapRow<7>};

}  // namespace

void SmallConvBackwardWeights(const ConvGeometry& g, const float* x, const float* dy, ActivationLayout dy_layout,
                              float* df, int threads) {
  const int64_t C = g.c, H = g.w.in[0], W = g.w.in[1], KH = g.w.kernel[0], KW = g.w.kernel[1];
  const int64_t OH = g.w.out[0], OW = g.w.out[1], pt = g.w.pad_before(0), pl = g.w.pad_before(1);
  const int64_t K = g.o, groups = (K + 7) / 8, taps = C * KH * KW, pixels = OH * OW;
  const int64_t image_blocks = (g.n + kImagesPerItem - 1) / kImagesPerItem, items = image_blocks * groups;
  const int64_t PH = OH + KH - 1, PW = OW + KW - 1, b = dy_layout.block;
  const TapRowFn tap_row = kTapRow[KW];
  // Per item: the taps of 8 channels, [taps][8], summed over its images; added up in item order.
  std::vector<float> partial(items * taps * 8);

  struct Buffers {
    AlignedVector<float> image, grad;
  };
  auto run_item = [&](int64_t item, Buffers& buf) {
    const int64_t ib = item / groups, kg = item % groups, k0 = kg * 8, lanes = std::min<int64_t>(8, K - k0);
    __m256 acc[kSmallConvMaxChannels * 7 * 7];
    for (int64_t t = 0; t < taps; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t n = ib * kImagesPerItem; n < std::min(g.n, (ib + 1) * kImagesPerItem); ++n) {
      // The image, zero-padded so that every tap of every output pixel lies inside it.
      buf.image.assign(C * PH * PW, 0.0f);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t h = 0; h < H; ++h) {
          const int64_t r = h + pt, c0 = std::max<int64_t>(0, pl), c1 = std::min(PW, W + pl);
          if (r >= 0 && r < PH && c1 > c0)
            std::copy_n(x + ((n * C + c) * H + h) * W + c0 - pl, c1 - c0, buf.image.data() + (c * PH + r) * PW + c0);
        }
      // The 8 channels' gradient at each pixel, contiguous: as stored in an 8-channel block, copied
      // out of a 16-channel block or gathered from NCHW planes (missing channels are zeros).
      const float* d = nullptr;
      if (b == 8) {
        d = dy + (n * (K / 8) + kg) * pixels * 8;
      } else if (b == 0) {
        buf.grad.resize(pixels * 8);
        const float* planes[8];
        for (int64_t l = 0; l < 8; ++l) planes[l] = dy + (n * K + std::min(k0 + l, K - 1)) * pixels;
        InterleavePlanes(planes, lanes, pixels, buf.grad.data());
        d = buf.grad.data();
      } else {  // 16-channel blocks: this group's half of each pixel's 16
        buf.grad.resize(pixels * 8);
        const float* src = dy + (n * (K / b) + k0 / b) * pixels * b + k0 % b;
        for (int64_t p = 0; p < pixels; ++p) std::copy_n(src + p * b, 8, buf.grad.data() + p * 8);
        d = buf.grad.data();
      }
      for (int64_t c = 0; c < C; ++c)
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t oh = 0; oh < OH; ++oh)
            tap_row(buf.image.data() + (c * PH + oh + kh) * PW, d + oh * OW * 8, OW, acc + (c * KH + kh) * KW);
    }
    float* out = partial.data() + item * taps * 8;
    for (int64_t t = 0; t < taps; ++t) _mm256_storeu_ps(out + t * 8, acc[t]);
  };

  const int team = static_cast<int>(std::min<int64_t>(std::max(threads, 1), items));
  if (team <= 1) {
    Buffers buf;
    for (int64_t i = 0; i < items; ++i) run_item(i, buf);
  } else {
    std::vector<Buffers> bufs(team);
    runtime::RunTasks(items, team, [&](int64_t i, int slot) { run_item(i, bufs[slot]); });
  }
  for (int64_t k = 0; k < K; ++k)
    for (int64_t t = 0; t < taps; ++t) {
      float s = 0.0f;
      for (int64_t ib = 0; ib < image_blocks; ++ib) s += partial[((ib * groups + k / 8) * taps + t) * 8 + k % 8];
      df[k * taps + t] = s;
    }
}
#else
void SmallConvBackwardWeights(const ConvGeometry&, const float*, const float*, ActivationLayout, float*, int) {
}  // never called: SmallConvFits is false without AVX2 and FMA
void SmallChannelConv::Forward(const ConvGeometry&, const float*, float*, ActivationLayout, const WinogradEpilogue&,
                               int) const {}  // never called: SmallConvFits is false without AVX2 and FMA
#endif

}  // namespace paddlec::ops::nn
