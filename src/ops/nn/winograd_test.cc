// The CPU's own convolution kernels, Winograd F(2x2, 3x3) (winograd.h) and the few-input-channel
// direct kernel (conv_direct.h), against a naive double-precision convolution written here: odd and
// even sizes, every padding they accept, channel counts that fill no register, bias, relu and the
// fused poolings, oneDNN's blocked layouts, Winograd's backward passes, and 1 or 2 threads.
#include "nn/winograd.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/microkernel.h"
#include "nn/conv_direct.h"
#include "nn/conv_onednn.h"
#include "paddlec/runtime/device_context.h"
#include "testing/median_timer.h"
#include "testing/program_runner.h"

namespace paddlec::ops::nn {
namespace {

struct Case {
  int64_t n, c, o, h, w, pt, pb, pl, pr;
  int64_t kh = 3, kw = 3;
};

ConvGeometry Geometry(const Case& k) {
  ConvGeometry g;
  g.n = k.n;
  g.c = k.c;
  g.o = k.o;
  g.w.in[0] = k.h;
  g.w.in[1] = k.w;
  g.w.kernel[0] = k.kh;
  g.w.kernel[1] = k.kw;
  g.w.pad[0] = k.pt;
  g.w.pad[1] = k.pb;
  g.w.pad[2] = k.pl;
  g.w.pad[3] = k.pr;
  g.w.out[0] = k.h + k.pt + k.pb - k.kh + 1;
  g.w.out[1] = k.w + k.pl + k.pr - k.kw + 1;
  return g;
}

std::vector<float> Random(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

/// Calls fn(y, x, f) with the flat indices of every product of the convolution g: output y[n][o][oh][ow],
/// input x[n][c][oh - pt + i][ow - pl + j] (inside the image) and filter f[o][c][i][j].
template <class F>
void ForEachProduct(const ConvGeometry& g, F&& fn) {
  const int64_t H = g.w.in[0], W = g.w.in[1], OH = g.w.out[0], OW = g.w.out[1];
  const int64_t KH = g.w.kernel[0], KW = g.w.kernel[1];
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.o; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          for (int64_t c = 0; c < g.c; ++c)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t h = oh - g.w.pad[0] + i, w = ow - g.w.pad[2] + j;
                if (h >= 0 && h < H && w >= 0 && w < W)
                  fn(((n * g.o + o) * OH + oh) * OW + ow, ((n * g.c + c) * H + h) * W + w,
                     ((o * g.c + c) * KH + i) * KW + j);
              }
}

/// The convolution in double.
std::vector<double> RefConv(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& f) {
  std::vector<double> y(g.n * g.o * g.w.out[0] * g.w.out[1], 0.0);
  ForEachProduct(g, [&](int64_t yi, int64_t xi, int64_t fi) { y[yi] += double(x[xi]) * f[fi]; });
  return y;
}

/// Its backward-data pass: dx = sum of dy * f over the products each input element takes part in.
std::vector<double> RefBackwardData(const ConvGeometry& g, const std::vector<float>& dy, const std::vector<float>& f) {
  std::vector<double> dx(g.n * g.c * g.w.in[0] * g.w.in[1], 0.0);
  ForEachProduct(g, [&](int64_t yi, int64_t xi, int64_t fi) { dx[xi] += double(dy[yi]) * f[fi]; });
  return dx;
}

/// Its backward-weights pass: dw = sum of dy * x over the products each filter element takes part in.
std::vector<double> RefBackwardWeights(const ConvGeometry& g, const std::vector<float>& x,
                                       const std::vector<float>& dy) {
  std::vector<double> dw(g.o * g.c * g.w.kernel[0] * g.w.kernel[1], 0.0);
  ForEachProduct(g, [&](int64_t yi, int64_t xi, int64_t fi) { dw[fi] += double(dy[yi]) * x[xi]; });
  return dw;
}

/// NCHW <-> nChw{b}c.
std::vector<float> ToBlocked(const std::vector<float>& x, int64_t n, int64_t c, int64_t hw, int64_t b) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) y[((i * (c / b) + ch / b) * hw + p) * b + ch % b] = x[(i * c + ch) * hw + p];
  return y;
}
std::vector<float> FromBlocked(const std::vector<float>& y, int64_t n, int64_t c, int64_t hw, int64_t b) {
  std::vector<float> x(y.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) x[(i * c + ch) * hw + p] = y[((i * (c / b) + ch / b) * hw + p) * b + ch % b];
  return x;
}

