// pad3d / pad3d_grad: outputs against PaddlePaddle's (weighted checksums recorded from PaddlePaddle 3.3.1)
// and an independent reference, the Paddings tensor, gradient checks and shape errors.
#include <algorithm>
#include <numeric>

#include "nn/pad_index.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

struct PadCase {
  std::string mode;
  std::vector<int> pads;  // left, right, top, bottom, front, back
  float value = 0;
  std::string format = "NCDHW";
};

void SetUp(OpTest& t, const PadCase& c, const Tensor& x) {
  t.Input("X", x).Output("Out").Attr("paddings", c.pads);
  if (c.mode != "constant") t.Attr("mode", c.mode);
  if (c.value != 0) t.Attr("value", c.value);
  if (c.format != "NCDHW") t.Attr("data_format", c.format);
}

/// The input index output index o reads along an axis of size n with `before` leading pads (-1 for the
/// constant), written as numpy.pad describes the modes: reflect folds back and forth about the edges,
/// replicate ("edge") clamps, circular ("wrap") repeats the axis.
int64_t RefSource(const std::string& mode, int64_t o, int64_t before, int64_t n) {
  int64_t i = o - before;
  if (mode == "constant") return (i >= 0 && i < n) ? i : -1;
  if (mode == "replicate") return std::clamp<int64_t>(i, 0, n - 1);
  if (mode == "circular") {
    while (i < 0) i += n;
    return i % n;
  }
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;  // reflect
  return i;
}

/// Independent pad3d in double over NCDHW or NDHWC.
Tensor RefPad(const PadCase& c, const Tensor& xt) {
  std::vector<double> x = ToDoubles(xt);
  Dims xd = xt.dims();
  bool last = c.format == "NDHWC";
  int64_t N = xd[0], C = last ? xd[4] : xd[1];
  int64_t in[3] = {last ? xd[1] : xd[2], last ? xd[2] : xd[3], last ? xd[3] : xd[4]};
  int64_t before[3] = {c.pads[4], c.pads[2], c.pads[0]};
  int64_t out[3] = {in[0] + c.pads[4] + c.pads[5], in[1] + c.pads[2] + c.pads[3], in[2] + c.pads[0] + c.pads[1]};
  auto at = [&](const int64_t* size, int64_t n, int64_t ch, int64_t d, int64_t h, int64_t w) {
    return last ? (((n * size[0] + d) * size[1] + h) * size[2] + w) * C + ch
                : (((n * C + ch) * size[0] + d) * size[1] + h) * size[2] + w;
  };
  std::vector<double> y(N * C * out[0] * out[1] * out[2]);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t d = 0; d < out[0]; ++d)
        for (int64_t h = 0; h < out[1]; ++h)
          for (int64_t w = 0; w < out[2]; ++w) {
            int64_t sd = RefSource(c.mode, d, before[0], in[0]), sh = RefSource(c.mode, h, before[1], in[1]),
                    sw = RefSource(c.mode, w, before[2], in[2]);
            y[at(out, n, ch, d, h, w)] = (sd < 0 || sh < 0 || sw < 0) ? c.value : x[at(in, n, ch, sd, sh, sw)];
          }
  Dims yd = last ? Dims{N, out[0], out[1], out[2], C} : Dims{N, C, out[0], out[1], out[2]};
  return Cast(MakeTensor<double>(yd, y), xt.dtype());
}

Tensor Arange(const Dims& d) {
  std::vector<float> v(d.Numel());
  std::iota(v.begin(), v.end(), 0.0f);
  return MakeTensor<float>(d, v);
}

// Recorded with PaddlePaddle 3.3.1 (CPU): F.pad(x, pads, mode, value, data_format) on
// x = arange(144).reshape(2, 3, 2, 3, 4), then sum(out * (arange(out.size) % 7 + 1)).
TEST_CASE("pad3d matches PaddlePaddle's outputs in every mode and layout") {
  struct Recorded {
    PadCase c;
    Dims out;
    double checksum;
  };
  const Recorded recorded[] = {
      {{"constant", {-1, 2, 0, 1, 1, -1}, 1.5f}, {2, 3, 2, 4, 5}, 15013.0},
      {{"reflect", {3, 3, 2, 2, 1, 1}}, {2, 3, 4, 7, 10}, 479712.0},
      {{"replicate", {5, 0, 0, 4, 3, 0}}, {2, 3, 5, 7, 9}, 525624.0},
      {{"circular", {5, 9, 0, 2, 0, 3}}, {2, 3, 5, 5, 18}, 750490.0},
      {{"reflect", {1, 2, 1, 0, 1, 1}, 0, "NDHWC"}, {2, 5, 3, 6, 4}, 209752.0},
      {{"replicate", {0, 3, 1, 1, 2, 0}, 0, "NDHWC"}, {2, 5, 4, 6, 4}, 245539.0},
      {{"circular", {-1, 0, 2, 0, 0, 1}, 0, "NDHWC"}, {2, 4, 4, 2, 4}, 69164.0},
  };
  Tensor x = Arange({2, 3, 2, 3, 4});
  for (const Recorded& r : recorded) {
    CAPTURE(r.c.mode);
    CAPTURE(r.c.format);
    OpTest t("pad3d");
    SetUp(t, r.c, x);
    REQUIRE_OK(t.Run());
    REQUIRE(t.Out("Out").dims() == r.out);
    std::vector<double> y = ToDoubles(t.Out("Out"));
    double sum = 0;
    for (size_t i = 0; i < y.size(); ++i) sum += y[i] * static_cast<double>(i % 7 + 1);
    CHECK(sum == r.checksum);
    t.ExpectOutput("Out", RefPad(r.c, x), {0, 0});
  }
}

