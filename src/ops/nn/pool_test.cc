// pool2d / pool2d_grad against naive double-precision pooling loops written here, gradient checks
// and shape errors.
#include <algorithm>
#include <cmath>

#include "nn/conv_onednn.h"
#include "paddlec/ops/attrs.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

struct PoolCase {
  Dims x;
  std::vector<int> ksize;
  std::string type = "max";
  std::vector<int> strides{1, 1}, paddings{0, 0};
  bool global = false, ceil_mode = false, exclusive = true, adaptive = false;
  std::string algorithm = "EXPLICIT";
};

/// Reference pooling in double, following PaddlePaddle's Pool2dFunctor; windows covering no input
/// element give 0 (paddlec's choice).
Tensor RefPool(const PoolCase& c, const Tensor& xt, DType out_dtype) {
  std::vector<double> x = ToDoubles(xt);
  int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3];
  int64_t in[2] = {H, W}, k[2], s[2], pb[2], pa[2], out[2];
  for (int a = 0; a < 2; ++a) {
    k[a] = c.ksize[a];
    s[a] = c.strides[a];
    pb[a] = c.paddings.size() == 4 ? c.paddings[2 * a] : c.paddings[a];
    pa[a] = c.paddings.size() == 4 ? c.paddings[2 * a + 1] : c.paddings[a];
    if (c.algorithm == "VALID") pb[a] = pa[a] = 0;
    if (c.algorithm == "SAME") {
      int64_t o = (in[a] + s[a] - 1) / s[a], total = std::max<int64_t>((o - 1) * s[a] + k[a] - in[a], 0);
      pb[a] = total / 2;
      pa[a] = total - pb[a];
    }
    if (c.global || c.adaptive) pb[a] = pa[a] = 0;
    if (c.global) k[a] = in[a];
    int64_t span = in[a] + pb[a] + pa[a] - k[a];
    out[a] = c.adaptive ? c.ksize[a] : (c.ceil_mode ? (span + s[a] - 1) / s[a] : span / s[a]) + 1;
  }
  std::vector<double> y(N * C * out[0] * out[1]);
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t oh = 0; oh < out[0]; ++oh)
      for (int64_t ow = 0; ow < out[1]; ++ow) {
        int64_t b[2], e[2], o[2] = {oh, ow};
        for (int a = 0; a < 2; ++a) {
          if (c.adaptive) {
            b[a] = static_cast<int64_t>(std::floor(static_cast<double>(o[a]) * in[a] / out[a]));
            e[a] = static_cast<int64_t>(std::ceil(static_cast<double>(o[a] + 1) * in[a] / out[a]));
          } else {
            b[a] = std::max<int64_t>(o[a] * s[a] - pb[a], 0);
            e[a] = std::min<int64_t>(o[a] * s[a] - pb[a] + k[a], in[a]);
          }
        }
        double r = 0;
        if (b[0] < e[0] && b[1] < e[1]) {
          double m = -INFINITY, sum = 0;
          for (int64_t h = b[0]; h < e[0]; ++h)
            for (int64_t w = b[1]; w < e[1]; ++w) {
              m = std::max(m, x[(p * H + h) * W + w]);
              sum += x[(p * H + h) * W + w];
            }
          double count = (c.exclusive || c.adaptive) ? (e[0] - b[0]) * (e[1] - b[1]) : k[0] * k[1];
          r = c.type == "max" ? m : sum / count;
        }
        y[(p * out[0] + oh) * out[1] + ow] = r;
      }
  return Cast(MakeTensor<double>({N, C, out[0], out[1]}, y), out_dtype);
}

