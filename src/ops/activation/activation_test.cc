// Activation ops against closed-form references, with gradient checks.
#include <cmath>
#include <functional>

#include "paddlec/ops/op_registry.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

/// Applies f to every element of a float tensor (the reference, computed in double).
template <class F>
Tensor Map(const Tensor& x, F f) {
  std::vector<double> v = ToDoubles(x);
  std::vector<float> out;
  for (double d : v) out.push_back(static_cast<float>(f(d)));
  return MakeTensor<float>(x.dims(), out);
}

// Odd sizes (1, 7, 513) and a -1 batch at compile time.
const Dims kShapes[] = {{1}, {7}, {3, 513}, {2, 3, 4}};

TEST_CASE("relu, sigmoid, tanh match closed forms on odd sizes") {
  struct Case {
    const char* op;
    double (*f)(double);
  };
  const Case cases[] = {{"relu", [](double x) { return x > 0 ? x : 0.0; }},
                        {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
                        {"tanh", [](double x) { return std::tanh(x); }},
                        {"sqrt", [](double x) { return std::sqrt(std::fabs(x)); }}};
  for (const Case& c : cases)
    for (const Dims& d : kShapes) {
      CAPTURE(c.op);
      CAPTURE(d.ToString());
      Tensor x = RandomTensor(DType::kFloat32, d, 1, std::string(c.op) == "sqrt" ? 0 : -3, 3);
      OpTest t(c.op);
      t.Input("X", x).Output("Out");
      REQUIRE_OK(t.Run());
      t.ExpectOutput("Out", Map(x, c.f), {1e-6, 1e-6});
    }
}

TEST_CASE("activations keep an unknown batch dim at compile time") {
  OpTest t("relu");
  t.Input("X", RandomTensor(DType::kFloat32, {4, 5}, 2)).CompileDims("X", {-1, 5}).Output("Out");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, 5});
}

TEST_CASE("gelu exact and approximate") {
  Tensor x = RandomTensor(DType::kFloat32, {7, 9}, 3, -4, 4);
  OpTest exact("gelu");
  exact.Input("X", x).Output("Out");
  REQUIRE_OK(exact.Run());
  exact.ExpectOutput("Out", Map(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }),
                     {1e-6, 1e-5});

  OpTest approx("gelu");
  approx.Input("X", x).Attr("approximate", true).Output("Out");
  REQUIRE_OK(approx.Run());
  approx.ExpectOutput(
      "Out",
      Map(x, [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }),
      {1e-6, 1e-5});
}

TEST_CASE("leaky_relu default and explicit alpha") {
  Tensor x = RandomTensor(DType::kFloat32, {513}, 4, -2, 2);
  OpTest def("leaky_relu");
  def.Input("X", x).Output("Out");
  REQUIRE_OK(def.Run());
  def.ExpectOutput("Out", Map(x, [](double v) { return v > 0 ? v : 0.02 * v; }), {1e-7, 1e-6});
  OpTest a("leaky_relu");
  a.Input("X", x).Attr("alpha", 0.3f).Output("Out");
  REQUIRE_OK(a.Run());
  a.ExpectOutput("Out", Map(x, [](double v) { return v > 0 ? v : 0.3 * v; }), {1e-7, 1e-6});
}

/// Reference softmax / log-softmax along `axis` in double.
Tensor RefSoftmax(const Tensor& x, int axis, bool log) {
  const Dims& d = x.dims();
  int a = axis < 0 ? axis + d.rank() : axis;
  int64_t outer = d.Product(0, a), n = d[a], inner = d.Product(a + 1, d.rank());
  std::vector<double> v = ToDoubles(x);
  std::vector<float> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, v[(o * n + k) * inner + i]);
      for (int64_t k = 0; k < n; ++k) s += std::exp(v[(o * n + k) * inner + i] - m);
      for (int64_t k = 0; k < n; ++k) {
        double z = v[(o * n + k) * inner + i] - m;
        out[(o * n + k) * inner + i] = static_cast<float>(log ? z - std::log(s) : std::exp(z) / s);
      }
    }
  return MakeTensor<float>(d, out);
}

TEST_CASE("softmax and log_softmax along the last and a middle axis") {
  Tensor x = RandomTensor(DType::kFloat32, {3, 7, 5}, 5, -5, 5);
  for (bool log : {false, true})
    for (int axis : {-1, 1, 0}) {
      CAPTURE(log);
      CAPTURE(axis);
      OpTest t(log ? "log_softmax" : "softmax");
      t.Input("X", x).Output("Out");
      if (axis != -1) t.Attr("axis", axis);
      REQUIRE_OK(t.Run());
      t.ExpectOutput("Out", RefSoftmax(x, axis, log), {1e-6, 1e-5});
    }
}

