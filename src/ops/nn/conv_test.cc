// conv2d, depthwise_conv2d and conv2d_transpose (and their gradients) against naive double-precision
// convolutions written here and checksums recorded from PaddlePaddle, gradient checks, shape errors,
// oneDNN primitive caching, and a (skipped) layout benchmark.
#include <algorithm>
#include <cmath>
#include <ctime>

#include "nn/conv_onednn.h"
#include "paddlec/runtime/device_context.h"
#include "paddlec/runtime/onednn.h"
#include "testing/median_timer.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

namespace nn = ops::nn;

struct ConvCase {
  Dims x, f;
  std::vector<int> strides{1, 1}, paddings{0, 0}, dilations{1, 1};
  int groups = 1;
  std::string algorithm = "EXPLICIT";
};

/// Padding [top, bottom, left, right] and effective dilation of a case, per PaddlePaddle's rules,
/// computed independently of the op's code.
void RefPadding(const ConvCase& c, int64_t pad[4], int64_t dil[2]) {
  for (int a = 0; a < 2; ++a) {
    dil[a] = c.dilations[a];
    pad[2 * a] = c.paddings.size() == 4 ? c.paddings[2 * a] : c.paddings[a];
    pad[2 * a + 1] = c.paddings.size() == 4 ? c.paddings[2 * a + 1] : c.paddings[a];
    if (c.algorithm == "VALID") pad[2 * a] = pad[2 * a + 1] = 0;
    if (c.algorithm == "SAME") {
      int64_t in = c.x[2 + a], k = c.f[2 + a], s = c.strides[a];
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
      pad[2 * a] = total / 2;
      pad[2 * a + 1] = total - total / 2;
      dil[a] = 1;
    }
  }
}

/// Naive convolution in double: for each output pixel, sum over the zero-padded input window.
Tensor RefConv(const ConvCase& c, const Tensor& xt, const Tensor& ft, DType out_dtype) {
  int64_t pad[4], dil[2];
  RefPadding(c, pad, dil);
  std::vector<double> x = ToDoubles(xt), f = ToDoubles(ft);
  int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], O = c.f[0], KH = c.f[2], KW = c.f[3];
  int64_t G = c.groups, CG = C / G, OG = O / G;
  int64_t OH = (H + pad[0] + pad[1] - (dil[0] * (KH - 1) + 1)) / c.strides[0] + 1;
  int64_t OW = (W + pad[2] + pad[3] - (dil[1] * (KW - 1) + 1)) / c.strides[1] + 1;
  std::vector<double> y(N * O * OH * OW, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = 0;
          for (int64_t ci = 0; ci < CG; ++ci)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                int64_t h = oh * c.strides[0] - pad[0] + i * dil[0], w = ow * c.strides[1] - pad[2] + j * dil[1];
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                int64_t cin = (o / OG) * CG + ci;
                s += x[((n * C + cin) * H + h) * W + w] * f[((o * CG + ci) * KH + i) * KW + j];
              }
          y[((n * O + o) * OH + oh) * OW + ow] = s;
        }
  return Cast(MakeTensor<double>({N, O, OH, OW}, y), out_dtype);
}

/// Binds a conv2d case to `t` (an OpTest of conv2d).
void SetUpConv(OpTest& t, const ConvCase& c, const Tensor& x, const Tensor& f) {
  t.Input("Input", x).Input("Filter", f).Output("Output");
  if (c.strides != std::vector<int>{1, 1}) t.Attr("strides", c.strides);
  if (c.paddings != std::vector<int>{0, 0}) t.Attr("paddings", c.paddings);
  if (c.dilations != std::vector<int>{1, 1}) t.Attr("dilations", c.dilations);
  if (c.groups != 1) t.Attr("groups", c.groups);
  if (c.algorithm != "EXPLICIT") t.Attr("padding_algorithm", c.algorithm);
}

std::vector<ConvCase> Cases() {
  std::vector<ConvCase> cs;
  cs.push_back({.x = {2, 3, 7, 7}, .f = {4, 3, 3, 3}});  // defaults
  cs.push_back({.x = {2, 3, 13, 13}, .f = {5, 3, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}});
  cs.push_back({.x = {1, 2, 13, 7}, .f = {3, 2, 3, 3}, .paddings = {2, 2}, .dilations = {2, 2}});
  cs.push_back({.x = {2, 4, 7, 7}, .f = {6, 2, 3, 3}, .paddings = {1, 1}, .groups = 2});
  cs.push_back({.x = {2, 3, 13, 7}, .f = {4, 3, 3, 2}, .strides = {2, 3}, .algorithm = "SAME"});
  cs.push_back({.x = {1, 3, 7, 13}, .f = {2, 3, 4, 3}, .strides = {2, 1}, .paddings = {5, 5}, .algorithm = "VALID"});
  cs.push_back({.x = {2, 2, 7, 7}, .f = {4, 2, 3, 3}, .paddings = {0, 2, 1, 0}});  // top, bottom, left, right
  cs.push_back(
      {.x = {1, 6, 7, 7}, .f = {6, 1, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}, .groups = 6});  // depthwise
  cs.push_back({.x = {1, 16, 13, 13}, .f = {32, 16, 5, 5}, .strides = {1, 2}, .paddings = {2, 1}});
  // SAME resets dilations to 1 (PaddlePaddle's UpdatePaddingAndDilation).
  cs.push_back({.x = {1, 2, 7, 7}, .f = {2, 2, 3, 3}, .dilations = {2, 2}, .algorithm = "SAME"});
  return cs;
}