void SetUpPool(OpTest& t, const PoolCase& c, const Tensor& x) {
  t.Input("X", x).Output("Out").Attr("ksize", c.ksize);
  if (c.type != "max") t.Attr("pooling_type", c.type);
  if (c.strides != std::vector<int>{1, 1}) t.Attr("strides", c.strides);
  if (c.paddings != std::vector<int>{0, 0}) t.Attr("paddings", c.paddings);
  if (c.global) t.Attr("global_pooling", true);
  if (c.ceil_mode) t.Attr("ceil_mode", true);
  if (!c.exclusive) t.Attr("exclusive", false);
  if (c.adaptive) t.Attr("adaptive", true);
  if (c.algorithm != "EXPLICIT") t.Attr("padding_algorithm", c.algorithm);
}

std::vector<PoolCase> Cases() {
  std::vector<PoolCase> cs;
  cs.push_back({.x = {2, 3, 28, 28}, .ksize = {2, 2}, .strides = {2, 2}});  // LeNet
  cs.push_back({.x = {1, 2, 7, 7}, .ksize = {3, 3}, .strides = {2, 2}, .paddings = {1, 1}});
  cs.push_back({.x = {2, 2, 13, 13}, .ksize = {3, 2}, .strides = {2, 3}, .ceil_mode = true});
  cs.push_back({.x = {2, 3, 7, 13}, .ksize = {3, 3}, .type = "avg", .strides = {2, 2}, .paddings = {1, 1}});
  cs.push_back(
      {.x = {2, 3, 7, 13}, .ksize = {3, 3}, .type = "avg", .strides = {2, 2}, .paddings = {1, 1}, .exclusive = false});
  cs.push_back({.x = {1, 2, 13, 7},
                .ksize = {4, 3},
                .type = "avg",
                .strides = {3, 2},
                .paddings = {1, 2, 0, 1},
                .ceil_mode = true,
                .exclusive = false});
  cs.push_back({.x = {1, 2, 13, 7},
                .ksize = {3, 3},
                .type = "avg",
                .strides = {2, 2},
                .paddings = {2, 0, 1, 1},
                .ceil_mode = true});
  cs.push_back({.x = {2, 2, 13, 7}, .ksize = {3, 2}, .strides = {2, 2}, .algorithm = "SAME"});
  cs.push_back({.x = {2, 2, 13, 7},
                .ksize = {3, 2},
                .type = "avg",
                .strides = {2, 2},
                .paddings = {3, 3},
                .algorithm = "VALID"});
  cs.push_back({.x = {2, 3, 7, 13}, .ksize = {5, 5}, .paddings = {9, 9}, .global = true});
  cs.push_back({.x = {2, 3, 7, 13}, .ksize = {1, 1}, .type = "avg", .global = true});
  cs.push_back({.x = {2, 3, 7, 13}, .ksize = {3, 4}, .type = "avg", .adaptive = true});
  cs.push_back({.x = {1, 2, 13, 7}, .ksize = {5, 3}, .adaptive = true});
  // Enough channels for oneDNN's jit pooling (used for float32; few channels go to the loops).
  cs.push_back({.x = {4, 32, 13, 13}, .ksize = {3, 3}, .strides = {2, 2}, .paddings = {1, 1}, .ceil_mode = true});
  cs.push_back({.x = {4, 32, 13, 13}, .ksize = {3, 3}, .type = "avg", .strides = {2, 2}, .paddings = {1, 1}});
  cs.push_back({.x = {4, 32, 13, 13},
                .ksize = {3, 2},
                .type = "avg",
                .strides = {2, 2},
                .paddings = {1, 0, 1, 1},
                .ceil_mode = true,
                .exclusive = false});
  cs.push_back({.x = {4, 32, 13, 13}, .ksize = {1, 1}, .type = "avg", .global = true});
  cs.push_back({.x = {4, 32, 13, 13},
                .ksize = {3, 3},
                .type = "avg",
                .strides = {2, 2},
                .paddings = {1, 1},
                .exclusive = false});
  cs.push_back({.x = {4, 32, 13, 13},
                .ksize = {3, 3},
                .type = "avg",
                .strides = {2, 2},
                .paddings = {1, 1},
                .ceil_mode = true,
                .exclusive = false});
  cs.push_back({.x = {4, 32, 14, 14},
                .ksize = {3, 3},
                .type = "avg",
                .strides = {2, 2},
                .paddings = {1, 1},
                .ceil_mode = true,
                .exclusive = false});
  cs.push_back({.x = {4, 32, 13, 13},
                .ksize = {3, 2},
                .type = "avg",
                .strides = {2, 2},
                .paddings = {1, 0, 1, 1},
                .exclusive = false});
  cs.push_back({.x = {4, 32, 13, 13},
                .ksize = {3, 2},
                .type = "avg",
                .strides = {2, 2},
                .paddings = {1, 0, 1, 1},
                .ceil_mode = true});
  // Windows past the padded input (ceil_mode with padding): they cover nothing and give 0.
  cs.push_back({.x = {1, 1, 3, 3}, .ksize = {2, 2}, .strides = {2, 2}, .paddings = {1, 1}, .ceil_mode = true});
  cs.push_back(
      {.x = {1, 1, 3, 3}, .ksize = {2, 2}, .type = "avg", .strides = {2, 2}, .paddings = {1, 1}, .ceil_mode = true});
  return cs;
}