/// Bound on RelError for Winograd against a direct sum in double: rounding only (winograd.h), F(4x4,
/// 3x3)'s larger coefficients included.
constexpr double kTolerance = 1e-5;

/// max |a - b| relative to max(1, max |b|): Winograd differs from a direct sum by float rounding only.
double RelError(const std::vector<float>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double err = 0, scale = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return err / scale;
}

TEST_CASE("winograd: forward matches a direct convolution across sizes, paddings and channel counts") {
  const Case cases[] = {
      {1, 8, 8, 4, 4, 1, 1, 1, 1},    {2, 32, 64, 14, 14, 1, 1, 1, 1}, {3, 9, 17, 7, 5, 1, 1, 1, 1},
      {1, 16, 24, 9, 11, 0, 0, 0, 0}, {2, 12, 8, 6, 7, 2, 2, 2, 2},    {1, 8, 40, 5, 8, 0, 2, 1, 0},
      {5, 33, 9, 3, 3, 1, 1, 1, 1},
  };
  for (const Case& k : cases)
    for (int tile : {2, 4})
      for (int threads : {1, 2}) {
        CAPTURE(k.n);
        CAPTURE(k.c);
        CAPTURE(k.o);
        CAPTURE(k.h);
        CAPTURE(k.w);
        CAPTURE(tile);
        CAPTURE(threads);
        ConvGeometry g = Geometry(k);
        REQUIRE(WinogradFits(g));
        auto x = Random(g.n * g.c * k.h * k.w, 1), f = Random(g.o * g.c * 9, 2), bias = Random(g.o, 3);
        WinogradConv conv;
        conv.SetFilter(g, f.data(), tile);
        std::vector<float> y(g.n * g.o * g.w.out[0] * g.w.out[1], -7.0f);
        conv.Forward(g, x.data(), {}, y.data(), {}, {}, threads);
        std::vector<double> ref = RefConv(g, x, f);
        CHECK(RelError(y, ref) < kTolerance);

        // Bias and relu in the epilogue.
        conv.Forward(g, x.data(), {}, y.data(), {}, {.bias = bias.data(), .relu = true}, threads);
        const int64_t plane = g.w.out[0] * g.w.out[1];
        for (size_t i = 0; i < ref.size(); ++i) ref[i] = std::max(ref[i] + bias[i / plane % g.o], 0.0);
        CHECK(RelError(y, ref) < kTolerance);
      }
  // 4x4 tiles from 8 pixels a side; when transformed at every call, from 64 of them.
  CHECK(WinogradTile(1, 14, 14, false) == 4);
  CHECK(WinogradTile(1, 14, 14, true) == 2);
  CHECK(WinogradTile(4, 14, 14, true) == 4);
  CHECK(WinogradTile(64, 7, 14, false) == 2);
}