TEST_CASE("softmax is stable for large logits") {
  OpTest t("softmax");
  t.Input("X", MakeTensor<float>({1, 3}, {1000.f, 1001.f, 1002.f})).Output("Out");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Out", MakeTensor<float>({1, 3}, {0.09003057f, 0.24472847f, 0.66524096f}), {1e-6, 1e-5});
}

TEST_CASE("softmax rejects an out-of-range axis at compile time") {
  OpTest t("softmax");
  t.Input("X", RandomTensor(DType::kFloat32, {2, 3}, 6)).Attr("axis", 2).Output("Out");
  Status st = t.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "axis 2 is out of range for X of shape [2, 3] (rank 2)");
}

// Gradient checks run in float64 (every activation has f64 kernels); tolerance 1e-6 relative.
TEST_CASE("activation gradients match central differences") {
  for (const char* op : {"relu", "sigmoid", "tanh", "gelu", "leaky_relu", "softmax", "log_softmax", "sqrt"}) {
    CAPTURE(op);
    bool positive = std::string(op) == "sqrt";
    // Keep relu-like inputs away from the kink at 0, where the derivative is undefined.
    Tensor x = RandomTensor(DType::kFloat32, {3, 5}, 7, 0.1, 2);
    std::vector<float> v = ToVector<float>(x);
    for (size_t i = 0; i < v.size() && !positive; i += 2) v[i] = -v[i];
    OpTest t(op);
    t.Input("X", MakeTensor<float>({3, 5}, v)).Output("Out");
    t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
  OpTest approx("gelu");
  approx.Input("X", RandomTensor(DType::kFloat32, {9}, 8, -3, 3)).Attr("approximate", true).Output("Out");
  approx.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
  OpTest mid("softmax");
  mid.Input("X", RandomTensor(DType::kFloat32, {2, 4, 3}, 9, -2, 2)).Attr("axis", 1).Output("Out");
  mid.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
}

// ---- relu6, hard_swish, hard_sigmoid, swish, silu, elu, exp, log, pow, clip ----------------------

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

/// Every element-wise activation against its closed form (PaddlePaddle's formulas), with default
/// attributes and with explicit ones, on odd sizes.
TEST_CASE("model-zoo activations match closed forms with default and explicit attributes") {
  struct Case {
    const char* op;
    std::vector<std::pair<std::string, float>> attrs;
    std::function<double(double)> f;
    double lo = -8, hi = 8;
  };
  const std::vector<Case> cases = {
      {"relu6", {}, [](double v) { return std::min(std::max(v, 0.0), 6.0); }},
      {"relu6", {{"threshold", 2.5f}}, [](double v) { return std::min(std::max(v, 0.0), 2.5); }},
      {"hard_swish", {}, [](double v) { return v * std::min(std::max(v + 3, 0.0), 6.0) / 6; }},
      {"hard_swish",
       {{"threshold", 4.f}, {"scale", 5.f}, {"offset", 1.f}},
       [](double v) { return v * std::min(std::max(v + 1, 0.0), 4.0) / 5; }},
      {"hard_sigmoid", {}, [](double v) { return std::min(std::max(0.2 * v + 0.5, 0.0), 1.0); }},
      {"hard_sigmoid",
       {{"slope", 1.f / 6}, {"offset", 0.5f}},
       [](double v) { return std::min(std::max(v / 6 + 0.5, 0.0), 1.0); }},
      {"swish", {}, [](double v) { return v * Sigmoid(v); }},
      {"swish", {{"beta", 1.7f}}, [](double v) { return v * Sigmoid(1.7 * v); }},
      {"silu", {}, [](double v) { return v * Sigmoid(v); }},
      {"elu", {}, [](double v) { return v > 0 ? v : std::expm1(v); }},
      {"elu", {{"alpha", 0.3f}}, [](double v) { return v > 0 ? v : 0.3 * std::expm1(v); }},
      {"exp", {}, [](double v) { return std::exp(v); }, -5, 5},
      {"log", {}, [](double v) { return std::log(v); }, 0.01, 30},
      {"pow", {}, [](double v) { return v; }},
      {"pow", {{"factor", 2.f}}, [](double v) { return v * v; }},
      {"pow", {{"factor", 3.5f}}, [](double v) { return std::pow(v, 3.5); }, 0, 4},
      {"clip", {{"min", -1.5f}, {"max", 2.f}}, [](double v) { return std::min(std::max(v, -1.5), 2.0); }},
  };
  for (const Case& c : cases)
    for (const Dims& d : kShapes) {
      CAPTURE(c.op);
      CAPTURE(c.attrs.size());
      CAPTURE(d.ToString());
      Tensor x = RandomTensor(DType::kFloat32, d, 11, c.lo, c.hi);
      OpTest t(c.op);
      t.Input("X", x).Output("Out");
      for (const auto& [name, v] : c.attrs) t.Attr(name, v);
      REQUIRE_OK(t.Run());
      t.ExpectOutput("Out", Map(x, c.f), {1e-6, 2e-6});
    }
}

TEST_CASE("piecewise activations at their breakpoints") {
  // relu6 at 0 and 6, hard_swish at -3 and 3, hard_sigmoid at -2.5 and 2.5, clip at its bounds.
  Tensor x = MakeTensor<float>({8}, {-3.f, -2.5f, 0.f, 2.5f, 3.f, 6.f, 7.f, -7.f});
  OpTest r6("relu6");
  r6.Input("X", x).Output("Out");
  REQUIRE_OK(r6.Run());
  r6.ExpectOutput("Out", MakeTensor<float>({8}, {0, 0, 0, 2.5f, 3, 6, 6, 0}), {0, 0});
  OpTest hs("hard_swish");
  hs.Input("X", x).Output("Out");
  REQUIRE_OK(hs.Run());
  hs.ExpectOutput("Out", MakeTensor<float>({8}, {0, -2.5f * 0.5f / 6, 0, 2.5f * 5.5f / 6, 3, 6, 7, 0}), {1e-6, 1e-6});
  OpTest hsig("hard_sigmoid");
  hsig.Input("X", x).Output("Out");
  REQUIRE_OK(hsig.Run());
  hsig.ExpectOutput("Out", MakeTensor<float>({8}, {0, 0, 0.5f, 1, 1, 1, 1, 0}), {1e-7, 0});
  OpTest clip("clip");
  clip.Input("X", MakeTensor<float>({4}, {-1.f, 1.f, NAN, 5.f})).Attr("min", -1.f).Attr("max", 1.f).Output("Out");
  REQUIRE_OK(clip.Run());
  clip.ExpectOutput("Out", MakeTensor<float>({4}, {-1.f, 1.f, NAN, 1.f}), {0, 0});
}

TEST_CASE("exp and log keep an unknown batch and 0-D shapes") {
  for (const char* op : {"exp", "log", "silu", "pow"}) {
    CAPTURE(op);
    OpTest t(op);
    t.Input("X", RandomTensor(DType::kFloat32, {3, 4}, 12, 0.5, 2)).CompileDims("X", {-1, 4}).Output("Out");
    REQUIRE_OK(t.Run());
    CHECK(t.CompiledDims("Out") == Dims{-1, 4});
    OpTest s(op);
    s.Input("X", MakeTensor<float>({}, {1.5f})).Output("Out");
    REQUIRE_OK(s.Run());
    CHECK(s.Out("Out").dims() == Dims{});
  }
}

TEST_CASE("clip and pow reject what they cannot run, naming the slot") {
  OpTest inverted("clip");
  inverted.Input("X", RandomTensor(DType::kFloat32, {3}, 13)).Attr("min", 2.f).Attr("max", 1.f).Output("Out");
  Status st = inverted.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "min 2 is greater than max 1: clip needs min <= max");

  OpTest missing("clip");
  missing.Input("X", RandomTensor(DType::kFloat32, {3}, 13)).Attr("min", 2.f).Output("Out");
  CHECK_FALSE(missing.Compile().ok());

  OpTest tensor_factor("pow");
  tensor_factor.Input("X", RandomTensor(DType::kFloat32, {3}, 14))
      .Input("FactorTensor", MakeTensor<float>({1}, {2.f}))
      .Output("Out");
  st = tensor_factor.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "input FactorTensor (bound to 'FactorTensor') is not supported yet: give `factor` as an attribute instead");
}