// float32 (oneDNN for the non-adaptive cases) within 1e-6 + 1e-6 relative; float64 (loops) 1e-12.
TEST_CASE("pool2d matches naive pooling loops in float32 and float64") {
  int seed = 100;
  for (const PoolCase& c : Cases()) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.type);
    CAPTURE(c.ksize[0]);
    Tensor x = RandomTensor(DType::kFloat32, c.x, ++seed, -2, 2);
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      OpTest t("pool2d");
      SetUpPool(t, c, Cast(x, dt));
      REQUIRE_OK(t.Run());
      Tolerance tol = dt == DType::kFloat32 ? Tolerance{1e-6, 1e-6} : Tolerance{1e-12, 1e-12};
      t.ExpectOutput("Out", RefPool(c, x, dt), tol);
    }
  }
}

TEST_CASE("pool2d hand-checked values: empty windows give 0, exclusive vs inclusive averages") {
  // 3x3 input, 2x2 windows, stride 2, padding 1, ceil_mode: output 3x3, the last row and column of
  // windows lie past the input.
  Tensor x = MakeTensor<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  OpTest avg("pool2d");
  avg.Input("X", x).Output("Out").Attr("ksize", std::vector<int>{2, 2}).Attr("pooling_type", "avg");
  avg.Attr("strides", std::vector<int>{2, 2}).Attr("paddings", std::vector<int>{1, 1}).Attr("ceil_mode", true);
  avg.Attr("exclusive", false);
  REQUIRE_OK(avg.Run());
  avg.ExpectOutput("Out", MakeTensor<float>({1, 1, 3, 3}, {1 / 4.f, 5 / 4.f, 0, 11 / 4.f, 28 / 4.f, 0, 0, 0, 0}));
  OpTest ex("pool2d");
  ex.Input("X", x).Output("Out").Attr("ksize", std::vector<int>{2, 2}).Attr("pooling_type", "avg");
  ex.Attr("strides", std::vector<int>{2, 2}).Attr("paddings", std::vector<int>{1, 1});
  REQUIRE_OK(ex.Run());
  ex.ExpectOutput("Out", MakeTensor<float>({1, 1, 2, 2}, {1, 2.5f, 5.5f, 7}));
}

TEST_CASE("pool2d keeps unknown dims at compile time") {
  OpTest t("pool2d");
  SetUpPool(t, {.x = {4, 3, 28, 28}, .ksize = {2, 2}, .strides = {2, 2}},
            RandomTensor(DType::kFloat32, {4, 3, 28, 28}, 1));
  t.CompileDims("X", {-1, 3, 28, 28});
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, 3, 14, 14});

  OpTest g("pool2d");
  SetUpPool(g, {.x = {2, 3, 5, 6}, .ksize = {1, 1}, .global = true}, RandomTensor(DType::kFloat32, {2, 3, 5, 6}, 2));
  g.CompileDims("X", {-1, 3, -1, -1});
  REQUIRE_OK(g.Run());
  CHECK(g.CompiledDims("Out") == Dims{-1, 3, 1, 1});

  OpTest a("pool2d");
  SetUpPool(a, {.x = {2, 3, 5, 6}, .ksize = {2, 3}, .adaptive = true}, RandomTensor(DType::kFloat32, {2, 3, 5, 6}, 3));
  a.CompileDims("X", {-1, 3, -1, 6});
  REQUIRE_OK(a.Run());
  CHECK(a.CompiledDims("Out") == Dims{-1, 3, 2, 3});
}