TEST_CASE("winograd: the fused 2x2 pooling, and blocked layouts in and out") {
  ConvGeometry g = Geometry({3, 32, 64, 14, 14, 1, 1, 1, 1});
  auto x = Random(g.n * g.c * 14 * 14, 4), f = Random(g.o * g.c * 9, 5), bias = Random(g.o, 6);
  std::vector<double> conv = RefConv(g, x, f);
  for (bool max : {true, false}) {
    ConvPool p;
    p.max = max;
    p.w.in[0] = p.w.in[1] = 14;
    p.w.kernel[0] = p.w.kernel[1] = 2;
    p.w.stride[0] = p.w.stride[1] = 2;
    p.w.out[0] = p.w.out[1] = 7;
    REQUIRE(WinogradPoolFits(g, p));
    std::vector<double> ref(g.n * g.o * 49);
    for (int64_t plane = 0; plane < g.n * g.o; ++plane)
      for (int64_t oh = 0; oh < 7; ++oh)
        for (int64_t ow = 0; ow < 7; ++ow) {
          double v[4];
          for (int q = 0; q < 4; ++q)
            v[q] = std::max(conv[(plane * 14 + 2 * oh + q / 2) * 14 + 2 * ow + q % 2] + bias[plane % g.o], 0.0);
          ref[(plane * 7 + oh) * 7 + ow] = max ? std::max({v[0], v[1], v[2], v[3]}) : (v[0] + v[1] + v[2] + v[3]) / 4;
        }
    for (int tile : {2, 4}) {
      WinogradConv wc;
      wc.SetFilter(g, f.data(), tile);
      for (int block : {0, 8, 16}) {
        CAPTURE(max);
        CAPTURE(tile);
        CAPTURE(block);
        auto xin = block ? ToBlocked(x, g.n, g.c, 196, block) : x;
        std::vector<float> y(ref.size());
        wc.Forward(g, xin.data(), {block}, y.data(), {block}, {.bias = bias.data(), .relu = true, .pool = &p}, 2);
        CHECK(RelError(block ? FromBlocked(y, g.n, g.o, 49, block) : y, ref) < kTolerance);
      }
    }
  }
  // A pooling the tiles cannot apply.
  ConvPool odd;
  odd.w.kernel[0] = odd.w.kernel[1] = 3;
  odd.w.stride[0] = odd.w.stride[1] = 2;
  CHECK_FALSE(WinogradPoolFits(g, odd));
}

TEST_CASE("winograd: backward data matches the transposed direct convolution") {
  const Case cases[] = {{2, 16, 24, 8, 8, 1, 1, 1, 1}, {1, 9, 8, 6, 5, 0, 0, 0, 0}, {3, 8, 12, 7, 7, 2, 2, 1, 1}};
  for (const Case& k : cases) {
    ConvGeometry g = Geometry(k);
    REQUIRE(WinogradFits(g));
    auto dy = Random(g.n * g.o * g.w.out[0] * g.w.out[1], 7), f = Random(g.o * g.c * 9, 8);
    const std::vector<double> ref = RefBackwardData(g, dy, f);
    for (int tile : {2, 4}) {
      CAPTURE(tile);
      WinogradConv conv;
      conv.SetFilterForBackwardData(g, f.data(), tile);
      std::vector<float> dx(g.n * g.c * k.h * k.w, -3.0f);
      conv.BackwardData(g, dy.data(), {}, dx.data(), {}, 2);
      CHECK(RelError(dx, ref) < kTolerance);
      // dy and dx in oneDNN's blocked layouts (conv2d_grad after the layout pass), where they fit.
      const int64_t in_plane = k.h * k.w, out_plane = g.w.out[0] * g.w.out[1];
      for (int block : {8, 16}) {
        if (g.c % block != 0 || g.o % block != 0) continue;
        CAPTURE(block);
        auto dy_blocked = ToBlocked(dy, g.n, g.o, out_plane, block);
        conv.BackwardData(g, dy_blocked.data(), {block}, dx.data(), {block}, 2);
        CHECK(RelError(FromBlocked(dx, g.n, g.c, in_plane, block), ref) < kTolerance);
      }
    }
  }
}