TEST_CASE("pad3d matches an independent reference on random data, float32, float64 and int64") {
  const PadCase cases[] = {
      {"constant", {1, 2, 3, 0, 0, 1}, -2.5f},     {"reflect", {2, 1, 1, 2, 1, 0}},
      {"replicate", {3, 0, 0, 2, 2, 2}},           {"circular", {7, 1, 1, 0, 2, 3}},
      {"reflect", {0, 2, 1, 1, 2, 1}, 0, "NDHWC"}, {"constant", {-1, 1, 0, 2, 1, -1}, 0.5f, "NDHWC"},
  };
  int seed = 0;
  for (const PadCase& c : cases) {
    CAPTURE(c.mode);
    CAPTURE(c.format);
    Tensor x = RandomTensor(DType::kFloat32, {2, 3, 4, 3, 5}, ++seed);
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      OpTest t("pad3d");
      SetUp(t, c, Cast(x, dt));
      REQUIRE_OK(t.Run());
      t.ExpectOutput("Out", RefPad(c, Cast(x, dt)), {0, 0});
    }
    if (c.value == 0) {
      Tensor xi = RandomTensor(DType::kInt64, {2, 3, 4, 3, 5}, ++seed, -100, 100);
      OpTest t("pad3d");
      SetUp(t, c, xi);
      REQUIRE_OK(t.Run());
      t.ExpectOutput("Out", RefPad(c, xi), {0, 0});
    }
  }
}

TEST_CASE("pad3d reads a Paddings tensor at run time: unknown sizes at compile time") {
  PadCase c{"reflect", {1, 2, 0, 1, 2, 1}};
  Tensor x = RandomTensor(DType::kFloat32, {1, 2, 3, 4, 5}, 7);
  for (DType pd : {DType::kInt32, DType::kInt64}) {
    OpTest t("pad3d");
    t.Input("X", x).Input("Paddings", Cast(MakeTensor<int64_t>({6}, {1, 2, 0, 1, 2, 1}), pd)).Output("Out");
    t.Attr("mode", "reflect").Attr("paddings", std::vector<int>{9, 9, 9, 9, 9, 9});  // overridden
    REQUIRE_OK(t.Run());
    CHECK(t.CompiledDims("Out") == Dims{1, 2, -1, -1, -1});
    t.ExpectOutput("Out", RefPad(c, x), {0, 0});
  }
}

TEST_CASE("pad3d_grad matches central differences in every mode") {
  const PadCase cases[] = {
      {"constant", {1, -1, 2, 0, 0, 1}, 0.25f},    {"reflect", {2, 1, 1, 2, 1, 0}},
      {"replicate", {3, 0, 0, 2, 2, 1}},           {"circular", {6, 2, 1, 0, 2, 3}},
      {"reflect", {1, 2, 1, 0, 1, 1}, 0, "NDHWC"}, {"circular", {0, 1, 2, 1, 0, 4}, 0, "NDHWC"},
  };
  int seed = 40;
  for (const PadCase& c : cases) {
    CAPTURE(c.mode);
    CAPTURE(c.format);
    OpTest t("pad3d");
    SetUp(t, c, RandomTensor(DType::kFloat32, {2, 2, 3, 3, 4}, ++seed));
    t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-7}});
  }
  // With a Paddings tensor the gradient reads the same values.
  OpTest t("pad3d");
  t.Input("X", RandomTensor(DType::kFloat32, {1, 2, 3, 3, 4}, 50))
      .Input("Paddings", MakeTensor<int32_t>({6}, {2, 1, 0, 2, 1, 1}))
      .Output("Out")
      .Attr("mode", "replicate");
  t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-7}});
}

