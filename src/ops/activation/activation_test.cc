// Activation ops against closed-form references, with gradient checks.
#include <cmath>

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
  exact.ExpectOutput("Out", Map(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }), {1e-6, 1e-5});

  OpTest approx("gelu");
  approx.Input("X", x).Attr("approximate", true).Output("Out");
  REQUIRE_OK(approx.Run());
  approx.ExpectOutput("Out", Map(x, [](double v) {
                        return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
                      }),
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

}  // namespace
}  // namespace paddlec::testing