TEST_CASE("winograd: backward weights match the direct sum over the batch") {
  const Case cases[] = {{2, 16, 24, 8, 8, 1, 1, 1, 1},
                        {3, 9, 8, 7, 5, 1, 1, 1, 1},
                        {1, 12, 40, 6, 7, 0, 0, 2, 2},
                        {4, 32, 64, 14, 14, 1, 1, 1, 1}};
  for (const Case& k : cases)
    for (int tile : {2, 4})
      for (int threads : {1, 2}) {
        CAPTURE(k.c);
        CAPTURE(k.o);
        CAPTURE(tile);
        CAPTURE(threads);
        ConvGeometry g = Geometry(k);
        REQUIRE(WinogradFits(g));
        auto x = Random(g.n * g.c * k.h * k.w, 9), dy = Random(g.n * g.o * g.w.out[0] * g.w.out[1], 10);
        std::vector<float> dw(g.o * g.c * 9, -1.0f);
        WinogradBackwardWeights(g, x.data(), {}, dy.data(), {}, dw.data(), threads, tile);
        const std::vector<double> ref = RefBackwardWeights(g, x, dy);
        CHECK(RelError(dw, ref) < kTolerance);
        for (int block : {8, 16}) {
          if (g.c % block != 0 || g.o % block != 0) continue;
          CAPTURE(block);
          auto xb = ToBlocked(x, g.n, g.c, k.h * k.w, block);
          auto dyb = ToBlocked(dy, g.n, g.o, g.w.out[0] * g.w.out[1], block);
          std::fill(dw.begin(), dw.end(), -1.0f);
          WinogradBackwardWeights(g, xb.data(), {block}, dyb.data(), {block}, dw.data(), threads, tile);
          CHECK(RelError(dw, ref) < kTolerance);
        }
      }
}

TEST_CASE("winograd: what it does not compute") {
  ConvGeometry g = Geometry({1, 16, 16, 8, 8, 1, 1, 1, 1});
  CHECK(WinogradFits(g));
  // The filter gradient of many channels: blocks of too few tiles (8 of 2x2 at 256 x 256).
  // Where AVX-512 doubles the FMA rate, no filter gradient (nor a forward pass whose filter changes).
  CHECK(WinogradTrainingPaysOff() == !Avx512DoublesFma());
  CHECK(WinogradFilterGradientPaysOff(Geometry({4, 64, 64, 14, 14, 1, 1, 1, 1})) == WinogradTrainingPaysOff());
  CHECK(WinogradBackwardPaysOff(Geometry({4, 256, 256, 14, 14, 1, 1, 1, 1})));
  CHECK_FALSE(WinogradFilterGradientPaysOff(Geometry({4, 256, 256, 14, 14, 1, 1, 1, 1})));
  ConvGeometry few = g;
  few.c = kWinogradMinChannels - 1;
  CHECK_FALSE(WinogradFits(few));
  ConvGeometry strided = g;
  strided.w.stride[0] = 2;
  CHECK_FALSE(WinogradFits(strided));
  ConvGeometry grouped = g;
  grouped.groups = 2;
  CHECK_FALSE(WinogradFits(grouped));
  ConvGeometry wide = g;
  wide.w.kernel[1] = 5;
  CHECK_FALSE(WinogradFits(wide));
  ConvGeometry padded = g;
  padded.w.pad[0] = 3;
  CHECK_FALSE(WinogradFits(padded));
  // On plain NCHW tensors only from kWinogradPlainMinChannels channels; blocked ones from 8.
  CHECK_FALSE(WinogradPaysOff(g, {}));
  CHECK(WinogradPaysOff(g, {8}));
  ConvGeometry wide_channels = g;
  wide_channels.c = wide_channels.o = kWinogradPlainMinChannels;
  CHECK(WinogradPaysOff(wide_channels, {}));
}

