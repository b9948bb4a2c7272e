// Winograd F(2x2, 3x3) and F(4x4, 3x3) convolution (winograd.h). F(2x2, 3x3)'s transform matrices
// are
//   B' = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A' = [1 1 1 0; 0 1 -1 -1];
// F(4x4, 3x3)'s are written where they are applied (FilterColumn, PatchTransform4, OutputTile4, and
// TileTransforms<4> for the filter gradient).
#include "nn/winograd.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/microkernel.h"
#include "paddlec/core/env.h"
#include "paddlec/runtime/threads.h"

namespace paddlec::ops::nn {
namespace {

constexpr int kRows = 6;   // tiles per GEMM micro-tile (rows of the transformed input): kTileRows
constexpr int kCols = 16;  // output channels per micro-tile (two AVX2 registers): kTileCols
constexpr int kLanes = 8;  // channels transformed together (one AVX2 register)
// Floats of one block's transformed input and products: about half of a 512 KB L2, the filter's
// transform taking most of the rest for 64 x 64 channels.
constexpr int64_t kBlockFloats = 64 * 1024;
constexpr int64_t kMaxBlockTiles = 240;

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

bool FitsCommon(const ConvGeometry& g) {
#if defined(__AVX2__) && defined(__FMA__)
  const Window2d& w = g.w;
  if (g.groups != 1 || g.c < kWinogradMinChannels || g.o < kWinogradMinChannels) return false;
  for (int a = 0; a < 2; ++a)
    if (w.kernel[a] != 3 || w.stride[a] != 1 || w.dilation[a] != 1 || w.pad_before(a) > 2 || w.pad_after(a) > 2 ||
        w.out[a] <= 0)
      return false;
  return true;
#else
  (void)g;  // the kernels below are AVX2 + FMA; other builds run oneDNN's
  return false;
#endif
}

/// The filter transforms work on kLanes output channels at once (one vector per tap): a training
/// step transforms every filter again, and one channel pair at a time it cost as much as a small
/// batch (ResNet-20 has about 30,000 pairs).
using Lanes = float[kLanes];

/// out[0..tile+1] = G times the column (a, b, c), lane by lane, for F(tile x tile, 3x3):
///   F(2x2): G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1];
///   F(4x4): G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1],
/// its fractions as multiplies by their rounded values.
template <int kTile>
void FilterColumn(const Lanes& a, const Lanes& b, const Lanes& c, Lanes* out) {
  for (int l = 0; l < kLanes; ++l) {
    if constexpr (kTile == 2) {
      out[0][l] = a[l];
      out[1][l] = 0.5f * (a[l] + b[l] + c[l]);
      out[2][l] = 0.5f * (a[l] - b[l] + c[l]);
      out[3][l] = c[l];
    } else {
      constexpr float k6 = 1.0f / 6, k12 = 1.0f / 12, k24 = 1.0f / 24;
      const float ac = a[l] + c[l];
      out[0][l] = a[l] * 0.25f;
      out[1][l] = -(ac + b[l]) * k6;
      out[2][l] = -(ac - b[l]) * k6;
      out[3][l] = a[l] * k24 + b[l] * k12 + c[l] * k6;
      out[4][l] = a[l] * k24 - b[l] * k12 + c[l] * k6;
      out[5][l] = c[l];
    }
  }
}

/// U = G g G' for kLanes 3x3 filters (g[tap][lane]), U[xi] written at u + xi * stride (xi = (tile +
/// 2) i + j), kLanes consecutive floats.
template <int kTile>
void TransformFilters(const Lanes g[9], float* u, int64_t stride) {
  constexpr int kIn = kTile + 2;
  Lanes t[3][kIn];  // column j of g, transformed
  for (int j = 0; j < 3; ++j) FilterColumn<kTile>(g[j], g[3 + j], g[6 + j], t[j]);
  for (int i = 0; i < kIn; ++i) {
    Lanes r[kIn];
    FilterColumn<kTile>(t[0][i], t[1][i], t[2][i], r);
    for (int j = 0; j < kIn; ++j) std::copy_n(r[j], kLanes, u + (i * kIn + j) * stride);
  }
}

/// Scratch of one thread: a block's transformed input V and products M.
struct Scratch {
  AlignedVector<float> v, m;
};

}  // namespace

bool WinogradEnabled() {
  static const bool enabled = [] {
    return EnvChoice(kWinogradSwitch) != "off";
  }();
  return enabled;
}

bool WinogradFits(const ConvGeometry& g) { return FitsCommon(g); }

bool WinogradPaysOff(const ConvGeometry& g, ActivationLayout input) {
  return FitsCommon(g) && (input.block != 0 || std::min(g.c, g.o) >= kWinogradPlainMinChannels);
}

bool WinogradBackwardPaysOff(const ConvGeometry& g) { return WinogradPaysOff(g, {}); }

namespace {

/// Tiles of `points` points that one block of the filter gradient holds (BackwardWeightsTiles),
/// before clamping.
int64_t GradientBlockTiles(const ConvGeometry& g, int64_t points) {
  return kBlockFloats / (points * (RoundUp(RoundUp(g.c, kLanes), kRows) + RoundUp(g.o, kCols)));
}

}  // namespace

bool WinogradTrainingPaysOff() {
#if defined(__AVX2__) && defined(__FMA__)
  return !Avx512DoublesFma();
#else
  return true;  // moot: without AVX2 nothing fits Winograd (WinogradFits)
#endif
}

bool WinogradFilterGradientPaysOff(const ConvGeometry& g) {
  return WinogradBackwardPaysOff(g) && WinogradTrainingPaysOff() &&
         GradientBlockTiles(g, 16) >= kWinogradMinGradientBlockTiles;
}

bool WinogradPoolFits(const ConvGeometry& g, const ConvPool& p) {
  for (int a = 0; a < 2; ++a)
    if (p.w.kernel[a] != 2 || p.w.stride[a] != 2 || p.w.dilation[a] != 1 || p.w.pad_before(a) != 0 ||
        p.w.pad_after(a) != 0 || g.w.out[a] % 2 != 0 || p.w.out[a] != g.w.out[a] / 2)
      return false;
  return true;
}

/// One run's sizes: an input of `c` channels (h x w) to `k` channels (oh x ow), padded by pt/pl at
/// the top and left (the bottom and right follow from the sizes).
struct WinogradConv::Shape {
  int64_t n, c, k, h, w, oh, ow, pt, pl;
};

void WinogradConv::SetFilter(const ConvGeometry& g, const float* w, int tile, bool per_call) {
  Transform(tile != 0 ? tile : WinogradTile(g.n, g.w.out[0], g.w.out[1], per_call), g.c, g.o,
            [&](int64_t k, int64_t c, float f[9]) { std::copy(w + (k * g.c + c) * 9, w + (k * g.c + c + 1) * 9, f); });
}

void WinogradConv::SetFilterForBackwardData(const ConvGeometry& g, const float* w, int tile) {
  // dx's channel k is the forward input channel, dy's channel c the forward output channel.
  Transform(tile != 0 ? tile : WinogradTile(g.n, g.w.in[0], g.w.in[1], true), g.o, g.c,
            [&](int64_t k, int64_t c, float f[9]) {
              const float* src = w + (c * g.c + k) * 9;
              for (int i = 0; i < 9; ++i) f[i] = src[8 - i];
            });
}

int WinogradTile(int64_t n, int64_t out_h, int64_t out_w, bool per_call) {
  if (std::min(out_h, out_w) < kWinogradF4MinOutput) return 2;
  return !per_call || n * ((out_h + 3) / 4) * ((out_w + 3) / 4) >= kWinogradF4MinTiles ? 4 : 2;
}

template <class F>
void WinogradConv::Transform(int tile, int64_t in, int64_t out, F&& filter) {
  tile_ = tile;
  in_ = in;
  in_padded_ = RoundUp(in, kLanes);
  out_ = out;
  out_padded_ = RoundUp(out, kCols);
  const int64_t points = (tile + 2) * (tile + 2);
  u_.assign(points * out_padded_ * in_padded_, 0.0f);
  const int64_t xi_stride = out_padded_ * in_padded_;
  float f[9];
  for (int64_t c = 0; c < in_; ++c)
    for (int64_t k0 = 0; k0 < out_; k0 += kLanes) {
      Lanes g[9] = {};  // tap i of output channels k0.. (zeros past the last)
      for (int64_t l = 0; l < std::min<int64_t>(kLanes, out_ - k0); ++l) {
        filter(k0 + l, c, f);
        for (int i = 0; i < 9; ++i) g[i][l] = f[i];
      }
      float* u = u_.data() + ((k0 / kCols) * in_padded_ + c) * kCols + k0 % kCols;
      if (tile == 4)
        TransformFilters<4>(g, u, xi_stride);
      else
        TransformFilters<2>(g, u, xi_stride);
    }
}

void WinogradConv::Forward(const ConvGeometry& g, const float* x, ActivationLayout x_layout, float* y,
                           ActivationLayout y_layout, const WinogradEpilogue& e, int threads) const {
  Run({g.n, g.c, g.o, g.w.in[0], g.w.in[1], g.w.out[0], g.w.out[1], g.w.pad_before(0), g.w.pad_before(1)}, x, x_layout,
      y, y_layout, e, threads);
}

void WinogradConv::BackwardData(const ConvGeometry& g, const float* dy, ActivationLayout dy_layout, float* dx,
                                ActivationLayout dx_layout, int threads) const {
  Run({g.n, g.o, g.c, g.w.out[0], g.w.out[1], g.w.in[0], g.w.in[1], 2 - g.w.pad_before(0), 2 - g.w.pad_before(1)}, dy,
      dy_layout, dx, dx_layout, {}, threads);
}

#if defined(__AVX2__) && defined(__FMA__)
namespace {

/// An activation viewed as groups of kLanes consecutive channels: nChw{block}c with block 8 or 16.
struct LaneView {
  int64_t channels, h, w, block;
  /// The kLanes channels from c0 (a multiple of kLanes) of pixel (h, w) of image n.
  int64_t At(int64_t n, int64_t c0, int64_t hh, int64_t ww) const {
    const int64_t group = block == kLanes ? c0 >> 3 : c0 >> 4;  // c0 / block without a division
    return ((n * (channels / block) + group) * h + hh) * w * block + ww * block + (c0 & (block - 1));
  }
};

/// d[kIn r + c] = the kIn x kIn patch at (h0, w0), channels c0..c0+7, zero outside the image
/// (`inside`: the whole patch lies inside it).
template <int kIn>
inline void LoadPatch(const float* x, const LaneView& in, int64_t n, int64_t c0, int64_t h0, int64_t w0, bool inside,
                      __m256 d[kIn * kIn]) {
  const int64_t row = in.w * in.block;
  if (inside) {
    const float* base = x + in.At(n, c0, h0, w0);
    for (int p = 0; p < kIn * kIn; ++p) d[p] = _mm256_loadu_ps(base + (p / kIn) * row + (p % kIn) * in.block);
    return;
  }
  // A border tile: the patch's origin may lie outside the image, so offsets go from (h0, w0) = (0, 0).
  const float* base = x + in.At(n, c0, 0, 0);
  for (int p = 0; p < kIn * kIn; ++p) {
    const int64_t h = h0 + p / kIn, w = w0 + p % kIn;
    d[p] =
        h >= 0 && w >= 0 && h < in.h && w < in.w ? _mm256_loadu_ps(base + h * row + w * in.block) : _mm256_setzero_ps();
  }
}

/// v = (B' d B) of the 4x4 patch at (h0, w0), channels c0..c0+7, zero outside the image.
inline void PatchTransform(const float* x, const LaneView& in, int64_t n, int64_t c0, int64_t h0, int64_t w0,
                           bool inside, __m256 v[16]) {
  __m256 d[16];
  LoadPatch<4>(x, in, n, c0, h0, w0, inside, d);
  __m256 t[16];  // B' d
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm256_sub_ps(d[j], d[8 + j]);
    t[4 + j] = _mm256_add_ps(d[4 + j], d[8 + j]);
    t[8 + j] = _mm256_sub_ps(d[8 + j], d[4 + j]);
    t[12 + j] = _mm256_sub_ps(d[4 + j], d[12 + j]);
  }
  for (int i = 0; i < 4; ++i) {  // (B' d) B
    const __m256* r = t + 4 * i;
    v[4 * i + 0] = _mm256_sub_ps(r[0], r[2]);
    v[4 * i + 1] = _mm256_add_ps(r[1], r[2]);
    v[4 * i + 2] = _mm256_sub_ps(r[2], r[1]);
    v[4 * i + 3] = _mm256_sub_ps(r[1], r[3]);
  }
}

/// `x` (NCHW, `c` channels of h x w, n images) as 8-channel groups: `x` itself when `layout` is
/// blocked, else a copy in nChw8c (channels padded to a multiple of 8 with zeros) in `copy`.
const float* AsLanes(const float* x, ActivationLayout layout, int64_t n, int64_t c, int64_t h, int64_t w, int team,
                     AlignedVector<float>& copy, LaneView& view) {
  const int64_t c8 = RoundUp(c, kLanes);
  view = {c8, h, w, layout.block};
  if (layout.block != 0) return x;
  view.block = kLanes;
  copy.resize(n * c8 * h * w);
  const int64_t hw = h * w, groups = n * (c8 / kLanes);
  runtime::RunTasks(groups, team, [&](int64_t gi, int) {
    const int64_t img = gi / (c8 / kLanes), c0 = gi % (c8 / kLanes) * kLanes;
    float* dst = copy.data() + gi * hw * kLanes;
    for (int l = 0; l < kLanes; ++l) {
      const float* src = c0 + l < c ? x + (img * c + c0 + l) * hw : nullptr;
      for (int64_t p = 0; p < hw; ++p) dst[p * kLanes + l] = src != nullptr ? src[p] : 0.0f;
    }
  });
  return copy.data();
}

/// The tile's 2x2 outputs for channels k0..k0+7: A' m A + bias, then the relu.
inline void OutputTile(const float* m, int64_t xi_stride, __m256 bias, bool relu, __m256 out[4]) {
  __m256 a[2][4];
  for (int j = 0; j < 4; ++j) {
    const __m256 m0 = _mm256_loadu_ps(m + j * xi_stride), m1 = _mm256_loadu_ps(m + (4 + j) * xi_stride);
    const __m256 m2 = _mm256_loadu_ps(m + (8 + j) * xi_stride), m3 = _mm256_loadu_ps(m + (12 + j) * xi_stride);
    a[0][j] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
    a[1][j] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
  }
  for (int r = 0; r < 2; ++r) {
    out[2 * r] = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[r][0], a[r][1]), a[r][2]), bias);
    out[2 * r + 1] = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(a[r][1], a[r][2]), a[r][3]), bias);
  }
  if (relu)
    for (int q = 0; q < 4; ++q) out[q] = _mm256_max_ps(out[q], _mm256_setzero_ps());
}