// float32 (oneDNN) within 1e-5 relative + 1e-5 absolute of the double reference; float64 (direct
// loops) within 1e-12.
TEST_CASE("conv2d matches a naive convolution in float32 and float64") {
  int seed = 0;
  for (const ConvCase& c : Cases()) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.f.ToString());
    CAPTURE(c.algorithm);
    seed += 2;
    Tensor x = RandomTensor(DType::kFloat32, c.x, seed), f = RandomTensor(DType::kFloat32, c.f, seed + 1);
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      OpTest t("conv2d");
      SetUpConv(t, c, Cast(x, dt), Cast(f, dt));
      REQUIRE_OK(t.Run());
      Tolerance tol = dt == DType::kFloat32 ? Tolerance{1e-5, 1e-5} : Tolerance{1e-12, 1e-12};
      t.ExpectOutput("Output", RefConv(c, x, f, dt), tol);
    }
  }
}

TEST_CASE("conv2d keeps an unknown batch at compile time") {
  ConvCase c{.x = {3, 1, 28, 28}, .f = {32, 1, 3, 3}, .paddings = {1, 1}};
  Tensor x = RandomTensor(DType::kFloat32, c.x, 1), f = RandomTensor(DType::kFloat32, c.f, 2);
  OpTest t("conv2d");
  SetUpConv(t, c, x, f);
  t.CompileDims("Input", {-1, 1, 28, 28});
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Output") == Dims{-1, 32, 28, 28});

  ConvCase s{.x = {2, 3, 13, 7}, .f = {4, 3, 3, 3}, .strides = {2, 2}, .algorithm = "SAME"};
  OpTest same("conv2d");
  SetUpConv(same, s, RandomTensor(DType::kFloat32, s.x, 3), RandomTensor(DType::kFloat32, s.f, 4));
  same.CompileDims("Input", {-1, 3, -1, 7});
  REQUIRE_OK(same.Run());
  CHECK(same.CompiledDims("Output") == Dims{-1, 4, -1, 4});
}

TEST_CASE("conv2d shape errors name the slots and shapes") {
  auto make = [](OpTest& t, Dims x, Dims f) {
    t.Input("Input", RandomTensor(DType::kFloat32, x, 1)).Input("Filter", RandomTensor(DType::kFloat32, f, 2));
    t.Output("Output");
  };
  {
    OpTest t("conv2d");
    make(t, {2, 3, 7, 7}, {4, 2, 3, 3});
    CHECK(CompileError(t) ==
          "Input has shape [2, 3, 7, 7] (3 channels) but Filter has shape [4, 2, 3, 3]: Input channels must equal "
          "Filter.dims[1] * groups = 2 * 1 = 2");
  }
  {
    OpTest t("conv2d");
    make(t, {2, 4, 7, 7}, {5, 2, 3, 3});
    t.Attr("groups", 2);
    CHECK(CompileError(t) == "Filter has shape [5, 2, 3, 3]: its 5 output channels are not divisible by groups = 2");
  }
  {
    OpTest t("conv2d");
    make(t, {1, 1, 2, 5}, {1, 1, 3, 3});
    CHECK(CompileError(t) ==
          "Input has shape [1, 1, 2, 5] but Filter has shape [1, 1, 3, 3]: the filter height 3 (dilation 1, spanning "
          "3) does not fit the input height 2 padded by 0 and 0");
  }
  {
    OpTest t("conv2d");
    make(t, {1, 1, 9, 5}, {1, 1, 3, 3});
    t.Attr("dilations", std::vector<int>{1, 3});
    CHECK(CompileError(t) ==
          "Input has shape [1, 1, 9, 5] but Filter has shape [1, 1, 3, 3]: the filter width 3 (dilation 3, spanning "
          "7) does not fit the input width 5 padded by 0 and 0");
  }
  {
    OpTest t("conv2d");
    make(t, {1, 7, 7, 3}, {4, 3, 3, 3});
    t.Attr("data_format", "NHWC");
    CHECK(CompileError(t) ==
          "data_format 'NHWC' is not supported: conv2d takes NCHW input (set data_format to \"NCHW\" and transpose "
          "the input)");
  }
  {
    OpTest t("conv2d");
    make(t, {1, 3, 7, 7}, {4, 3, 3, 3});
    t.Attr("paddings", std::vector<int>{1, 1, 1});
    CHECK(CompileError(t) ==
          "attribute 'paddings' has 3 values but conv2d needs 2 (height, width) or 4 (top, bottom, left, right)");
  }
  {
    OpTest t("conv2d");
    make(t, {3, 7, 7}, {4, 3, 3, 3});
    CHECK(CompileError(t) == "Input has shape [3, 7, 7] (rank 3) but conv2d needs a 4-D NCHW input");
  }
  {
    OpTest t("conv2d");
    make(t, {1, 3, 7, 7}, {4, 3, 3, 3});
    t.Attr("fuse_relu", true);
    CHECK(CompileError(t) ==
          "attribute 'fuse_relu' = true asks for a fused oneDNN kernel, which paddlec does not implement; express "
          "the fused operation as separate ops");
  }
  {
    OpTest t("conv2d");
    make(t, {1, 3, 7, 7}, {4, 3, 3, 3});
    t.Attr("groups", 0);
    CHECK(CompileError(t) == "attribute 'groups' value 0 is out of range: must be >= 1");
  }
}