/// The fused pooling of `conv` (+ bias, relu): 2x2 windows, stride 2.
std::vector<double> RefPool(const ConvGeometry& g, const std::vector<double>& conv, const std::vector<float>& bias,
                            bool max) {
  const int64_t OH = g.w.out[0], OW = g.w.out[1], PH = OH / 2, PW = OW / 2;
  std::vector<double> ref(g.n * g.o * PH * PW);
  for (int64_t plane = 0; plane < g.n * g.o; ++plane)
    for (int64_t ph = 0; ph < PH; ++ph)
      for (int64_t pw = 0; pw < PW; ++pw) {
        double v[4];
        for (int q = 0; q < 4; ++q)
          v[q] = std::max(conv[(plane * OH + 2 * ph + q / 2) * OW + 2 * pw + q % 2] + bias[plane % g.o], 0.0);
        ref[(plane * PH + ph) * PW + pw] = max ? std::max({v[0], v[1], v[2], v[3]}) : (v[0] + v[1] + v[2] + v[3]) / 4;
      }
  return ref;
}

ConvPool Pool2x2(const ConvGeometry& g, bool max) {
  ConvPool p;
  p.max = max;
  for (int a = 0; a < 2; ++a) {
    p.w.in[a] = g.w.out[a];
    p.w.kernel[a] = p.w.stride[a] = 2;
    p.w.out[a] = g.w.out[a] / 2;
  }
  return p;
}

TEST_CASE("small-channel direct convolution: kernel sizes, paddings, bias, relu, poolings and layouts") {
  const Case cases[] = {
      {3, 1, 32, 28, 28, 1, 1, 1, 1},    {2, 3, 16, 9, 13, 0, 0, 0, 0},     {1, 4, 12, 8, 10, 2, 1, 0, 3, 5, 5},
      {2, 2, 8, 7, 7, 3, 3, 3, 3, 7, 7}, {1, 1, 9, 6, 6, 0, 0, 1, 1, 1, 3},
  };
  for (const Case& k : cases)
    for (int threads : {1, 2}) {
      CAPTURE(k.c);
      CAPTURE(k.o);
      CAPTURE(k.kh);
      CAPTURE(threads);
      ConvGeometry g = Geometry(k);
      REQUIRE(SmallConvFits(g));
      auto x = Random(g.n * g.c * k.h * k.w, 11), f = Random(g.o * g.c * k.kh * k.kw, 12), bias = Random(g.o, 13);
      SmallChannelConv conv;
      conv.SetFilter(g, f.data());
      const std::vector<double> ref = RefConv(g, x, f);
      std::vector<float> y(ref.size(), -5.0f);
      conv.Forward(g, x.data(), y.data(), {}, {}, threads);
      CHECK(RelError(y, ref) < 1e-5);
      // bias + relu + pooling, written NCHW and channel-blocked.
      if (g.w.out[0] % 2 != 0 || g.w.out[1] % 2 != 0) continue;
      for (bool max : {true, false}) {
        const ConvPool p = Pool2x2(g, max);
        REQUIRE(WinogradPoolFits(g, p));
        const std::vector<double> pooled = RefPool(g, ref, bias, max);
        for (int block : {0, 8, 16}) {
          if (block != 0 && g.o % block != 0) continue;
          CAPTURE(max);
          CAPTURE(block);
          std::vector<float> yp(pooled.size());
          conv.Forward(g, x.data(), yp.data(), {block}, {.bias = bias.data(), .relu = true, .pool = &p}, threads);
          const int64_t plane = g.w.out[0] * g.w.out[1] / 4;
          CHECK(RelError(block ? FromBlocked(yp, g.n, g.o, plane, block) : yp, pooled) < 1e-5);
        }
      }
    }
  ConvGeometry many = Geometry({1, kSmallConvMaxChannels + 1, 8, 6, 6, 1, 1, 1, 1});
  CHECK_FALSE(SmallConvFits(many));
  ConvGeometry strided = Geometry({1, 1, 8, 6, 6, 1, 1, 1, 1});
  strided.w.stride[1] = 2;
  CHECK_FALSE(SmallConvFits(strided));
}