TEST_CASE("pool2d shape errors") {
  auto error = [](Dims x, std::vector<int> ksize, auto&& more) {
    OpTest t("pool2d");
    t.Input("X", RandomTensor(DType::kFloat32, x, 1)).Output("Out").Attr("ksize", ksize);
    more(t);
    Status st = t.Compile();
    REQUIRE_FALSE(st.ok());
    return st.error().message();
  };
  auto none = [](OpTest&) {};
  CHECK(error({1, 2, 5, 5}, {2, 2, 2}, none) == "attribute 'ksize' has 3 values but pool2d needs 2 (height, width)");
  CHECK(error({1, 2, 5, 5}, {6, 2}, none) ==
        "X has shape [1, 2, 5, 5] but the pooling window height 6 does not fit the input height 5 padded by 0 and 0");
  CHECK(error({2, 5, 5}, {2, 2}, none) == "X has shape [2, 5, 5] (rank 3) but pool2d needs a 4-D NCHW input");
  CHECK(error({1, 5, 5, 2}, {2, 2}, [](OpTest& t) { t.Attr("data_format", "NHWC"); }) ==
        "data_format 'NHWC' is not supported: pool2d takes NCHW input (set data_format to \"NCHW\" and transpose the "
        "input)");
  CHECK(error({1, 2, 5, 5}, {2, 2}, [](OpTest& t) { t.Attr("pooling_type", "min"); }) ==
        "attribute 'pooling_type' value 'min' is not allowed: expected one of 'max', 'avg'");
  CHECK(error({1, 2, 5, 5}, {}, none) == "attribute 'ksize' must not be empty");
}

TEST_CASE("pool2d_grad sends a max window's gradient to its first maximal element") {
  // One 2x2 window of equal values (ties) and one with a unique maximum.
  Tensor x = MakeTensor<double>({1, 1, 2, 4}, {3, 3, 1, 2, 3, 3, 5, 0});
  Tensor out = MakeTensor<double>({1, 1, 1, 2}, {3, 5});
  OpTest t("pool2d_grad");
  t.Input("X", x).Input("Out", out).Input("Out@GRAD", MakeTensor<double>({1, 1, 1, 2}, {10, 20}));
  t.Output("X@GRAD").Attr("ksize", std::vector<int>{2, 2}).Attr("strides", std::vector<int>{2, 2});
  REQUIRE_OK(t.Run());
  t.ExpectOutput("X@GRAD", MakeTensor<double>({1, 1, 2, 4}, {10, 0, 0, 0, 0, 0, 20, 0}), {0, 0});
}