// blocked_input / blocked_output (set by the layout pass) on tensors whose channels are not whole
// blocks, or on float64: an error from every kernel, never a read past the tensor. 12 channels are
// a whole number of neither 8- nor 16-channel blocks; 12 -> 12 3x3 runs on Winograd, 12 -> 2 on
// oneDNN.
TEST_CASE("conv2d, conv2d_grad and fused_conv2d_bn_act refuse blocked activations that are not whole channel blocks") {
  for (int64_t out_channels : {12, 2}) {
    for (const char* attr : {"blocked_input", "blocked_output"}) {
      CAPTURE(out_channels);
      CAPTURE(attr);
      const Dims x{2, 12, 6, 6}, f{out_channels, 12, 3, 3}, y{2, out_channels, 6, 6};
      OpTest fwd("conv2d");
      fwd.Input("Input", RandomTensor(DType::kFloat32, x, 40)).Input("Filter", RandomTensor(DType::kFloat32, f, 41));
      fwd.Output("Output").Attr("paddings", std::vector<int>{1, 1}).Attr(attr, true);
      Status st = fwd.Run();
      REQUIRE_FALSE(st.ok());
      CHECK(st.error().message().find("needs a multiple of") != std::string::npos);
      OpTest grad("conv2d_grad");
      grad.Input("Input", RandomTensor(DType::kFloat32, x, 42)).Input("Filter", RandomTensor(DType::kFloat32, f, 43));
      grad.Input("Output@GRAD", RandomTensor(DType::kFloat32, y, 44)).Output("Input@GRAD").Output("Filter@GRAD");
      grad.Attr("paddings", std::vector<int>{1, 1}).Attr(attr, true);
      st = grad.Run();
      REQUIRE_FALSE(st.ok());
      CHECK(st.error().message().find("needs a multiple of") != std::string::npos);
    }
  }
  OpTest fused("fused_conv2d_bn_act");
  fused.Input("Input", RandomTensor(DType::kFloat32, {2, 12, 6, 6}, 47));
  fused.Input("Filter", RandomTensor(DType::kFloat32, {12, 12, 3, 3}, 48)).Output("Output");
  fused.Attr("paddings", std::vector<int>{1, 1}).Attr("blocked_input", true);
  Status fused_st = fused.Run();
  REQUIRE_FALSE(fused_st.ok());
  CHECK(fused_st.error().message().find("needs a multiple of") != std::string::npos);
  OpTest wide("conv2d");
  wide.Input("Input", RandomTensor(DType::kFloat64, {1, 16, 4, 4}, 45));
  wide.Input("Filter", RandomTensor(DType::kFloat64, {16, 16, 3, 3}, 46)).Output("Output").Attr("blocked_input", true);
  Status st = wide.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message().find("float32") != std::string::npos);
}