TEST_CASE("small-channel direct convolution: filter gradient across kernel sizes, paddings, batches and layouts") {
  // Batches that do not fill the last 4-image work item, output channels that do not fill the last
  // 8-lane group, 7 x 7 and 1 x 3 kernels, asymmetric padding, and dy in NCHW and 8/16-channel blocks.
  const Case cases[] = {
      {9, 1, 32, 28, 28, 1, 1, 1, 1},    {2, 3, 16, 9, 13, 0, 0, 0, 0},     {1, 4, 12, 8, 10, 2, 1, 0, 3, 5, 5},
      {5, 2, 8, 7, 7, 3, 3, 3, 3, 7, 7}, {3, 1, 9, 6, 6, 0, 0, 1, 1, 1, 3},
  };
  for (const Case& k : cases) {
    CAPTURE(k.n);
    CAPTURE(k.c);
    CAPTURE(k.o);
    CAPTURE(k.kh);
    ConvGeometry g = Geometry(k);
    REQUIRE(SmallConvFits(g));
    const int64_t plane = g.w.out[0] * g.w.out[1];
    auto x = Random(g.n * g.c * k.h * k.w, 14), dy = Random(g.n * g.o * plane, 15);
    const std::vector<double> ref = RefBackwardWeights(g, x, dy);
    std::vector<float> first;
    for (int block : {0, 8, 16})
      for (int threads : {1, 2}) {
        if (block != 0 && g.o % block != 0) continue;
        CAPTURE(block);
        CAPTURE(threads);
        const std::vector<float> d = block ? ToBlocked(dy, g.n, g.o, plane, block) : dy;
        std::vector<float> dw(ref.size(), -7.0f);
        SmallConvBackwardWeights(g, x.data(), d.data(), {block}, dw.data(), threads);
        CHECK(RelError(dw, ref) < 1e-5);
        // The same sums in the same order, whatever the layout and the thread count.
        if (first.empty()) first = dw;
        CHECK(dw == first);
      }
  }
}

TEST_CASE("fused_conv2d_bn_act: a filter changed on a call oneDNN ran is transformed again for Winograd") {
  // 8x8 pools 2x2 on Winograd's tiles; 9x9 cannot (odd), so that step runs on oneDNN with the new
  // filter, and the third step, back on Winograd with that same filter, must not reuse the first
  // step's transform.
  const ConvGeometry g = Geometry({1, 32, 32, 8, 8, 1, 1, 1, 1});
  REQUIRE(WinogradPaysOff(g, {}));
  const std::vector<float> x = Random(32 * 64, 21), x9 = Random(32 * 81, 22), w1 = Random(32 * 32 * 9, 23),
                           w2 = Random(32 * 32 * 9, 24), bias = Random(32, 25);
  using testing::MakeTensor;
  testing::StepRunner run(
      "fused_conv2d_bn_act", {{"Input", "x"}, {"Filter", "w"}, {"Bias", "b"}}, {{"Output", "y"}},
      {ops::MakeAttr("paddings", std::vector<int>{1, 1}), ops::MakeAttr("activation", std::string("relu")),
       ops::MakeAttr("pooling_type", std::string("max")), ops::MakeAttr("pool_ksize", std::vector<int>{2, 2}),
       ops::MakeAttr("pool_strides", std::vector<int>{2, 2}), ops::MakeAttr("pool_paddings", std::vector<int>{0, 0})});
  REQUIRE(run.Start({{"x", MakeTensor<float>({1, 32, 8, 8}, x)},
                     {"w", MakeTensor<float>({32, 32, 3, 3}, w1)},
                     {"b", MakeTensor<float>({32}, bias)}},
                    {.threads = 2})
              .ok());
  REQUIRE(run.Step().ok());
  REQUIRE(run.Set("w", MakeTensor<float>({32, 32, 3, 3}, w2)).ok());
  REQUIRE(run.Set("x", MakeTensor<float>({1, 32, 9, 9}, x9)).ok());
  REQUIRE(run.Step().ok());
  REQUIRE(run.Set("x", MakeTensor<float>({1, 32, 8, 8}, x)).ok());
  REQUIRE(run.Step().ok());
  const Tensor y = run.Get("y");
  REQUIRE(y.numel() == 32 * 16);
  const std::vector<float> got(y.data<float>(), y.data<float>() + y.numel());
  CHECK(RelError(got, RefPool(g, RefConv(g, x, w2), bias, true)) < 1e-5);
}