/// The 6x6 patch at (h0, w0) of F(4x4, 3x3), channels c0..c0+7, zero outside the image,
/// transformed: v = B' d B (xi = 6 i + j), with
///   B' = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1].
inline void PatchTransform4(const float* x, const LaneView& in, int64_t n, int64_t c0, int64_t h0, int64_t w0,
                            bool inside, __m256 v[36]) {
  const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f);
  // B' applied to six vectors d[0], d[s], ..., d[5 s].
  auto bt = [&](const __m256* d, int64_t ds, __m256* t, int64_t ts) {
    const __m256 d0 = d[0], d1 = d[ds], d2 = d[2 * ds], d3 = d[3 * ds], d4 = d[4 * ds], d5 = d[5 * ds];
    const __m256 d13 = _mm256_sub_ps(d1, d3), d42 = _mm256_sub_ps(d4, d2);
    t[0] = _mm256_fmadd_ps(four, d0, _mm256_fnmadd_ps(five, d2, d4));
    t[ts] = _mm256_fnmadd_ps(four, _mm256_add_ps(d1, d2), _mm256_add_ps(d3, d4));
    t[2 * ts] = _mm256_fmadd_ps(four, _mm256_sub_ps(d1, d2), _mm256_sub_ps(d4, d3));
    t[3 * ts] = _mm256_fnmadd_ps(two, d13, d42);
    t[4 * ts] = _mm256_fmadd_ps(two, d13, d42);
    t[5 * ts] = _mm256_fmadd_ps(four, d1, _mm256_fnmadd_ps(five, d3, d5));
  };
  __m256 d[36];
  LoadPatch<6>(x, in, n, c0, h0, w0, inside, d);
  __m256 t[36];  // B' d: column j of d transformed into column j of t
  for (int j = 0; j < 6; ++j) bt(d + j, 6, t + j, 6);
  for (int i = 0; i < 6; ++i) bt(t + 6 * i, 1, v + 6 * i, 1);  // (B' d) B: row i of t transformed
}

