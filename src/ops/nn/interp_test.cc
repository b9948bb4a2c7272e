// nearest_interp_v2 / bilinear_interp_v2 and their gradients: outputs against PaddlePaddle's (weighted
// checksums recorded from PaddlePaddle 3.3.1) and a reference written here, the size inputs read at
// run time, gradient checks and shape errors.
#include <cmath>

#include "nn/interp_index.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

struct InterpCase {
  std::string op;
  Dims x;
  std::vector<int> size;     // out_h, out_w; empty when a scale decides
  std::vector<float> scale;  // empty when the size decides
  bool align_corners = false;
  int align_mode = 0;
  bool nhwc = false;
};

void SetUp(OpTest& t, const InterpCase& c, const Tensor& x) {
  t.Input("X", x).Output("Out");
  if (!c.size.empty()) t.Attr("out_h", c.size[0]).Attr("out_w", c.size[1]);
  if (!c.scale.empty()) t.Attr("scale", c.scale);
  if (!c.align_corners) t.Attr("align_corners", false);  // the op's default is true
  if (c.align_mode != 1) t.Attr("align_mode", c.align_mode);
  if (c.nhwc) t.Attr("data_layout", "NHWC");
}

/// The reference: PaddlePaddle's interpolation as its documentation states it, with the source
/// coordinate computed in float as its kernels do.
Tensor RefInterp(const InterpCase& c, const Tensor& xt) {
  std::vector<double> x = ToDoubles(xt);
  const int64_t N = c.x[0], C = c.nhwc ? c.x[3] : c.x[1];
  const int64_t in[2] = {c.nhwc ? c.x[1] : c.x[2], c.nhwc ? c.x[2] : c.x[3]};
  int64_t out[2];
  float ratio[2];
  for (int a = 0; a < 2; ++a) {
    out[a] = c.size.empty() ? static_cast<int64_t>(in[a] * static_cast<double>(c.scale[a])) : c.size[a];
    float unaligned = c.size.empty() ? static_cast<float>(1.0 / c.scale[a]) : static_cast<float>(in[a]) / out[a];
    ratio[a] = out[a] <= 1 ? 0.f : c.align_corners ? static_cast<float>(in[a] - 1) / (out[a] - 1) : unaligned;
  }
  // (index below, index above, weight of the one above) of output index o along axis a.
  auto source = [&](int a, int64_t o) {
    struct Src {
      int64_t lo, hi;
      double w;
    } s;
    if (c.op == "nearest_interp_v2") {
      float p = ratio[a] * static_cast<float>(o);
      s.lo = s.hi = std::min<int64_t>(
          c.align_corners ? static_cast<int64_t>(std::floor(p + 0.5)) : static_cast<int64_t>(p), in[a] - 1);
      s.w = 0;
      return s;
    }
    bool half = c.align_mode == 0 && !c.align_corners;
    float p = half ? std::max(0.0f, static_cast<float>(ratio[a] * (o + 0.5) - 0.5)) : ratio[a] * static_cast<float>(o);
    s.lo = std::min<int64_t>(static_cast<int64_t>(p), in[a] - 1);
    s.hi = std::min<int64_t>(s.lo + 1, in[a] - 1);
    s.w = p - static_cast<float>(s.lo);
    return s;
  };
  auto at = [&](int64_t n, int64_t ch, int64_t h, int64_t w) {
    return x[c.nhwc ? ((n * in[0] + h) * in[1] + w) * C + ch : ((n * C + ch) * in[0] + h) * in[1] + w];
  };
  std::vector<double> y(N * C * out[0] * out[1]);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t oh = 0; oh < out[0]; ++oh)
        for (int64_t ow = 0; ow < out[1]; ++ow) {
          auto sh = source(0, oh), sw = source(1, ow);
          double v = (1 - sh.w) * ((1 - sw.w) * at(n, ch, sh.lo, sw.lo) + sw.w * at(n, ch, sh.lo, sw.hi)) +
                     sh.w * ((1 - sw.w) * at(n, ch, sh.hi, sw.lo) + sw.w * at(n, ch, sh.hi, sw.hi));
          y[c.nhwc ? ((n * out[0] + oh) * out[1] + ow) * C + ch : ((n * C + ch) * out[0] + oh) * out[1] + ow] = v;
        }
  Dims yd = c.nhwc ? Dims{N, out[0], out[1], C} : Dims{N, C, out[0], out[1]};
  return Cast(MakeTensor<double>(yd, y), xt.dtype());
}