TEST_CASE("conv2d transforms its filter once, and again whenever the filter is written") {
  // Winograd (32 channels) and the small-channel kernel (1 input channel) keep the transform of the
  // filter they last saw; a new filter in the same memory must replace it on the next step.
  struct Shape {
    Case c;
    bool winograd;
  };
  for (const Shape& sh : {Shape{{1, 32, 32, 8, 8, 1, 1, 1, 1}, true}, Shape{{1, 1, 8, 8, 8, 1, 1, 1, 1}, false}}) {
    const ConvGeometry g = Geometry(sh.c);
    CAPTURE(sh.winograd);
    REQUIRE((sh.winograd ? WinogradPaysOff(g, {}) : SmallConvFits(g)));
    const std::vector<float> x = Random(g.c * 64, 41), w1 = Random(g.o * g.c * 9, 42), w2 = Random(g.o * g.c * 9, 43);
    using testing::MakeTensor;
    testing::StepRunner run("conv2d", {{"Input", "x"}, {"Filter", "w"}}, {{"Output", "y"}},
                            {ops::MakeAttr("paddings", std::vector<int>{1, 1})});
    REQUIRE(run.Start({{"x", MakeTensor<float>({1, g.c, 8, 8}, x)}, {"w", MakeTensor<float>({g.o, g.c, 3, 3}, w1)}},
                      {.threads = 2})
                .ok());
    auto y_now = [&] {
      REQUIRE(run.Step().ok());
      const Tensor y = run.Get("y");
      return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
    };
    CHECK(RelError(y_now(), RefConv(g, x, w1)) < 1e-5);
    CHECK(RelError(y_now(), RefConv(g, x, w1)) < 1e-5);  // the kept transform
    REQUIRE(run.Set("w", MakeTensor<float>({g.o, g.c, 3, 3}, w2)).ok());
    CHECK(RelError(y_now(), RefConv(g, x, w2)) < 1e-5);
  }
}

TEST_CASE("fused_conv2d_bn_act: a filter in memory paddlec does not own is checked by its values") {
  // Memory fed without a copy has no content stamp (runtime/allocator.h): its owner may write it at
  // any time, so the kernel compares the filter's values with the ones it last transformed.
  const ConvGeometry g = Geometry({1, 32, 32, 8, 8, 1, 1, 1, 1});
  REQUIRE(WinogradPaysOff(g, {}));
  const std::vector<float> x = Random(32 * 64, 31), w1 = Random(32 * 32 * 9, 32), w2 = Random(32 * 32 * 9, 33),
                           bias = Random(32, 34);
  using testing::MakeTensor;
  testing::StepRunner run("fused_conv2d_bn_act", {{"Input", "x"}, {"Filter", "w"}, {"Bias", "b"}}, {{"Output", "y"}},
                          {ops::MakeAttr("paddings", std::vector<int>{1, 1})});
  REQUIRE(run.Start({{"x", MakeTensor<float>({1, 32, 8, 8}, x)},
                     {"w", MakeTensor<float>({32, 32, 3, 3}, w1)},
                     {"b", MakeTensor<float>({32}, bias)}},
                    {.threads = 2})
              .ok());
  std::vector<float> external = w1;
  runtime::Tensor& w = run.Value("w");
  w.set_buffer(
      std::make_shared<runtime::Buffer>(external.data(), external.size() * sizeof(float), Place::CPU(), nullptr));
  REQUIRE(w.stamp() == 0);
  auto ref = [&](const std::vector<float>& f) {
    std::vector<double> r = RefConv(g, x, f);
    const int64_t plane = g.w.out[0] * g.w.out[1];
    for (size_t i = 0; i < r.size(); ++i) r[i] += bias[i / plane % g.o];
    return r;
  };
  auto y_now = [&] {
    REQUIRE(run.Step().ok());
    const Tensor y = run.Get("y");
    return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
  };
  CHECK(RelError(y_now(), ref(w1)) < 1e-5);
  CHECK(RelError(y_now(), ref(w1)) < 1e-5);
  external = w2;  // written in place, behind the plan's back
  CHECK(RelError(y_now(), ref(w2)) < 1e-5);
}