// The CUDA kernels run pad_index.h's per-element bodies (PadOutputAt, PadGradAt): on the host they must
// give the CPU kernels' results bit for bit.
TEST_CASE("pad3d's per-element bodies of the CUDA kernels match the CPU kernels") {
  const PadCase cases[] = {
      {"constant", {1, 2, 3, 0, 0, 1}, -2.5f},     {"reflect", {2, 1, 1, 2, 1, 0}},
      {"replicate", {3, 0, 0, 2, 2, 2}},           {"circular", {7, 1, 1, 0, 2, 3}},
      {"reflect", {0, 2, 1, 1, 2, 1}, 0, "NDHWC"}, {"constant", {-1, 1, 0, 2, 1, -1}, 0.5f, "NDHWC"},
  };
  int seed = 70;
  for (const PadCase& c : cases) {
    CAPTURE(c.mode);
    CAPTURE(c.format);
    const Dims xd{2, 3, 4, 3, 5};
    Tensor x = RandomTensor(DType::kFloat32, xd, ++seed);
    OpTest t("pad3d");
    SetUp(t, c, x);
    REQUIRE_OK(t.Run());
    const Tensor& y = t.Out("Out");
    const bool last = c.format == "NDHWC";
    ops::nn::Pad3dShape p{};
    p.n = 2;
    p.c = last ? 5 : 3;
    p.channel_last = last;
    p.value = c.value;
    p.mode = c.mode == "reflect"     ? ops::nn::PadMode::kReflect
             : c.mode == "replicate" ? ops::nn::PadMode::kReplicate
             : c.mode == "circular"  ? ops::nn::PadMode::kCircular
                                     : ops::nn::PadMode::kConstant;
    for (int a = 0; a < 3; ++a) {
      int64_t before = c.pads[4 - 2 * a], after = c.pads[5 - 2 * a], in = xd[(last ? 1 : 2) + a];
      p.axis[a] = {in, in + before + after, before};
    }
    std::vector<float> host(y.numel());
    for (int64_t q = 0; q < y.numel(); ++q) host[q] = ops::nn::PadOutputAt(p, x.data<float>(), q);
    ExpectClose(MakeTensor<float>(y.dims(), host), y, {0, 0}, "PadOutputAt");
    // The gradient of sum(w * y) for a random w, against the CPU grad kernel.
    Tensor w = RandomTensor(DType::kFloat32, y.dims(), 99);
    OpTest g("pad3d_grad");
    g.Input("X", x).Input("Out@GRAD", w).Output("X@GRAD").Attr("paddings", c.pads);
    if (c.mode != "constant") g.Attr("mode", c.mode);
    if (c.value != 0) g.Attr("value", c.value);
    if (last) g.Attr("data_format", c.format);
    REQUIRE_OK(g.Run());
    std::vector<float> grad(x.numel());
    for (int64_t q = 0; q < x.numel(); ++q) grad[q] = ops::nn::PadGradAt(p, w.data<float>(), q);
    ExpectClose(MakeTensor<float>(xd, grad), g.Out("X@GRAD"), {0, 0}, "PadGradAt");
  }
}

TEST_CASE("pad3d shape errors name the axis, the pads and the shape") {
  {
    OpTest t("pad3d");
    SetUp(t, {"reflect", {0, 0, 2, 1, 0, 0}}, RandomTensor(DType::kFloat32, {1, 1, 3, 2, 4}, 1));
    CHECK(CompileError(t) ==
          "X has shape [1, 1, 3, 2, 4] but reflect padding needs pads smaller than the height 2: top = 2, bottom = 1");
  }
  {
    OpTest t("pad3d");
    SetUp(t, {"constant", {0, 0, 0, 0, -2, -2}}, RandomTensor(DType::kFloat32, {1, 1, 3, 2, 4}, 1));
    CHECK(CompileError(t) ==
          "X has shape [1, 1, 3, 2, 4] but the paddings front = -2 and back = -2 leave -1 elements on the depth axis");
  }
  {
    OpTest t("pad3d");
    SetUp(t, {"constant", {1, 1, 1, 1}}, RandomTensor(DType::kFloat32, {1, 1, 3, 2, 4}, 1));
    CHECK(CompileError(t) ==
          "attribute 'paddings' has 4 values but pad3d needs 6 (left, right, top, bottom, front, back)");
  }
  {
    OpTest t("pad3d");
    SetUp(t, {"constant", {1, 1, 1, 1, 1, 1}}, RandomTensor(DType::kFloat32, {1, 3, 2, 4}, 1));
    CHECK(CompileError(t) == "X has shape [1, 3, 2, 4] (rank 4) but pad3d needs a 5-D NCDHW input");
  }
  {
    OpTest t("pad3d");
    t.Input("X", RandomTensor(DType::kFloat32, {1, 1, 3, 2, 4}, 1))
        .Input("Paddings", MakeTensor<int32_t>({4}, {1, 1, 1, 1}))
        .Output("Out");
    CHECK(CompileError(t) == "Paddings has shape [4] but pad3d needs 6 values (left, right, top, bottom, front, back)");
  }
  {
    // Paddings values are only known at run time: a bad value is a run-time error.
    OpTest t("pad3d");
    t.Input("X", RandomTensor(DType::kFloat32, {1, 1, 3, 2, 4}, 1))
        .Input("Paddings", MakeTensor<int32_t>({6}, {0, 0, 0, 2, 0, 0}))
        .Output("Out")
        .Attr("mode", "reflect");
    Status st = t.Run();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() ==
          "X has shape [1, 1, 3, 2, 4] but reflect padding needs pads smaller than the height 2: top = 0, bottom = 2");
  }
}

}  // namespace
}  // namespace paddlec::testing