/// sin(0.37 * i) in the shape `d` (the inputs of the recorded PaddlePaddle runs).
Tensor Sines(const Dims& d) {
  std::vector<float> v(d.Numel());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  return MakeTensor<float>(d, v);
}

const char* const kNearest = "nearest_interp_v2";
const char* const kBilinear = "bilinear_interp_v2";

// Recorded with PaddlePaddle 3.3.1 (CPU): F.interpolate(x, ...) on x = sin(0.37 * arange), then
// sum(out * (arange(out.size) % 7 + 1)).
TEST_CASE("interpolation matches PaddlePaddle's outputs and the reference") {
  struct Recorded {
    InterpCase c;
    Dims out;
    double checksum;
  };
  const Recorded recorded[] = {
      {{kNearest, {2, 3, 10, 6}, {15, 7}}, {2, 3, 15, 7}, 1.8272579945623875},
      {{kNearest, {1, 2, 10, 6}, {}, {1.5f, 2.5f}}, {1, 2, 15, 15}, -19.503228256478906},
      {{kNearest, {1, 2, 5, 7}, {9, 4}}, {1, 2, 9, 4}, 17.943451322615147},
      {{kNearest, {1, 3, 9, 8}, {}, {0.5f, 0.5f}, false, 0, true}, {1, 1, 4, 8}, 51.46026322618127},
      {{kBilinear, {2, 2, 4, 5}, {7, 9}, {}, true}, {2, 2, 7, 9}, 14.384282313287258},
      {{kBilinear, {2, 2, 4, 5}, {7, 9}, {}, false, 0}, {2, 2, 7, 9}, 42.19152823090553},
      {{kBilinear, {2, 2, 4, 5}, {7, 9}, {}, false, 1}, {2, 2, 7, 9}, 56.45056560635567},
      {{kBilinear, {1, 3, 7, 10}, {}, {1.7f, 0.6f}, false, 0}, {1, 3, 11, 6}, 31.123802352696657},
      {{kBilinear, {1, 2, 8, 7}, {3, 2}, {}, false, 0, true}, {1, 3, 2, 7}, -8.647984892129898},
      {{kBilinear, {1, 1, 4, 3}, {1, 5}, {}, true}, {1, 1, 1, 5}, 6.889707922935486},
  };
  for (const Recorded& r : recorded) {
    CAPTURE(r.c.op);
    CAPTURE(r.c.x.ToString());
    Tensor x = Sines(r.c.x);
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      OpTest t(r.c.op);
      SetUp(t, r.c, Cast(x, dt));
      REQUIRE_OK(t.Run());
      REQUIRE(t.Out("Out").dims() == r.out);
      std::vector<double> y = ToDoubles(t.Out("Out"));
      double sum = 0;
      for (size_t i = 0; i < y.size(); ++i) sum += y[i] * static_cast<double>(i % 7 + 1);
      CHECK(std::abs(sum - r.checksum) <= 1e-5 * std::max(1.0, std::abs(r.checksum)));
      t.ExpectOutput("Out", RefInterp(r.c, Cast(x, dt)), {1e-6, 1e-6});
    }
  }
}