// Milliseconds per call against oneDNN's direct kernels (median of 7 runs of >= 100 ms; figures, not
// assertions): ./build/ops_test -tc='winograd benchmark*' --no-skip
TEST_CASE("winograd benchmark: against oneDNN on LeNet and ResNet-20 shapes" * doctest::skip()) {
  auto time_ms = [](auto&& fn) { return testing::MedianWallMs(fn); };
  const Case shapes[] = {{64, 32, 64, 14, 14, 1, 1, 1, 1},
                         {1, 32, 64, 14, 14, 1, 1, 1, 1},
                         {64, 16, 16, 32, 32, 1, 1, 1, 1},
                         {64, 32, 32, 16, 16, 1, 1, 1, 1},
                         {64, 64, 64, 8, 8, 1, 1, 1, 1}};
  for (int threads : {1, 2}) {
    runtime::CpuContext cpu(threads);
    for (const Case& k : shapes) {
      ConvGeometry g = Geometry(k);
      auto x = Random(g.n * g.c * k.h * k.w, 1), f = Random(g.o * g.c * 9, 2);
      std::vector<float> y(g.n * g.o * g.w.out[0] * g.w.out[1]), dx(x.size());
      OneDnnConv dnnl;
      const double d_fwd = time_ms([&] { CHECK(dnnl.Forward(cpu.onednn(), g, x.data(), f.data(), y.data()).ok()); });
      const double d_bwd =
          time_ms([&] { CHECK(dnnl.BackwardData(cpu.onednn(), g, f.data(), y.data(), dx.data()).ok()); });
      std::string wino;
      for (int tile : {2, 4}) {
        WinogradConv wc;
        wc.SetFilter(g, f.data(), tile);
        const double w_fwd = time_ms([&] { wc.Forward(g, x.data(), {}, y.data(), {}, {}, threads); });
        WinogradConv wb;
        const double w_bwd = time_ms([&] {
          wb.SetFilterForBackwardData(g, f.data(), tile);
          wb.BackwardData(g, y.data(), {}, dx.data(), {}, threads);
        });
        std::vector<float> dw(f.size());
        const double w_bww =
            time_ms([&] { WinogradBackwardWeights(g, x.data(), {}, y.data(), {}, dw.data(), threads, tile); });
        wino += fmt::format("; F({0}x{0}) forward {1:.3f} backward-data {2:.3f} backward-weights {3:.3f}", tile, w_fwd,
                            w_bwd, w_bww);
      }
      std::vector<float> dw(f.size());
      const double d_bww =
          time_ms([&] { CHECK(dnnl.BackwardWeights(cpu.onednn(), g, x.data(), y.data(), dw.data()).ok()); });
      MESSAGE(
          fmt::format("{} threads, n={} {}->{} {}x{}: oneDNN forward {:.3f} backward-data {:.3f} backward-weights "
                      "{:.3f}{} (filter transform included)",
                      threads, k.n, k.c, k.o, k.h, k.w, d_fwd, d_bwd, d_bww, wino));
    }
  }
}

}  // namespace
}  // namespace paddlec::ops::nn