// Central differences in float64 with step 1e-6: the loss is bilinear in Input and Filter, so the
// only error is rounding (~1e-10); tolerance 1e-7 absolute + 1e-6 relative.
TEST_CASE("conv2d_grad matches central differences") {
  std::vector<ConvCase> cs = {
      {.x = {2, 3, 7, 7}, .f = {4, 3, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}},
      {.x = {1, 4, 7, 5}, .f = {4, 2, 3, 3}, .paddings = {1, 0, 2, 1}, .dilations = {2, 1}, .groups = 2},
      {.x = {2, 2, 7, 7}, .f = {3, 2, 3, 2}, .strides = {2, 1}, .algorithm = "SAME"},
  };
  int seed = 10;
  for (const ConvCase& c : cs) {
    CAPTURE(c.x.ToString());
    seed += 2;
    OpTest t("conv2d");
    SetUpConv(t, c, RandomTensor(DType::kFloat32, c.x, seed), RandomTensor(DType::kFloat32, c.f, seed + 1));
    t.CheckGrad({.inputs = {"Input", "Filter"}, .output = "Output", .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
}

// The float32 oneDNN backward primitives against the float64 direct loops, on shapes where oneDNN
// picks both plain (1 input channel) and blocked layouts; tolerance 1e-4 relative + 1e-4 absolute
// (sums of up to a few thousand float32 products).
TEST_CASE("conv2d_grad float32 (oneDNN) matches float64 (direct)") {
  std::vector<ConvCase> cs = {
      {.x = {4, 1, 28, 28}, .f = {32, 1, 3, 3}, .paddings = {1, 1}},
      {.x = {4, 32, 14, 14}, .f = {64, 32, 3, 3}, .paddings = {1, 1}},
      {.x = {3, 8, 13, 13},
       .f = {12, 4, 3, 3},
       .strides = {2, 2},
       .paddings = {1, 1},
       .dilations = {2, 2},
       .groups = 2},
  };
  int seed = 20;
  for (const ConvCase& c : cs) {
    CAPTURE(c.x.ToString());
    seed += 3;
    Tensor x = RandomTensor(DType::kFloat32, c.x, seed), f = RandomTensor(DType::kFloat32, c.f, seed + 1);
    Tensor y = RefConv(c, x, f, DType::kFloat32);
    Tensor dy = RandomTensor(DType::kFloat32, y.dims(), seed + 2);
    std::map<DType, std::pair<Tensor, Tensor>> grads;
    for (DType dt : {DType::kFloat64, DType::kFloat32}) {
      OpTest t("conv2d_grad");
      t.Input("Input", Cast(x, dt)).Input("Filter", Cast(f, dt)).Input("Output@GRAD", Cast(dy, dt));
      t.Output("Input@GRAD").Output("Filter@GRAD");
      if (c.strides != std::vector<int>{1, 1}) t.Attr("strides", c.strides);
      if (c.paddings != std::vector<int>{0, 0}) t.Attr("paddings", c.paddings);
      if (c.dilations != std::vector<int>{1, 1}) t.Attr("dilations", c.dilations);
      if (c.groups != 1) t.Attr("groups", c.groups);
      REQUIRE_OK(t.Run());
      grads[dt] = {t.Out("Input@GRAD"), t.Out("Filter@GRAD")};
    }
    ExpectClose(grads[DType::kFloat32].first, grads[DType::kFloat64].first, {1e-4, 1e-4}, "Input@GRAD");
    ExpectClose(grads[DType::kFloat32].second, grads[DType::kFloat64].second, {1e-4, 1e-4}, "Filter@GRAD");
  }
}

TEST_CASE("depthwise_conv2d is conv2d with groups = channels, forward and gradient") {
  std::vector<ConvCase> cs = {
      {.x = {2, 8, 9, 9}, .f = {8, 1, 3, 3}, .paddings = {1, 1}, .groups = 8},
      {.x = {1, 4, 11, 10}, .f = {8, 1, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}, .groups = 4},  // multiplier 2
      {.x = {2, 6, 7, 9}, .f = {6, 1, 5, 5}, .strides = {1, 2}, .groups = 6, .algorithm = "SAME"},
      {.x = {1, 16, 14, 14}, .f = {16, 1, 3, 3}, .paddings = {2, 2}, .dilations = {2, 2}, .groups = 16},
  };
  int seed = 60;
  for (const ConvCase& c : cs) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.f.ToString());
    seed += 2;
    Tensor x = RandomTensor(DType::kFloat32, c.x, seed), f = RandomTensor(DType::kFloat32, c.f, seed + 1);
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      OpTest t("depthwise_conv2d");
      SetUpConv(t, c, Cast(x, dt), Cast(f, dt));
      REQUIRE_OK(t.Run());
      Tolerance tol = dt == DType::kFloat32 ? Tolerance{1e-5, 1e-5} : Tolerance{1e-12, 1e-12};
      t.ExpectOutput("Output", RefConv(c, x, f, dt), tol);
    }
    OpTest t("depthwise_conv2d");
    SetUpConv(t, c, x, f);
    t.CheckGrad({.inputs = {"Input", "Filter"}, .output = "Output", .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
}

TEST_CASE("depthwise_conv2d_grad float32 (oneDNN) matches float64 (direct)") {
  ConvCase c{.x = {4, 32, 14, 14}, .f = {32, 1, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}, .groups = 32};
  Tensor x = RandomTensor(DType::kFloat32, c.x, 70), f = RandomTensor(DType::kFloat32, c.f, 71);
  Tensor dy = RandomTensor(DType::kFloat32, RefConv(c, x, f, DType::kFloat32).dims(), 72);
  std::map<DType, std::pair<Tensor, Tensor>> grads;
  for (DType dt : {DType::kFloat64, DType::kFloat32}) {
    OpTest t("depthwise_conv2d_grad");
    t.Input("Input", Cast(x, dt)).Input("Filter", Cast(f, dt)).Input("Output@GRAD", Cast(dy, dt));
    t.Output("Input@GRAD").Output("Filter@GRAD");
    t.Attr("strides", c.strides).Attr("paddings", c.paddings).Attr("groups", c.groups);
    REQUIRE_OK(t.Run());
    grads[dt] = {t.Out("Input@GRAD"), t.Out("Filter@GRAD")};
  }
  ExpectClose(grads[DType::kFloat32].first, grads[DType::kFloat64].first, {1e-4, 1e-4}, "Input@GRAD");
  ExpectClose(grads[DType::kFloat32].second, grads[DType::kFloat64].second, {1e-4, 1e-4}, "Filter@GRAD");
}

// ---- conv2d_transpose --------------------------------------------------------------------------

struct TransposeCase {
  Dims x, f;  // Input [N, C, H, W], Filter [C, O / groups, KH, KW]
  std::vector<int> strides{1, 1}, paddings{0, 0}, dilations{1, 1}, output_padding{}, output_size{};
  int groups = 1;
  std::string algorithm = "EXPLICIT";
};

void SetUpTranspose(OpTest& t, const TransposeCase& c, const Tensor& x, const Tensor& f) {
  t.Input("Input", x).Input("Filter", f).Output("Output");
  if (c.strides != std::vector<int>{1, 1}) t.Attr("strides", c.strides);
  if (c.paddings != std::vector<int>{0, 0}) t.Attr("paddings", c.paddings);
  if (c.dilations != std::vector<int>{1, 1}) t.Attr("dilations", c.dilations);
  if (!c.output_padding.empty()) t.Attr("output_padding", c.output_padding);
  if (!c.output_size.empty()) t.Attr("output_size", c.output_size);
  if (c.groups != 1) t.Attr("groups", c.groups);
  if (c.algorithm != "EXPLICIT") t.Attr("padding_algorithm", c.algorithm);
}

/// Naive transposed convolution in double, by scattering: every input pixel adds its products with the
/// filter taps into the output positions they reach (those inside the output).
Tensor RefTranspose(const TransposeCase& c, const Tensor& xt, const Tensor& ft, DType out_dtype) {
  std::vector<double> x = ToDoubles(xt), f = ToDoubles(ft);
  int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], OG = c.f[1], KH = c.f[2], KW = c.f[3];
  int64_t G = c.groups, CG = C / G, O = OG * G;
  int64_t pad[4], dil[2] = {c.dilations[0], c.dilations[1]}, in[2] = {H, W}, k[2] = {KH, KW}, out[2];
  for (int a = 0; a < 2; ++a) {
    pad[2 * a] = c.paddings.size() == 4 ? c.paddings[2 * a] : c.paddings[a];
    pad[2 * a + 1] = c.paddings.size() == 4 ? c.paddings[2 * a + 1] : c.paddings[a];
    if (c.algorithm == "VALID") pad[2 * a] = pad[2 * a + 1] = 0;
    if (c.algorithm == "SAME") {
      int64_t s = c.strides[a], o = (in[a] + s - 1) / s, total = std::max<int64_t>((o - 1) * s + k[a] - in[a], 0);
      pad[2 * a] = total / 2;
      pad[2 * a + 1] = total - total / 2;
      dil[a] = 1;
    }
    out[a] = (in[a] - 1) * c.strides[a] - pad[2 * a] - pad[2 * a + 1] + dil[a] * (k[a] - 1) + 1;
    if (!c.output_size.empty()) out[a] = c.output_size[a];
    if (!c.output_padding.empty()) out[a] += c.output_padding[a];
  }
  std::vector<double> y(N * O * out[0] * out[1], 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          for (int64_t og = 0; og < OG; ++og)
            for (int64_t i = 0; i < KH; ++i)
              for (int64_t j = 0; j < KW; ++j) {
                int64_t oh = h * c.strides[0] - pad[0] + i * dil[0], ow = w * c.strides[1] - pad[2] + j * dil[1];
                if (oh < 0 || oh >= out[0] || ow < 0 || ow >= out[1]) continue;
                int64_t o = (ci / CG) * OG + og;
                y[((n * O + o) * out[0] + oh) * out[1] + ow] +=
                    x[((n * C + ci) * H + h) * W + w] * f[((ci * OG + og) * KH + i) * KW + j];
              }
  return Cast(MakeTensor<double>({N, O, out[0], out[1]}, y), out_dtype);
}

/// f(0.37 * i) for i = 0, 1, ... in the shape `d` (the inputs of the recorded PaddlePaddle runs).
Tensor Deterministic(const Dims& d, double (*f)(double)) {
  std::vector<float> v(d.Numel());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(f(0.37 * static_cast<double>(i)));
  return MakeTensor<float>(d, v);
}

std::vector<TransposeCase> TransposeCases() {
  return {
      {.x = {2, 4, 5, 5}, .f = {4, 3, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}, .output_padding = {1, 1}},
      {.x = {1, 4, 4, 6},
       .f = {4, 2, 3, 2},
       .strides = {2, 3},
       .paddings = {1, 0},
       .output_size = {8, 17},
       .groups = 2},
      {.x = {2, 3, 5, 4}, .f = {3, 2, 3, 3}, .paddings = {0, 1, 2, 0}, .dilations = {2, 2}},
      {.x = {1, 2, 5, 7}, .f = {2, 3, 4, 3}, .strides = {2, 2}, .algorithm = "SAME"},
      {.x = {1, 2, 5, 7}, .f = {2, 3, 3, 3}, .strides = {1, 2}, .paddings = {3, 3}, .algorithm = "VALID"},
      {.x = {1, 6, 4, 4}, .f = {6, 1, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}, .groups = 6},
  };
}

// Recorded with PaddlePaddle 3.3.1 (CPU): F.conv2d_transpose(x, w, ...) with x = sin(0.37 * arange),
// w = cos(0.37 * arange), then sum(out * (arange(out.size) % 7 + 1)).
TEST_CASE("conv2d_transpose matches PaddlePaddle's outputs and a naive transposed convolution") {
  const std::pair<Dims, double> recorded[] = {
      {{2, 3, 10, 10}, -367.029509678483}, {{1, 4, 8, 17}, -185.6421116963029}, {{2, 2, 8, 6}, 22.30658446252346},
      {{1, 3, 9, 13}, -14.44585357606411}, {{1, 3, 7, 15}, 11.842136159539223}, {{1, 6, 7, 7}, -22.378174089535605},
  };
  std::vector<TransposeCase> cs = TransposeCases();
  for (size_t k = 0; k < cs.size(); ++k) {
    const TransposeCase& c = cs[k];
    CAPTURE(c.x.ToString());
    CAPTURE(c.f.ToString());
    Tensor x = Deterministic(c.x, [](double v) { return std::sin(v); });
    Tensor f = Deterministic(c.f, [](double v) { return std::cos(v); });
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      OpTest t("conv2d_transpose");
      SetUpTranspose(t, c, Cast(x, dt), Cast(f, dt));
      REQUIRE_OK(t.Run());
      REQUIRE(t.Out("Output").dims() == recorded[k].first);
      Tolerance tol = dt == DType::kFloat32 ? Tolerance{1e-5, 1e-5} : Tolerance{1e-12, 1e-12};
      t.ExpectOutput("Output", RefTranspose(c, x, f, dt), tol);
      std::vector<double> y = ToDoubles(t.Out("Output"));
      double sum = 0;
      for (size_t i = 0; i < y.size(); ++i) sum += y[i] * static_cast<double>(i % 7 + 1);
      CHECK(std::abs(sum - recorded[k].second) <= 1e-4 * std::max(1.0, std::abs(recorded[k].second)));
    }
  }
}

TEST_CASE("conv2d_transpose_grad matches central differences") {
  std::vector<TransposeCase> cs = TransposeCases();
  int seed = 80;
  for (const TransposeCase& c : cs) {
    CAPTURE(c.x.ToString());
    seed += 2;
    OpTest t("conv2d_transpose");
    SetUpTranspose(t, c, RandomTensor(DType::kFloat32, c.x, seed), RandomTensor(DType::kFloat32, c.f, seed + 1));
    t.CheckGrad({.inputs = {"Input", "Filter"}, .output = "Output", .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
}

TEST_CASE("conv2d_transpose_grad float32 (oneDNN) matches float64 (direct)") {
  for (const TransposeCase& c : TransposeCases()) {
    CAPTURE(c.x.ToString());
    Tensor x = RandomTensor(DType::kFloat32, c.x, 90), f = RandomTensor(DType::kFloat32, c.f, 91);
    Tensor dy = RandomTensor(DType::kFloat32, RefTranspose(c, x, f, DType::kFloat32).dims(), 92);
    std::map<DType, std::pair<Tensor, Tensor>> grads;
    for (DType dt : {DType::kFloat64, DType::kFloat32}) {
      OpTest t("conv2d_transpose_grad");
      t.Input("Input", Cast(x, dt)).Input("Filter", Cast(f, dt)).Input("Output@GRAD", Cast(dy, dt));
      t.Output("Input@GRAD").Output("Filter@GRAD");
      if (c.strides != std::vector<int>{1, 1}) t.Attr("strides", c.strides);
      if (c.paddings != std::vector<int>{0, 0}) t.Attr("paddings", c.paddings);
      if (c.dilations != std::vector<int>{1, 1}) t.Attr("dilations", c.dilations);
      if (!c.output_padding.empty()) t.Attr("output_padding", c.output_padding);
      if (!c.output_size.empty()) t.Attr("output_size", c.output_size);
      if (c.groups != 1) t.Attr("groups", c.groups);
      if (c.algorithm != "EXPLICIT") t.Attr("padding_algorithm", c.algorithm);
      REQUIRE_OK(t.Run());
      grads[dt] = {t.Out("Input@GRAD"), t.Out("Filter@GRAD")};
    }
    ExpectClose(grads[DType::kFloat32].first, grads[DType::kFloat64].first, {1e-4, 1e-4}, "Input@GRAD");
    ExpectClose(grads[DType::kFloat32].second, grads[DType::kFloat64].second, {1e-4, 1e-4}, "Filter@GRAD");
  }
}

TEST_CASE("conv2d_transpose keeps unknown sizes and names the attributes in its errors") {
  TransposeCase c{.x = {3, 4, 5, 5}, .f = {4, 3, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}};
  OpTest unknown("conv2d_transpose");
  SetUpTranspose(unknown, c, RandomTensor(DType::kFloat32, c.x, 1), RandomTensor(DType::kFloat32, c.f, 2));
  unknown.CompileDims("Input", {-1, 4, -1, 5});
  REQUIRE_OK(unknown.Run());
  CHECK(unknown.CompiledDims("Output") == Dims{-1, 3, -1, 9});

  auto error = [](TransposeCase tc) {
    OpTest t("conv2d_transpose");
    SetUpTranspose(t, tc, RandomTensor(DType::kFloat32, tc.x, 1), RandomTensor(DType::kFloat32, tc.f, 2));
    return CompileError(t);
  };
  TransposeCase big = c;
  big.output_size = {11, 9};
  CHECK(error(big) ==
        "attribute 'output_size' asks for height 11 but Input [3, 4, 5, 5] and Filter [4, 3, 3, 3] give height 9 (or "
        "up to 10 with an output padding below the stride 2)");
  TransposeCase pad = c;
  pad.output_padding = {2, 0};
  CHECK(error(pad) == "attribute 'output_padding' has height 2 but it must be in [0, max(stride 2, dilation 1))");
  TransposeCase channels = c;
  channels.f = {3, 3, 3, 3};
  CHECK(error(channels) ==
        "Input has shape [3, 4, 5, 5] (4 channels) but Filter has shape [3, 3, 3, 3]: Input channels must equal "
        "Filter.dims[0]");
  TransposeCase dil = c;
  dil.strides = {1, 1};
  dil.dilations = {2, 2};
  dil.output_padding = {1, 0};
  CHECK(error(dil) ==
        "attribute 'output_padding' has height 1, not below the stride 1: paddlec computes a transposed convolution "
        "only when the output padding is smaller than the stride");
}

/// Geometry of a case for calling the oneDNN wrapper directly (explicit symmetric padding).
nn::ConvGeometry Geometry(const ConvCase& c) {
  nn::ConvGeometry g;
  g.n = c.x[0], g.c = c.x[1], g.o = c.f[0], g.groups = c.groups;
  int64_t pad[4], dil[2];
  RefPadding(c, pad, dil);
  for (int a = 0; a < 2; ++a) {
    g.w.in[a] = c.x[2 + a];
    g.w.kernel[a] = c.f[2 + a];
    g.w.stride[a] = c.strides[a];
    g.w.dilation[a] = dil[a];
    g.w.out[a] = (g.w.in[a] + pad[2 * a] + pad[2 * a + 1] - (dil[a] * (g.w.kernel[a] - 1) + 1)) / c.strides[a] + 1;
  }
  std::copy(pad, pad + 4, g.w.pad);
  return g;
}

TEST_CASE("oneDNN layouts: plain backward-data for few input channels, blocked for depthwise") {
  auto layouts = [](const ConvCase& c) { return nn::DefaultConvLayouts(Geometry(c)); };
  CHECK(layouts({.x = {4, 1, 28, 28}, .f = {32, 1, 3, 3}, .paddings = {1, 1}}).backward_data == nn::ConvLayout::kPlain);
  CHECK(layouts({.x = {4, 32, 14, 14}, .f = {64, 32, 3, 3}, .paddings = {1, 1}}).backward_data ==
        nn::ConvLayout::kBlocked);
  nn::ConvLayouts dw = layouts({.x = {4, 32, 14, 14}, .f = {32, 1, 3, 3}, .paddings = {1, 1}, .groups = 32});
  CHECK(dw.forward == nn::ConvLayout::kBlocked);
  CHECK(dw.backward_data == nn::ConvLayout::kBlocked);
  CHECK(dw.backward_weights == nn::ConvLayout::kBlocked);
}

TEST_CASE("conv2d oneDNN primitives are rebuilt when the shape changes, and both layouts agree") {
  runtime::CpuContext cpu(1);
  ConvCase a{.x = {2, 8, 9, 9}, .f = {16, 8, 3, 3}, .paddings = {1, 1}};
  ConvCase b{.x = {3, 8, 7, 11}, .f = {16, 8, 3, 3}, .strides = {2, 2}};
  for (auto layout : {nn::ConvLayout::kPlain, nn::ConvLayout::kBlocked}) {
    nn::OneDnnConv conv(nn::ConvLayouts{layout, layout, layout});
    int seed = 30;
    for (const ConvCase* c : {&a, &b, &a}) {
      seed += 2;
      Tensor x = RandomTensor(DType::kFloat32, c->x, seed), f = RandomTensor(DType::kFloat32, c->f, seed + 1);
      Tensor expected = RefConv(*c, x, f, DType::kFloat32);
      Tensor y(DType::kFloat32, expected.dims());
      REQUIRE(y.Allocate(HostAllocator()).ok());
      REQUIRE_OK(conv.Forward(cpu.onednn(), Geometry(*c), x.data<float>(), f.data<float>(), y.data<float>()));
      ExpectClose(y, expected, {1e-5, 1e-5}, "oneDNN forward " + conv.ImplInfo());
    }
  }
}

// Times the three primitives on the LeNet shapes with each layout. Skipped by default (timings are
// not assertions); run: ./build/ops_test -tc='conv2d benchmark*' --no-skip
TEST_CASE("conv2d benchmark: plain vs blocked layouts on LeNet shapes" * doctest::skip()) {
  struct Shape {
    const char* name;
    ConvCase c;
  };
  const Shape shapes[] = {{"1->32 28x28", {.x = {64, 1, 28, 28}, .f = {32, 1, 3, 3}, .paddings = {1, 1}}},
                          {"32->64 14x14", {.x = {64, 32, 14, 14}, .f = {64, 32, 3, 3}, .paddings = {1, 1}}}};
  auto time_ms = [](auto&& fn) { return MedianWallMs(fn); };
  for (int threads : {1, 2}) {
    runtime::CpuContext cpu(threads);
    for (const Shape& s : shapes) {
      nn::ConvGeometry g = Geometry(s.c);
      Tensor x = RandomTensor(DType::kFloat32, s.c.x, 1), f = RandomTensor(DType::kFloat32, s.c.f, 2);
      Tensor y = RefConv(s.c, x, f, DType::kFloat32), dx = Cast(x, DType::kFloat32), df = Cast(f, DType::kFloat32);
      for (auto layout : {nn::ConvLayout::kPlain, nn::ConvLayout::kBlocked}) {
        nn::OneDnnConv conv(nn::ConvLayouts{layout, layout, layout});
        double fwd = time_ms(
            [&] { CHECK_OK(conv.Forward(cpu.onednn(), g, x.data<float>(), f.data<float>(), y.data<float>())); });
        double bd = time_ms(
            [&] { CHECK_OK(conv.BackwardData(cpu.onednn(), g, f.data<float>(), y.data<float>(), dx.data<float>())); });
        double bw = time_ms([&] {
          CHECK_OK(conv.BackwardWeights(cpu.onednn(), g, x.data<float>(), y.data<float>(), df.data<float>()));
        });
        MESSAGE(fmt::format(
            "{} threads, {}, {}: forward {:.3f} ms, backward-data {:.3f} ms, backward-weights {:.3f} ms [{}]", threads,
            s.name, layout == nn::ConvLayout::kPlain ? "plain  " : "blocked", fwd, bd, bw, conv.ImplInfo()));
      }
    }
  }
}

// Times a MobileNet-style 3x3 depthwise layer's three oneDNN primitives with each layout, in CPU time
// per call on one thread. Skipped by default; run:
//   OMP_NUM_THREADS=1 ./build/ops_test -tc='depthwise_conv2d benchmark*' --no-skip
TEST_CASE("depthwise_conv2d benchmark: oneDNN layouts" * doctest::skip()) {
  // CPU time of the process per call: on a shared machine, time the process was not running does not count.
  auto cpu_ms = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
  };
  auto time_ms = [&](auto&& fn) {
    for (int i = 0; i < 3; ++i) fn();
    std::vector<double> runs;
    for (int r = 0; r < 7; ++r) {
      int reps = 0;
      double t0 = cpu_ms(), el = 0;
      do {
        fn();
        ++reps;
        el = cpu_ms() - t0;
      } while (el < 100);
      runs.push_back(el / reps);
    }
    std::sort(runs.begin(), runs.end());
    return runs[runs.size() / 2];
  };
  struct Shape {
    const char* name;
    ConvCase c;
  };
  const Shape shapes[] = {
      {"c=256 28x28 batch 1", {.x = {1, 256, 28, 28}, .f = {256, 1, 3, 3}, .paddings = {1, 1}, .groups = 256}},
      {"c=256 28x28 batch 64", {.x = {64, 256, 28, 28}, .f = {256, 1, 3, 3}, .paddings = {1, 1}, .groups = 256}},
      {"c=32 112x112 batch 1", {.x = {1, 32, 112, 112}, .f = {32, 1, 3, 3}, .paddings = {1, 1}, .groups = 32}},
      {"c=512 14x14 s2 batch 64",
       {.x = {64, 512, 14, 14}, .f = {512, 1, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}, .groups = 512}},
  };
  runtime::CpuContext cpu(1);
  for (const Shape& s : shapes) {
    nn::ConvGeometry g = Geometry(s.c);
    Tensor x = RandomTensor(DType::kFloat32, s.c.x, 1), f = RandomTensor(DType::kFloat32, s.c.f, 2);
    Tensor y = RefConv(s.c, x, f, DType::kFloat32), dx = Cast(x, DType::kFloat32), df = Cast(f, DType::kFloat32);
    for (auto layout : {nn::ConvLayout::kPlain, nn::ConvLayout::kBlocked}) {
      nn::OneDnnConv conv(nn::ConvLayouts{layout, layout, layout});
      double fwd =
          time_ms([&] { CHECK_OK(conv.Forward(cpu.onednn(), g, x.data<float>(), f.data<float>(), y.data<float>())); });
      double bd = time_ms(
          [&] { CHECK_OK(conv.BackwardData(cpu.onednn(), g, f.data<float>(), y.data<float>(), dx.data<float>())); });
      double bw = time_ms(
          [&] { CHECK_OK(conv.BackwardWeights(cpu.onednn(), g, x.data<float>(), y.data<float>(), df.data<float>())); });
      MESSAGE(fmt::format("{}, {}: forward {:.3f} ms, backward-data {:.3f} ms, backward-weights {:.3f} ms [{}]", s.name,
                          layout == nn::ConvLayout::kPlain ? "plain  " : "blocked", fwd, bd, bw, conv.ImplInfo()));
    }
  }
}

}  // namespace
}  // namespace paddlec::testing