/// The tile's 4x4 outputs for channels k0..k0+7 of F(4x4, 3x3): A' m A + bias, then the relu, with
///   A' = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
inline void OutputTile4(const float* m, int64_t xi_stride, __m256 bias, bool relu, __m256 out[16]) {
  const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f), eight = _mm256_set1_ps(8.0f);
  // A' applied to six vectors: four results.
  auto at = [&](__m256 m0, __m256 m1, __m256 m2, __m256 m3, __m256 m4, __m256 m5, __m256 r[4]) {
    const __m256 s12 = _mm256_add_ps(m1, m2), d12 = _mm256_sub_ps(m1, m2);
    const __m256 s34 = _mm256_add_ps(m3, m4), d34 = _mm256_sub_ps(m3, m4);
    r[0] = _mm256_add_ps(_mm256_add_ps(m0, s12), s34);
    r[1] = _mm256_fmadd_ps(two, d34, d12);
    r[2] = _mm256_fmadd_ps(four, s34, s12);
    r[3] = _mm256_add_ps(_mm256_fmadd_ps(eight, d34, d12), m5);
  };
  __m256 a[4][6];  // A' m: column j of m into column j of a
  for (int j = 0; j < 6; ++j) {
    __m256 r[4];
    at(_mm256_loadu_ps(m + j * xi_stride), _mm256_loadu_ps(m + (6 + j) * xi_stride),
       _mm256_loadu_ps(m + (12 + j) * xi_stride), _mm256_loadu_ps(m + (18 + j) * xi_stride),
       _mm256_loadu_ps(m + (24 + j) * xi_stride), _mm256_loadu_ps(m + (30 + j) * xi_stride), r);
    for (int i = 0; i < 4; ++i) a[i][j] = r[i];
  }
  for (int i = 0; i < 4; ++i) {
    __m256 r[4];
    at(a[i][0], a[i][1], a[i][2], a[i][3], a[i][4], a[i][5], r);
    for (int j = 0; j < 4; ++j) {
      const __m256 v = _mm256_add_ps(r[j], bias);
      out[4 * i + j] = relu ? _mm256_max_ps(v, _mm256_setzero_ps()) : v;
    }
  }
}