// The same rule on float32 rows (the AVX2 lanes: 4 windows a step, then a masked tail of 1 to 3)
// with many ties: values drawn from {0, 1, 2}, so most windows hold two or more maximal elements.
// Widths 2 to 38: tails of every size, an exact step, and LeNet's 28 and 14.
TEST_CASE("pool2d_grad's 2x2 max windows with ties, on rows of every width the lanes split into") {
  for (int64_t w : {2, 4, 6, 8, 14, 28, 38}) {
    CAPTURE(w);
    const int64_t n = 2, c = 3, h = 6, oh = h / 2, ow = w / 2;
    std::vector<float> x(n * c * h * w), out(n * c * oh * ow), dy(out.size()), want(x.size(), 0.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919 + i / 5) % 3);
    for (int64_t p = 0; p < n * c; ++p)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          const int64_t o = (p * oh + r) * ow + q;
          const int64_t at[4] = {(p * h + 2 * r) * w + 2 * q, (p * h + 2 * r) * w + 2 * q + 1,
                                 (p * h + 2 * r + 1) * w + 2 * q, (p * h + 2 * r + 1) * w + 2 * q + 1};
          float m = x[at[0]];
          for (int64_t k : at) m = std::max(m, x[k]);
          out[o] = m;
          dy[o] = static_cast<float>(o + 1);
          for (int64_t k : at)
            if (x[k] == m) {
              want[k] = dy[o];
              break;
            }
        }
    OpTest t("pool2d_grad");
    t.Input("X", MakeTensor<float>({n, c, h, w}, x)).Input("Out", MakeTensor<float>({n, c, oh, ow}, out));
    t.Input("Out@GRAD", MakeTensor<float>({n, c, oh, ow}, dy)).Output("X@GRAD");
    t.Attr("ksize", std::vector<int>{2, 2}).Attr("strides", std::vector<int>{2, 2});
    REQUIRE_OK(t.Run());
    t.ExpectOutput("X@GRAD", MakeTensor<float>({n, c, h, w}, want), {0, 0});
  }
}

/// An NCHW float32 tensor in oneDNN's channel-blocked layout (`block` channels innermost), or back.
Tensor Blocked(const Tensor& t, int64_t block, bool to_blocked) {
  const Dims d = t.dims();
  const int64_t n = d[0], c = d[1], hw = d[2] * d[3];
  const std::vector<float> v = ToVector<float>(t);
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t plain = (i * c + ch) * hw + p,
                      blocked = ((i * (c / block) + ch / block) * hw + p) * block + ch % block;
        out[to_blocked ? blocked : plain] = v[to_blocked ? plain : blocked];
      }
  return MakeTensor<float>(d, out);
}

// The layout pass keeps a pooling's X or Out in the channel-blocked layout between convolutions
// (passes/layout.cc): each of the four layout pairs must give the NCHW kernels' values, forward and
// backward. Ties (values from {0, 1, 2}) exercise the max gradient's first-maximum rule.
TEST_CASE("pool2d and pool2d_grad on channel-blocked tensors give the NCHW kernels' values") {
  const int64_t block = ops::nn::ActivationBlockChannels();
  struct Case {
    Dims x;
    bool max;
  };
  for (const Case& c : {Case{{2, 32, 6, 10}, true}, Case{{3, 16, 5, 7}, false}}) {
    const Dims out_dims = c.max ? Dims{c.x[0], c.x[1], c.x[2] / 2, c.x[3] / 2} : Dims{c.x[0], c.x[1], 1, 1};
    std::vector<float> xv(c.x.Numel());
    for (size_t i = 0; i < xv.size(); ++i)
      xv[i] = static_cast<float>((i * 7919 + i / 5) % 3) + (c.max ? 0.0f : 0.25f * static_cast<float>(i % 7));
    const Tensor x = MakeTensor<float>(c.x, xv), dy = RandomTensor(DType::kFloat32, out_dims, 61);
    std::vector<ops::pb::OpDesc::Attr> attrs = {ops::MakeAttr<std::string>("pooling_type", c.max ? "max" : "avg"),
                                                ops::MakeAttr("ksize", std::vector<int>{2, 2}),
                                                ops::MakeAttr("strides", std::vector<int>{2, 2})};
    if (!c.max) attrs.push_back(ops::MakeAttr("global_pooling", true));
    const Tensor y = RunOpNamedBySlot("pool2d", {{"X", x}}, attrs, {"Out"}).at("Out");
    const Tensor dx =
        RunOpNamedBySlot("pool2d_grad", {{"X", x}, {"Out", y}, {"Out@GRAD", dy}}, attrs, {"X@GRAD"}).at("X@GRAD");
    for (bool bi : {false, true})
      for (bool bo : {false, true}) {
        if (!bi && !bo) continue;
        CAPTURE(c.max);
        CAPTURE(bi);
        CAPTURE(bo);
        auto a = attrs;
        a.push_back(ops::MakeAttr("blocked_input", bi));
        a.push_back(ops::MakeAttr("blocked_output", bo));
        const Tensor xb = bi ? Blocked(x, block, true) : x;
        Tensor yb = RunOpNamedBySlot("pool2d", {{"X", xb}}, a, {"Out"}, {.threads = 2}).at("Out");
        // A global average sums in another order than the NCHW forward (oneDNN's pooling).
        ExpectClose(bo ? Blocked(yb, block, false) : yb, y, c.max ? Tolerance{0, 0} : Tolerance{1e-6, 1e-6}, "pool2d");
        const Tensor yin = bo ? Blocked(y, block, true) : y, dyin = bo ? Blocked(dy, block, true) : dy;
        Tensor dxb = RunOpNamedBySlot("pool2d_grad", {{"X", xb}, {"Out", yin}, {"Out@GRAD", dyin}}, a, {"X@GRAD"},
                                      {.threads = 2})
                         .at("X@GRAD");
        ExpectClose(bi ? Blocked(dxb, block, false) : dxb, dx, {0, 0}, "pool2d_grad");
      }
  }
}