// Gradients in float64 against central differences, away from the kinks of piecewise functions.
TEST_CASE("model-zoo activation gradients match central differences") {
  struct Case {
    const char* op;
    std::vector<std::pair<std::string, float>> attrs;
    std::vector<float> x;
  };
  // Points on every piece: relu6 below 0, inside, above 6; hard_swish below -3, inside, above 3.
  const std::vector<float> wide = {-7.f, -3.6f, -2.2f, -0.7f, 0.4f, 1.3f, 2.9f, 3.4f, 5.1f, 6.8f, 9.f, -0.2f};
  const std::vector<float> positive = {0.3f, 0.7f, 1.1f, 1.6f, 2.3f, 3.7f, 0.05f, 4.4f, 5.f, 0.9f, 1.9f, 2.6f};
  const std::vector<Case> cases = {
      {"relu6", {}, wide},
      {"relu6", {{"threshold", 3.f}}, wide},
      {"hard_swish", {}, wide},
      {"hard_sigmoid", {}, wide},
      {"hard_sigmoid", {{"slope", 0.4f}, {"offset", 0.3f}}, wide},
      {"swish", {}, wide},
      {"swish", {{"beta", 0.6f}}, wide},
      {"silu", {}, wide},
      {"elu", {}, wide},
      {"elu", {{"alpha", 0.4f}}, wide},
      {"exp", {}, {-2.f, -0.5f, 0.f, 0.3f, 1.f, 2.2f}},
      {"log", {}, positive},
      {"pow", {{"factor", 2.f}}, wide},
      {"pow", {{"factor", 3.5f}}, positive},
      {"pow", {{"factor", -1.5f}}, positive},
      {"clip", {{"min", -2.f}, {"max", 3.f}}, wide},
  };
  for (const Case& c : cases) {
    CAPTURE(c.op);
    CAPTURE(c.attrs.size());
    OpTest t(c.op);
    t.Input("X", MakeTensor<float>({static_cast<int64_t>(c.x.size()) / 2, 2}, c.x)).Output("Out");
    for (const auto& [name, v] : c.attrs) t.Attr(name, v);
    t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
}

TEST_CASE("activation grad ops bind PaddlePaddle's inputs") {
  // relu6_grad and exp_grad read Out; hard_swish_grad, log_grad, pow_grad read X; silu_grad and
  // elu_grad read X and Out, as PaddlePaddle's backward definitions do.
  struct Case {
    const char* op;
    std::vector<std::string> inputs;
  };
  const Case cases[] = {{"relu6_grad", {"Out", "Out@GRAD"}},
                        {"exp_grad", {"Out", "Out@GRAD"}},
                        {"hard_sigmoid_grad", {"Out", "Out@GRAD"}},
                        {"hard_swish_grad", {"X", "Out@GRAD"}},
                        {"log_grad", {"X", "Out@GRAD"}},
                        {"swish_grad", {"X", "Out@GRAD"}},
                        {"pow_grad", {"X", "Out@GRAD", "FactorTensor"}},
                        {"clip_grad", {"X", "Out@GRAD", "Min", "Max"}},
                        {"silu_grad", {"X", "Out", "Out@GRAD"}},
                        {"elu_grad", {"X", "Out", "Out@GRAD"}}};
  for (const Case& c : cases) {
    CAPTURE(c.op);
    const ops::OpInfo* info = ops::GlobalOpRegistry().Find(c.op);
    REQUIRE(info != nullptr);
    std::vector<std::string> names;
    for (const auto& in : info->proto().inputs()) names.push_back(in.name());
    CHECK(names == c.inputs);
  }
}

}  // namespace
}  // namespace paddlec::testing

namespace paddlec::testing {
namespace {

TEST_CASE("activation grad ops reject an Out@GRAD shaped unlike their input") {
  OpTest out_based("relu6_grad");
  out_based.Input("Out", RandomTensor(DType::kFloat32, {2, 3}, 1))
      .Input("Out@GRAD", RandomTensor(DType::kFloat32, {3, 2}, 2))
      .Output("X@GRAD");
  Status st = out_based.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "Out@GRAD has shape [3, 2] but Out has shape [2, 3]: they must match");
  OpTest x_out_based("silu_grad");
  x_out_based.Input("X", RandomTensor(DType::kFloat32, {4}, 1))
      .Input("Out", RandomTensor(DType::kFloat32, {4}, 1))
      .Input("Out@GRAD", RandomTensor(DType::kFloat32, {5}, 2))
      .Output("X@GRAD");
  st = x_out_based.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "Out@GRAD has shape [5] but X has shape [4]: they must match");
}

}  // namespace
}  // namespace paddlec::testing