/// The transforms of F(2x2, 3x3) and F(4x4, 3x3), by output tile size.
template <int kOut>
struct TileTransforms;
template <>
struct TileTransforms<2> {
  static void Patch(const float* x, const LaneView& in, int64_t n, int64_t c0, int64_t h0, int64_t w0, bool inside,
                    __m256 v[16]) {
    PatchTransform(x, in, n, c0, h0, w0, inside, v);
  }
  /// The 2x2 tile of dy (d[2 r + c]) as DY = A dy A', A = [1 0; 1 1; 1 -1; 0 -1], stored DY[xi] at
  /// out + xi * xs.
  static void Gradient(const __m256 d[4], float* out, int64_t xs) {
    // A dy: rows (d0 d1), (d0 + d2, d1 + d3), (d0 - d2, d1 - d3), (-d2, -d3); then each row (a, b)
    // becomes (a, a + b, a - b, -b).
    const __m256 zero = _mm256_setzero_ps();
    const __m256 r[4][2] = {{d[0], d[1]},
                            {_mm256_add_ps(d[0], d[2]), _mm256_add_ps(d[1], d[3])},
                            {_mm256_sub_ps(d[0], d[2]), _mm256_sub_ps(d[1], d[3])},
                            {_mm256_sub_ps(zero, d[2]), _mm256_sub_ps(zero, d[3])}};
    for (int a = 0; a < 4; ++a) {
      _mm256_storeu_ps(out + (4 * a + 0) * xs, r[a][0]);
      _mm256_storeu_ps(out + (4 * a + 1) * xs, _mm256_add_ps(r[a][0], r[a][1]));
      _mm256_storeu_ps(out + (4 * a + 2) * xs, _mm256_sub_ps(r[a][0], r[a][1]));
      _mm256_storeu_ps(out + (4 * a + 3) * xs, _mm256_sub_ps(zero, r[a][1]));
    }
  }
  /// dw (3x3) = G' dU G for one channel pair's summed dU[16].
  static void FilterGradient(const float u[16], float o[9]) {
    float t[3][4];
    for (int j = 0; j < 4; ++j) {  // G' dU
      t[0][j] = u[j] + 0.5f * (u[4 + j] + u[8 + j]);
      t[1][j] = 0.5f * (u[4 + j] - u[8 + j]);
      t[2][j] = 0.5f * (u[4 + j] + u[8 + j]) + u[12 + j];
    }
    for (int i = 0; i < 3; ++i) {  // (G' dU) G
      o[3 * i + 0] = t[i][0] + 0.5f * (t[i][1] + t[i][2]);
      o[3 * i + 1] = 0.5f * (t[i][1] - t[i][2]);
      o[3 * i + 2] = 0.5f * (t[i][1] + t[i][2]) + t[i][3];
    }
  }
  static void Output(const float* m, int64_t xi_stride, __m256 bias, bool relu, __m256 out[4]) {
    OutputTile(m, xi_stride, bias, relu, out);
  }
};
template <>
struct TileTransforms<4> {
  static void Patch(const float* x, const LaneView& in, int64_t n, int64_t c0, int64_t h0, int64_t w0, bool inside,
                    __m256 v[36]) {
    PatchTransform4(x, in, n, c0, h0, w0, inside, v);
  }
  /// The 4x4 tile of dy (d[4 r + c]) as DY = A dy A' with A = the transpose of OutputTile4's A'
  /// (rows [1 0 0 0; 1 1 1 1; 1 -1 1 -1; 1 2 4 8; 1 -2 4 -8; 0 0 0 1]), stored DY[xi] at out + xi * xs.
  static void Gradient(const __m256 d[16], float* out, int64_t xs) {
    const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f);
    // A applied to four vectors: six results.
    auto a = [&](__m256 d0, __m256 d1, __m256 d2, __m256 d3, __m256 e[6]) {
      const __m256 s02 = _mm256_add_ps(d0, d2), s13 = _mm256_add_ps(d1, d3);
      const __m256 q0 = _mm256_fmadd_ps(four, d2, d0), q1 = _mm256_fmadd_ps(four, d3, d1);  // d0 + 4 d2, d1 + 4 d3
      e[0] = d0;
      e[1] = _mm256_add_ps(s02, s13);
      e[2] = _mm256_sub_ps(s02, s13);
      e[3] = _mm256_fmadd_ps(two, q1, q0);  // d0 + 2 d1 + 4 d2 + 8 d3
      e[4] = _mm256_fnmadd_ps(two, q1, q0);
      e[5] = d3;
    };
    __m256 c[6][4];  // A dy: column j of dy into column j of c
    for (int j = 0; j < 4; ++j) {
      __m256 e[6];
      a(d[j], d[4 + j], d[8 + j], d[12 + j], e);
      for (int i = 0; i < 6; ++i) c[i][j] = e[i];
    }
    for (int i = 0; i < 6; ++i) {  // (A dy) A': row i of c
      __m256 e[6];
      a(c[i][0], c[i][1], c[i][2], c[i][3], e);
      for (int j = 0; j < 6; ++j) _mm256_storeu_ps(out + (6 * i + j) * xs, e[j]);
    }
  }
  /// dw (3x3) = G' dU G for one channel pair's summed dU[36], G as in FilterColumn<4>.
  static void FilterGradient(const float u[36], float o[9]) {
    constexpr float k6 = 1.0f / 6, k12 = 1.0f / 12, k24 = 1.0f / 24;
    // G' applied to six values: three results.
    auto gt = [&](float u0, float u1, float u2, float u3, float u4, float u5, float r[3]) {
      const float s12 = u1 + u2, s34 = u3 + u4;
      r[0] = u0 * 0.25f - s12 * k6 + s34 * k24;
      r[1] = (u2 - u1) * k6 + (u3 - u4) * k12;
      r[2] = (s34 - s12) * k6 + u5;
    };
    float t[3][6];  // G' dU: column j of dU into column j of t
    for (int j = 0; j < 6; ++j) {
      float r[3];
      gt(u[j], u[6 + j], u[12 + j], u[18 + j], u[24 + j], u[30 + j], r);
      for (int i = 0; i < 3; ++i) t[i][j] = r[i];
    }
    for (int i = 0; i < 3; ++i) gt(t[i][0], t[i][1], t[i][2], t[i][3], t[i][4], t[i][5], o + 3 * i);
  }
  static void Output(const float* m, int64_t xi_stride, __m256 bias, bool relu, __m256 out[16]) {
    OutputTile4(m, xi_stride, bias, relu, out);
  }
};