TEST_CASE("pool2d refuses blocked tensors it has no kernel for") {
  auto error = [](const Dims& x, DType dt, std::vector<int> ksize) {
    ops::pb::OpDesc op;
    op.set_type("pool2d");
    ops::AddInput(op, "X", {"X"});
    ops::AddOutput(op, "Out", {"Out"});
    *op.add_attrs() = ops::MakeAttr("ksize", ksize);
    *op.add_attrs() = ops::MakeAttr("strides", std::vector<int>{2, 2});
    *op.add_attrs() = ops::MakeAttr("blocked_input", true);
    auto m = CompileOp(op, {{"X", RandomTensor(dt, x, 3)}});
    REQUIRE(m.ok());
    auto r = RunModule(**m, {{"X", RandomTensor(dt, x, 3)}}, {"Out"});
    return r.ok() ? std::string() : r.error().message();
  };
  CHECK(error({1, 16, 6, 6}, DType::kFloat32, {3, 3}).find("implemented for 2x2 max pooling of stride 2") !=
        std::string::npos);
  CHECK(error({1, 16, 6, 6}, DType::kFloat64, {2, 2}).find("need float32, not float64") != std::string::npos);
  CHECK(error({1, 12, 6, 6}, DType::kFloat32, {2, 2}).find("12 channels, not a multiple") != std::string::npos);
}

// float64 central differences, step 1e-6. Max pooling is piecewise linear and the random inputs
// keep every window's maximum unique by far more than the step; tolerance 1e-7 + 1e-6 relative.
TEST_CASE("pool2d_grad matches central differences") {
  std::vector<PoolCase> cs = {
      {.x = {2, 2, 7, 7}, .ksize = {3, 3}, .strides = {2, 2}, .paddings = {1, 1}},
      {.x = {1, 2, 7, 5}, .ksize = {2, 2}, .type = "avg", .strides = {2, 2}, .paddings = {1, 1}},
      {.x = {1, 2, 7, 5},
       .ksize = {3, 2},
       .type = "avg",
       .strides = {2, 2},
       .paddings = {0, 1, 1, 0},
       .ceil_mode = true,
       .exclusive = false},
      {.x = {1, 2, 7, 5}, .ksize = {3, 2}, .type = "avg", .adaptive = true},
      {.x = {1, 2, 7, 5}, .ksize = {4, 3}, .adaptive = true},
      {.x = {2, 3, 5, 4}, .ksize = {1, 1}, .type = "avg", .global = true},
  };
  int seed = 200;
  for (const PoolCase& c : cs) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.type);
    OpTest t("pool2d");
    SetUpPool(t, c, RandomTensor(DType::kFloat32, c.x, ++seed, -2, 2));
    t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
}

}  // namespace
}  // namespace paddlec::testing