TEST_CASE("interpolation reads OutSize, SizeTensor and Scale at run time") {
  Tensor x = RandomTensor(DType::kFloat32, {2, 3, 6, 5}, 3);
  InterpCase by_size{kBilinear, {2, 3, 6, 5}, {9, 4}, {}, false, 0};
  Tensor expected = RefInterp(by_size, x);
  {
    OpTest t(kBilinear);
    SetUp(t, {kBilinear, x.dims(), {}, {}, false, 0}, x);
    t.Input("OutSize", MakeTensor<int32_t>({2}, {9, 4}));
    REQUIRE_OK(t.Run());
    CHECK(t.CompiledDims("Out") == Dims{2, 3, -1, -1});
    t.ExpectOutput("Out", expected, {1e-6, 1e-6});
  }
  {
    // SizeTensor wins over the attributes and over Scale.
    OpTest t(kBilinear);
    SetUp(t, {kBilinear, x.dims(), {3, 3}, {2.f, 2.f}, false, 0}, x);
    t.Inputs("SizeTensor", {MakeTensor<int64_t>({1}, {9}), MakeTensor<int32_t>({1}, {4})});
    t.Input("Scale", MakeTensor<float>({1}, {3.f}));
    REQUIRE_OK(t.Run());
    CHECK(t.CompiledDims("Out") == Dims{2, 3, -1, -1});
    t.ExpectOutput("Out", expected, {1e-6, 1e-6});
  }
  {
    // A Scale tensor sizes the output and sets the ratio (1 / scale).
    InterpCase by_scale{kNearest, x.dims(), {}, {1.5f, 1.5f}};
    OpTest t(kNearest);
    SetUp(t, {kNearest, x.dims(), {1, 1}}, x);
    t.Input("Scale", MakeTensor<float>({1}, {1.5f}));
    REQUIRE_OK(t.Run());
    t.ExpectOutput("Out", RefInterp(by_scale, x), {0, 0});
  }
  {
    OpTest t(kNearest);
    SetUp(t, {kNearest, x.dims(), {}, {}}, x);
    t.Input("OutSize", MakeTensor<int32_t>({2}, {12, 10}));
    REQUIRE_OK(t.Run());
    t.ExpectOutput("Out", RefInterp({kNearest, x.dims(), {12, 10}}, x), {0, 0});
  }
}

TEST_CASE("interpolation gradients match central differences") {
  const InterpCase cases[] = {
      {kBilinear, {2, 2, 4, 5}, {7, 9}, {}, true},
      {kBilinear, {1, 3, 7, 6}, {4, 11}, {}, false, 0},
      {kBilinear, {1, 2, 5, 4}, {}, {1.7f, 0.6f}, false, 1},
      {kBilinear, {1, 4, 3, 3}, {5, 2}, {}, false, 0, true},
      {kNearest, {2, 2, 6, 5}, {9, 3}},
      {kNearest, {1, 2, 5, 6}, {}, {0.5f, 2.5f}, false, 0, true},
  };
  int seed = 20;
  for (const InterpCase& c : cases) {
    CAPTURE(c.op);
    CAPTURE(c.x.ToString());
    OpTest t(c.op);
    SetUp(t, c, RandomTensor(DType::kFloat32, c.x, ++seed));
    t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-7}});
  }
  OpTest t(kBilinear);
  SetUp(t, {kBilinear, {1, 2, 4, 4}, {}, {}, false, 0}, RandomTensor(DType::kFloat32, {1, 2, 4, 4}, 30));
  t.Input("OutSize", MakeTensor<int32_t>({2}, {7, 3}));
  t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-7}});
}