/// V[xi] at v + xi * xi_stride, channels c0..c0+7, for the patch of a kOut x kOut tile at (h0, w0).
template <int kOut>
inline void InputTile(const float* x, const LaneView& in, int64_t n, int64_t c0, int64_t h0, int64_t w0, bool inside,
                      float* v, int64_t xi_stride) {
  constexpr int kPoints = (kOut + 2) * (kOut + 2);
  __m256 r[kPoints];
  TileTransforms<kOut>::Patch(x, in, n, c0, h0, w0, inside, r);
  for (int xi = 0; xi < kPoints; ++xi) _mm256_storeu_ps(v + xi * xi_stride, r[xi]);
}

}  // namespace

void WinogradConv::Run(const Shape& s, const float* x, ActivationLayout xl, float* y, ActivationLayout yl,
                       const WinogradEpilogue& e, int threads) const {
  if (tile_ == 4)
    RunTiles<4>(s, x, xl, y, yl, e, threads);
  else
    RunTiles<2>(s, x, xl, y, yl, e, threads);
}

template <int kOut>
void WinogradConv::RunTiles(const Shape& s, const float* x, ActivationLayout xl, float* y, ActivationLayout yl,
                            const WinogradEpilogue& e, int threads) const {
  constexpr int kIn = kOut + 2, kPoints = kIn * kIn, kHalf = kOut / 2;
  const int64_t C8 = in_padded_, K = s.k, KP = out_padded_;
  const int64_t th = (s.oh + kOut - 1) / kOut, tw = (s.ow + kOut - 1) / kOut, T = s.n * th * tw;
  const int64_t max_tiles = std::clamp<int64_t>(kBlockFloats / (kPoints * (C8 + KP)), kRows, kMaxBlockTiles);
  const int64_t blocks =
      std::max<int64_t>((T + max_tiles - 1) / max_tiles, std::min<int64_t>(threads, (T + kRows - 1) / kRows));
  const int64_t per_block = (T + blocks - 1) / blocks, rows = RoundUp(per_block, kRows);
  const bool pooled = e.pool != nullptr, pool_max = pooled && e.pool->max;
  const int64_t yh = pooled ? s.oh / 2 : s.oh, yw = pooled ? s.ow / 2 : s.ow;
  std::vector<float> bias(KP, 0.0f);
  if (e.bias != nullptr) std::copy(e.bias, e.bias + K, bias.begin());
  const int team = static_cast<int>(std::min<int64_t>(std::max(threads, 1), blocks));

  // The input as groups of 8 channels: a plain NCHW input is first copied to nChw8c, one pass over it.
  LaneView in;
  x = AsLanes(x, xl, s.n, s.c, s.h, s.w, team, reorder_, in);

  auto run_block = [&](int64_t block, Scratch& sc) {
    const int64_t t0 = block * per_block, nt = std::min(per_block, T - t0);
    if (nt <= 0) return;
    sc.v.resize(kPoints * rows * C8);
    sc.m.resize(kPoints * rows * KP);
    float* V = sc.v.data();
    float* M = sc.m.data();
    for (int64_t i = 0; i < nt; ++i) {
      const int64_t t = t0 + i, n = t / (th * tw), ty = t / tw % th, tx = t % tw;
      const int64_t h0 = kOut * ty - s.pt, w0 = kOut * tx - s.pl;
      const bool inside = h0 >= 0 && w0 >= 0 && h0 + kIn <= s.h && w0 + kIn <= s.w;
      for (int64_t c0 = 0; c0 < C8; c0 += kLanes)
        InputTile<kOut>(x, in, n, c0, h0, w0, inside, V + i * C8 + c0, rows * C8);
    }
    // The GEMMs, one per point: M[xi] (rows x KP) = V[xi] (rows x C8) * U[xi] (C8 x KP).
    for (int64_t xi = 0; xi < kPoints; ++xi)
      for (int64_t kp = 0; kp < KP / kCols;) {
        // Two panels of U at once where the tiles run on AVX-512 (one 6 x 32 tile). On AVX2 the pair
        // would be two tiles alternating between two panels, not one panel kept in L1 for every row.
        const float* u = u_.data() + (xi * (KP / kCols) + kp) * C8 * kCols;
        const bool pair = TilesUseAvx512() && kp + 1 < KP / kCols;
        for (int64_t r0 = 0; r0 < nt; r0 += kRows) {
          const float* v = V + (xi * rows + r0) * C8;
          float* out = M + (xi * rows + r0) * KP + kp * kCols;
          if (pair)
            MicroTilePairRows(kRows, C8, v, C8, u, u + C8 * kCols, kCols, out, KP);
          else
            MicroTile(C8, v, C8, u, kCols, out, KP);
        }
        kp += pair ? 2 : 1;
      }
    alignas(32) float lanes[kLanes];
    const LaneView out{K, yh, yw, yl.block};
    for (int64_t i = 0; i < nt; ++i) {
      const int64_t t = t0 + i, n = t / (th * tw), ty = t / tw % th, tx = t % tw;
      for (int64_t k0 = 0; k0 < K; k0 += kLanes) {
        // Output pixel (h, w)'s 8 channels, unless it lies past the edge of the (pooled) output.
        auto store = [&](int64_t h, int64_t w, __m256 v) {
          if (h >= yh || w >= yw) return;
          if (yl.block != 0) {
            _mm256_storeu_ps(y + out.At(n, k0, h, w), v);
            return;
          }
          _mm256_store_ps(lanes, v);
          float* dst = y + ((n * K + k0) * yh + h) * yw + w;
          const int64_t count = std::min<int64_t>(kLanes, K - k0);
          for (int64_t l = 0; l < count; ++l) dst[l * yh * yw] = lanes[l];
        };
        __m256 o[kOut * kOut];
        TileTransforms<kOut>::Output(M + i * KP + k0, rows * KP, _mm256_loadu_ps(bias.data() + k0), e.relu, o);
        if (!pooled) {
          for (int q = 0; q < kOut * kOut; ++q) store(kOut * ty + q / kOut, kOut * tx + q % kOut, o[q]);
          continue;
        }
        // Each 2x2 window of the tile is one pooled pixel (tiles start at even rows and columns).
        for (int py = 0; py < kHalf; ++py)
          for (int px = 0; px < kHalf; ++px) {
            const __m256 a = o[2 * py * kOut + 2 * px], b = o[2 * py * kOut + 2 * px + 1];
            const __m256 c = o[(2 * py + 1) * kOut + 2 * px], d = o[(2 * py + 1) * kOut + 2 * px + 1];
            store(kHalf * ty + py, kHalf * tx + px,
                  pool_max
                      ? _mm256_max_ps(_mm256_max_ps(a, b), _mm256_max_ps(c, d))
                      : _mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)), _mm256_set1_ps(0.25f)));
          }
      }
    }
  };

  if (team <= 1) {
    thread_local Scratch scratch;
    for (int64_t b = 0; b < blocks; ++b) run_block(b, scratch);
    return;
  }
  runtime::RunTasks(blocks, team, [&](int64_t b, int) {
    thread_local Scratch scratch;
    run_block(b, scratch);
  });
}
namespace {

template <int kOut>
void BackwardWeightsTiles(const ConvGeometry& g, const float* x, ActivationLayout x_layout, const float* dy,
                          ActivationLayout dy_layout, float* dw, int threads) {
  // dU[xi] (C x K) = sum over tiles of V[xi]' (C x tiles) * DY[xi] (tiles x K), with V the input
  // transform and DY = A dy A' of each tile of dy (TileTransforms::Gradient); then dw = G' dU G.
  // V is stored transposed ([xi][c][tile]) so that the register tile walks tiles.
  constexpr int kIn = kOut + 2, kPoints = kIn * kIn;
  const int64_t C = g.c, K = g.o, H = g.w.in[0], W = g.w.in[1], OH = g.w.out[0], OW = g.w.out[1];
  const int64_t pt = g.w.pad_before(0), pl = g.w.pad_before(1);
  const int64_t C8 = RoundUp(C, kLanes), CR = RoundUp(C8, kRows), K8 = RoundUp(K, kLanes), KP = RoundUp(K, kCols);
  const int64_t th = (OH + kOut - 1) / kOut, tw = (OW + kOut - 1) / kOut, T = g.n * th * tw;
  const int64_t max_tiles = std::clamp<int64_t>(kBlockFloats / (kPoints * (CR + KP)), kRows, kMaxBlockTiles);
  const int64_t blocks = std::max<int64_t>((T + max_tiles - 1) / max_tiles, std::min<int64_t>(threads, T));
  const int64_t per_block = (T + blocks - 1) / blocks;
  const int team = static_cast<int>(std::min<int64_t>(std::max(threads, 1), blocks));
  thread_local AlignedVector<float> x_copy, dy_copy;
  LaneView in, out;
  x = AsLanes(x, x_layout, g.n, C, H, W, team, x_copy, in);
  dy = AsLanes(dy, dy_layout, g.n, K, OH, OW, team, dy_copy, out);
  // Each thread's sums dU, kept across calls (a training step calls this once per convolution).
  thread_local AlignedVector<float> sums;
  const int64_t per_thread = kPoints * CR * KP;
  sums.assign(team * per_thread, 0.0f);
  float* const sum = sums.data();  // the caller's: inside the parallel region `sums` names each thread's own

  auto run_block = [&](int64_t block, Scratch& sc, float* acc) {
    const int64_t t0 = block * per_block, nt = std::min(per_block, T - t0);
    if (nt <= 0) return;
    // Only the rows past C8 (CR is a multiple of 6) are never written below; they must read as zeros.
    sc.v.resize(kPoints * CR * per_block);
    for (int64_t xi = 0; xi < kPoints; ++xi)
      std::fill(sc.v.begin() + (xi * CR + C8) * per_block, sc.v.begin() + (xi + 1) * CR * per_block, 0.0f);
    sc.m.resize(kPoints * per_block * KP);
    float* VT = sc.v.data();
    float* DY = sc.m.data();
    __m256 v[kPoints];
    alignas(32) float lanes[kLanes];
    for (int64_t i = 0; i < nt; ++i) {
      const int64_t t = t0 + i, n = t / (th * tw), ty = t / tw % th, tx = t % tw;
      const int64_t h0 = kOut * ty - pt, w0 = kOut * tx - pl;
      const bool inside = h0 >= 0 && w0 >= 0 && h0 + kIn <= H && w0 + kIn <= W;
      for (int64_t c0 = 0; c0 < C8; c0 += kLanes) {
        TileTransforms<kOut>::Patch(x, in, n, c0, h0, w0, inside, v);
        for (int xi = 0; xi < kPoints; ++xi) {
          _mm256_store_ps(lanes, v[xi]);
          for (int l = 0; l < kLanes; ++l) VT[(xi * CR + c0 + l) * per_block + i] = lanes[l];
        }
      }
      const bool full = kOut * ty + kOut <= OH && kOut * tx + kOut <= OW;
      for (int64_t k0 = 0; k0 < K8; k0 += kLanes) {
        __m256 d[kOut * kOut];
        for (int q = 0; q < kOut * kOut; ++q) {
          const int64_t h = kOut * ty + q / kOut, w = kOut * tx + q % kOut;
          d[q] = full || (h < OH && w < OW) ? _mm256_loadu_ps(dy + out.At(n, k0, h, w)) : _mm256_setzero_ps();
        }
        TileTransforms<kOut>::Gradient(d, DY + i * KP + k0, per_block * KP);
      }
      if (KP > K8)
        for (int xi = 0; xi < kPoints; ++xi) std::fill_n(DY + (xi * per_block + i) * KP + K8, KP - K8, 0.0f);
    }
    for (int64_t xi = 0; xi < kPoints; ++xi)
      for (int64_t c0 = 0; c0 < CR; c0 += kRows)
        for (int64_t kp = 0; kp < KP; kp += 2 * kCols) {
          const float* dy_kp = DY + xi * per_block * KP + kp;
          float* out = acc + (xi * CR + c0) * KP + kp;
          if (kp + kCols < KP)
            MicroTilePairRows(kRows, nt, VT + (xi * CR + c0) * per_block, per_block, dy_kp, dy_kp + kCols, KP, out, KP,
                              {}, /*accumulate=*/true);
          else
            MicroTile(nt, VT + (xi * CR + c0) * per_block, per_block, dy_kp, KP, out, KP, {}, /*accumulate=*/true);
        }
  };
  if (team <= 1) {
    Scratch sc;
    for (int64_t b = 0; b < blocks; ++b) run_block(b, sc, sum);
  } else {
    std::vector<Scratch> scratch(team);
    runtime::RunTasks(blocks, team, [&](int64_t b, int slot) { run_block(b, scratch[slot], sum + slot * per_thread); });
  }
  for (int i = 1; i < team; ++i)
    for (int64_t j = 0; j < per_thread; ++j) sum[j] += sum[i * per_thread + j];
  const float* dU = sum;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c) {
      float u[kPoints];
      for (int xi = 0; xi < kPoints; ++xi) u[xi] = dU[(xi * CR + c) * KP + k];
      TileTransforms<kOut>::FilterGradient(u, dw + (k * C + c) * 9);
    }
}

}  // namespace

void WinogradBackwardWeights(const ConvGeometry& g, const float* x, ActivationLayout x_layout, const float* dy,
                             ActivationLayout dy_layout, float* dw, int threads, int tile) {
  // Each thread's sums and their reduction grow with the points, whatever the batch: per call.
  if (tile == 0)
    tile = WinogradTile(g.n, g.w.out[0], g.w.out[1], true) == 4 &&
                   GradientBlockTiles(g, 36) >= kWinogradMinGradientBlockTiles
               ? 4
               : 2;
  if (tile == 4)
    BackwardWeightsTiles<4>(g, x, x_layout, dy, dy_layout, dw, threads);
  else
    BackwardWeightsTiles<2>(g, x, x_layout, dy, dy_layout, dw, threads);
}
#else
void WinogradConv::Run(const Shape&, const float*, ActivationLayout, float*, ActivationLayout, const WinogradEpilogue&,
                       int) const {}  // never called: WinogradFits is false without AVX2 and FMA
void WinogradBackwardWeights(const ConvGeometry&, const float*, ActivationLayout, const float*, ActivationLayout,
                             float*, int, int) {}  // likewise
#endif

}  // namespace paddlec::ops::nn
