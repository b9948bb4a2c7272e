// cos_sim against a double-precision reference (rows flattened, Y broadcast over rows), shape
// errors, and gradient checks (float64, 1e-7 abs + 1e-6 rel) including the broadcast-Y case.
#include <cmath>

#include "math/math_test_util.h"

namespace paddlec::testing {
namespace {

using math_test::FromDoubles;

struct CosRef {
  std::vector<double> out, xnorm, ynorm;
};

CosRef RefCosSim(const Tensor& xt, const Tensor& yt) {
  const int64_t n = xt.dims()[0], d = xt.numel() / n, ny = yt.dims()[0];
  std::vector<double> x = ToDoubles(xt), y = ToDoubles(yt);
  CosRef r;
  for (int64_t i = 0; i < ny; ++i) {
    double s = 0;
    for (int64_t j = 0; j < d; ++j) s += y[i * d + j] * y[i * d + j];
    r.ynorm.push_back(std::sqrt(s));
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t yi = ny == 1 ? 0 : i;
    double xx = 0, xy = 0;
    for (int64_t j = 0; j < d; ++j) {
      xx += x[i * d + j] * x[i * d + j];
      xy += x[i * d + j] * y[yi * d + j];
    }
    r.xnorm.push_back(std::sqrt(xx));
    r.out.push_back(xy / (std::sqrt(xx) * r.ynorm[yi]));
  }
  return r;
}

TEST_CASE("cos_sim matches the reference, with Y per row or broadcast") {
  struct Case {
    Dims x, y;
  };
  const Case cases[] = {{{7, 513}, {7, 513}}, {{4, 3, 5}, {1, 3, 5}}, {{1, 7}, {1, 7}}, {{5, 1}, {5, 1}}};
  for (const Case& c : cases) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.y.ToString());
    Tensor x = RandomTensor(DType::kFloat32, c.x, 1), y = RandomTensor(DType::kFloat32, c.y, 2);
    OpTest t("cos_sim");
    t.Input("X", x).Input("Y", y).Output("Out").Output("XNorm").Output("YNorm");
    REQUIRE_OK(t.Run());
    CosRef r = RefCosSim(x, y);
    const int64_t n = c.x[0], ny = c.y[0];
    t.ExpectOutput("Out", FromDoubles<float>({n, 1}, r.out), {1e-6, 1e-5});
    t.ExpectOutput("XNorm", FromDoubles<float>({n, 1}, r.xnorm), {1e-6, 1e-6});
    t.ExpectOutput("YNorm", FromDoubles<float>({ny, 1}, r.ynorm), {1e-6, 1e-6});
  }
}

TEST_CASE("cos_sim without its intermediate outputs, and with an unknown batch") {
  Tensor x = RandomTensor(DType::kFloat32, {6, 4}, 3), y = RandomTensor(DType::kFloat32, {1, 4}, 4);
  OpTest t("cos_sim");
  t.Input("X", x).CompileDims("X", {-1, 4}).Input("Y", y).Output("Out");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, 1});
  t.ExpectOutput("Out", FromDoubles<float>({6, 1}, RefCosSim(x, y).out), {1e-6, 1e-5});
}

TEST_CASE("cos_sim shape errors") {
  struct Bad {
    Dims x, y;
    const char* message;
  };
  const Bad cases[] = {
      {{3}, {3}, "X has shape [3] (rank 1) but cos_sim needs rank >= 2: [N, features...]"},
      {{2, 3}, {2, 3, 1}, "X has shape [2, 3] but Y has shape [2, 3, 1]: cos_sim needs X and Y of equal rank"},
      {{2, 3}, {2, 4}, "X has shape [2, 3] but Y has shape [2, 4]: all dims but the first must match (dim 1: 3 vs 4)"},
      {{4, 3}, {2, 3}, "X has shape [4, 3] but Y has shape [2, 3]: Y's first dim must equal X's (4) or be 1"},
  };
  for (const Bad& c : cases) {
    OpTest t("cos_sim");
    t.Input("X", RandomTensor(DType::kFloat32, c.x, 5)).Input("Y", RandomTensor(DType::kFloat32, c.y, 6));
    t.Output("Out").Output("XNorm").Output("YNorm");
    Status st = t.Compile();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == c.message);
  }
}

TEST_CASE("cos_sim gradients match central differences, broadcast Y included") {
  for (const Dims& yd : {Dims{4, 3, 2}, Dims{1, 3, 2}}) {
    CAPTURE(yd.ToString());
    OpTest t("cos_sim");
    t.Input("X", RandomTensor(DType::kFloat32, {4, 3, 2}, 7)).Input("Y", RandomTensor(DType::kFloat32, yd, 8));
    t.Output("Out").Output("XNorm").Output("YNorm");
    t.CheckGrad({.inputs = {"X", "Y"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
}

TEST_CASE("cos_sim and its broadcast gradient on two threads") {
  Tensor x = RandomTensor(DType::kFloat32, {300, 513}, 9), y = RandomTensor(DType::kFloat32, {1, 513}, 10);
  auto out = RunOpNamedBySlot("cos_sim", {{"X", x}, {"Y", y}}, {}, {"Out", "XNorm", "YNorm"}, {.threads = 2});
  CosRef r = RefCosSim(x, y);
  ExpectClose(out.at("Out"), FromDoubles<float>({300, 1}, r.out), {1e-6, 1e-5}, "Out");
  Tensor dout = RandomTensor(DType::kFloat32, {300, 1}, 11);
  auto g = RunOpNamedBySlot("cos_sim_grad",
                                  {{"X", x},
                                   {"Y", y},
                                   {"Out", out.at("Out")},
                                   {"XNorm", out.at("XNorm")},
                                   {"YNorm", out.at("YNorm")},
                                   {"Out@GRAD", dout}},
                                  {}, {"X@GRAD", "Y@GRAD"}, {.threads = 2});
  // dY = sum_i g_i (x_i / (|x_i| |y|) - z_i y / |y|^2), in double.
  std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y), d = ToDoubles(dout), dy(513, 0.0);
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 513; ++j)
      dy[j] += d[i] * (xv[i * 513 + j] / (r.xnorm[i] * r.ynorm[0]) - r.out[i] * yv[j] / (r.ynorm[0] * r.ynorm[0]));
  ExpectClose(g.at("Y@GRAD"), FromDoubles<float>({1, 513}, dy), {1e-5, 1e-4}, "Y@GRAD");
}

}  // namespace
}  // namespace paddlec::testing