// The CUDA kernels run interp_index.h's per-element bodies (InterpOutputAt, InterpGradAt): on the host
// they must give the CPU kernels' results (the CPU forward works from per-axis tables) up to float
// rounding: the weighted sums contract into FMAs differently at the library's -O3 and this file's -O1,
// as they do under nvcc.
TEST_CASE("interpolation's per-element bodies of the CUDA kernels match the CPU kernels") {
  const InterpCase cases[] = {
      {kBilinear, {2, 2, 4, 5}, {7, 9}, {}, true},
      {kBilinear, {1, 3, 7, 6}, {4, 11}, {}, false, 0},
      {kBilinear, {1, 2, 5, 4}, {}, {1.7f, 0.6f}, false, 1},
      {kBilinear, {1, 4, 3, 3}, {5, 2}, {}, false, 0, true},
      {kNearest, {2, 2, 6, 5}, {9, 3}},
      {kNearest, {1, 2, 5, 6}, {}, {0.5f, 2.5f}, false, 0, true},
  };
  int seed = 40;
  for (const InterpCase& c : cases) {
    CAPTURE(c.op);
    CAPTURE(c.x.ToString());
    Tensor x = RandomTensor(DType::kFloat32, c.x, ++seed);
    OpTest t(c.op);
    SetUp(t, c, x);
    REQUIRE_OK(t.Run());
    const Tensor& y = t.Out("Out");
    ops::nn::InterpShape s{};
    s.n = c.x[0];
    s.c = c.nhwc ? c.x[3] : c.x[1];
    s.nearest = c.op == kNearest;
    s.align_corners = c.align_corners;
    s.half_pixel = !s.nearest && c.align_mode == 0 && !c.align_corners;
    s.channel_last = c.nhwc;
    for (int a = 0; a < 2; ++a) {
      int64_t in = c.nhwc ? c.x[1 + a] : c.x[2 + a], out = y.dims()[c.nhwc ? 1 + a : 2 + a];
      float unaligned =
          c.scale.empty() ? static_cast<float>(in) / static_cast<float>(out) : static_cast<float>(1.0 / c.scale[a]);
      float ratio = out <= 1 ? 0.f : c.align_corners ? static_cast<float>(in - 1) / (out - 1) : unaligned;
      s.axis[a] = {in, out, ratio};
    }
    std::vector<float> host(y.numel());
    for (int64_t q = 0; q < y.numel(); ++q) host[q] = ops::nn::InterpOutputAt(s, x.data<float>(), q);
    ExpectClose(MakeTensor<float>(y.dims(), host), y, {1e-7, 1e-6}, "InterpOutputAt");
    Tensor w = RandomTensor(DType::kFloat32, y.dims(), 99);
    OpTest g(std::string(c.op) + "_grad");
    g.Input("X", x).Input("Out@GRAD", w).Output("X@GRAD");
    if (!c.size.empty()) g.Attr("out_h", c.size[0]).Attr("out_w", c.size[1]);
    if (!c.scale.empty()) g.Attr("scale", c.scale);
    if (!c.align_corners) g.Attr("align_corners", false);
    if (c.align_mode != 1) g.Attr("align_mode", c.align_mode);
    if (c.nhwc) g.Attr("data_layout", "NHWC");
    REQUIRE_OK(g.Run());
    std::vector<float> grad(x.numel());
    for (int64_t q = 0; q < x.numel(); ++q) grad[q] = ops::nn::InterpGradAt(s, w.data<float>(), q);
    ExpectClose(MakeTensor<float>(c.x, grad), g.Out("X@GRAD"), {1e-7, 1e-6}, "InterpGradAt");
  }
}

TEST_CASE("interpolation shape errors name the sizes") {
  {
    OpTest t(kBilinear);
    SetUp(t, {kBilinear, {1, 2, 4, 4}, {-1, -1}}, RandomTensor(DType::kFloat32, {1, 2, 4, 4}, 1));
    CHECK(CompileError(t) ==
          "X has shape [1, 2, 4, 4] but the output height is -1: give bilinear_interp_v2 a positive out_h / out_w, "
          "scale, OutSize or SizeTensor");
  }
  {
    OpTest t(kNearest);
    SetUp(t, {kNearest, {1, 2, 4}, {3, 3}}, RandomTensor(DType::kFloat32, {1, 2, 4}, 1));
    CHECK(CompileError(t) == "X has shape [1, 2, 4] (rank 3) but nearest_interp_v2 needs a 4-D NCHW input");
  }
  {
    OpTest t(kNearest);
    SetUp(t, {kNearest, {1, 2, 4, 4}, {3, 3}}, RandomTensor(DType::kFloat32, {1, 2, 4, 4}, 1));
    t.Input("OutSize", MakeTensor<int32_t>({3}, {3, 3, 3}));
    CHECK(CompileError(t) == "OutSize has shape [3] but nearest_interp_v2 needs 2 values (height, width)");
  }
  {
    OpTest t(kBilinear);
    SetUp(t, {kBilinear, {1, 2, 4, 4}, {3, 3}, {}, false, 2}, RandomTensor(DType::kFloat32, {1, 2, 4, 4}, 1));
    CHECK(CompileError(t) == "attribute 'align_mode' value 2 is not allowed: expected one of 0, 1");
  }
  {
    OpTest t(kNearest);
    SetUp(t, {kNearest, {1, 2, 4, 4}, {3, 3}}, RandomTensor(DType::kFloat32, {1, 2, 4, 4}, 1));
    t.Input("OutSize", MakeTensor<int32_t>({2}, {0, 3}));
    Status st = t.Run();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() ==
          "X has shape [1, 2, 4, 4] but the output height is 0: give nearest_interp_v2 a positive out_h / out_w, "
          "scale, OutSize or SizeTensor");
  }
}

}  // namespace
}  // namespace paddlec::testing
