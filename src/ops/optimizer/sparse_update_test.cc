// SelectedRows gradients: lookup_table_v2_grad with is_sparse, and sgd, momentum and adam applying
// one lazily (only its rows, duplicates merged) against dense references computed here.
#include <cmath>

#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

constexpr int64_t kRows = 5, kWidth = 2;

/// A SelectedRows of `rows` of a kRows-row table, valued `values` ([rows.size(), kWidth]).
Tensor Sparse(const std::vector<int64_t>& rows, const std::vector<float>& values) {
  Tensor t = MakeTensor<float>({static_cast<int64_t>(rows.size()), kWidth}, values);
  t.SetSelectedRows(rows, kRows);
  return t;
}

/// The dense gradient a SelectedRows stands for.
std::vector<double> Densify(const Tensor& g) {
  std::vector<double> d(kRows * kWidth, 0.0), v = ToDoubles(g);
  for (size_t k = 0; k < g.rows().size(); ++k)
    for (int64_t j = 0; j < kWidth; ++j) d[g.rows()[k] * kWidth + j] += v[k * kWidth + j];
  return d;
}

Tensor Param() { return RandomTensor(DType::kFloat32, {kRows, kWidth}, 5); }
/// Row 3 twice (merged to (1.5, 0) when applied) and row 1.
Tensor Grad() { return Sparse({3, 1, 3}, {0.5f, -1, 0.25f, 2, 1, 1}); }

TEST_CASE("lookup_table_v2_grad with is_sparse gives the ids as rows and Out@GRAD as values") {
  OpTest t("lookup_table_v2_grad");
  Tensor dout = RandomTensor(DType::kFloat32, {4, 3}, 6);
  t.Input("W", RandomTensor(DType::kFloat32, {10, 3}, 7))
      .Input("Ids", MakeTensor<int64_t>({4}, {7, 2, 0, 7}))
      .Input("Out@GRAD", dout)
      .Attr("is_sparse", true)
      .Attr("padding_idx", int64_t{0})
      .Output("W@GRAD");
  REQUIRE_OK(t.Run());
  const Tensor& g = t.Out("W@GRAD");
  CHECK(g.is_selected_rows());
  CHECK(g.height() == 10);
  CHECK(g.rows() == std::vector<int64_t>{7, 2, 7});  // the padding id gets no row
  std::vector<float> d = ToVector<float>(dout), want;
  for (int i : {0, 1, 3}) want.insert(want.end(), d.begin() + i * 3, d.begin() + i * 3 + 3);
  ExpectClose(g, MakeTensor<float>({3, 3}, want), {0, 0}, "W@GRAD values");
}

TEST_CASE("sgd applies a SelectedRows exactly as its dense gradient") {
  OpTest t("sgd");
  t.Input("Param", Param()).Input("LearningRate", MakeTensor<float>({1}, {0.1f})).Input("Grad", Grad());
  t.Output("ParamOut");
  REQUIRE_OK(t.Run());
  std::vector<double> p = ToDoubles(Param()), g = Densify(Grad()), want;
  for (size_t i = 0; i < p.size(); ++i) want.push_back(p[i] - 0.1 * g[i]);
  t.ExpectOutput("ParamOut", Cast(MakeTensor<double>({kRows, kWidth}, want), DType::kFloat32), {1e-6, 1e-6});
}

TEST_CASE("momentum with a SelectedRows moves only its rows") {
  OpTest t("momentum");
  Tensor v = RandomTensor(DType::kFloat32, {kRows, kWidth}, 8);
  t.Input("Param", Param())
      .Input("Grad", Grad())
      .Input("Velocity", v)
      .Input("LearningRate", MakeTensor<float>({1}, {0.1f}));
  t.Attr("mu", 0.9f).Output("ParamOut").Output("VelocityOut");
  REQUIRE_OK(t.Run());
  std::vector<double> p = ToDoubles(Param()), g = Densify(Grad()), vv = ToDoubles(v), wp = p, wv = vv;
  for (int64_t r : {1, 3})
    for (int64_t j = 0; j < kWidth; ++j) {
      const int64_t i = r * kWidth + j;
      wv[i] = 0.9 * vv[i] + g[i];
      wp[i] = p[i] - 0.1 * wv[i];
    }
  t.ExpectOutput("ParamOut", Cast(MakeTensor<double>({kRows, kWidth}, wp), DType::kFloat32), {1e-6, 1e-6});
  t.ExpectOutput("VelocityOut", Cast(MakeTensor<double>({kRows, kWidth}, wv), DType::kFloat32), {1e-6, 1e-6});
}

/// Adam's update of element i (optimizer.cc's formula) with gradient g.
void AdamRef(double p, double g, double m1, double m2, double* po, double* m1o, double* m2o) {
  const double b1 = 0.9, b2 = 0.999, b1p = 0.9, b2p = 0.999, lr = 0.01, eps = 1e-8;
  *m1o = b1 * m1 + (1 - b1) * g;
  *m2o = b2 * m2 + (1 - b2) * g * g;
  const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
  *po = p - lr_t * (*m1o / (std::sqrt(*m2o) + eps * std::sqrt(1 - b2p)));
}

TEST_CASE("adam with a SelectedRows: lazy_mode updates only its rows, otherwise every row") {
  for (bool lazy : {true, false}) {
    CAPTURE(lazy);
    Tensor m1 = RandomTensor(DType::kFloat32, {kRows, kWidth}, 9),
           m2 = RandomTensor(DType::kFloat32, {kRows, kWidth}, 10, 0.1, 1);
    OpTest t("adam");
    t.Input("Param", Param()).Input("Grad", Grad()).Input("LearningRate", MakeTensor<float>({1}, {0.01f}));
    t.Input("Moment1", m1).Input("Moment2", m2);
    t.Input("Beta1Pow", MakeTensor<float>({1}, {0.9f})).Input("Beta2Pow", MakeTensor<float>({1}, {0.999f}));
    t.Output("ParamOut").Output("Moment1Out").Output("Moment2Out").Output("Beta1PowOut").Output("Beta2PowOut");
    if (lazy) t.Attr("lazy_mode", true);
    REQUIRE_OK(t.Run());
    std::vector<double> p = ToDoubles(Param()), g = Densify(Grad()), a = ToDoubles(m1), b = ToDoubles(m2);
    std::vector<double> wp = p, wa = a, wb = b;
    for (int64_t i = 0; i < kRows * kWidth; ++i) {
      const int64_t row = i / kWidth;
      if (lazy && row != 1 && row != 3) continue;
      AdamRef(p[i], g[i], a[i], b[i], &wp[i], &wa[i], &wb[i]);
    }
    t.ExpectOutput("ParamOut", Cast(MakeTensor<double>({kRows, kWidth}, wp), DType::kFloat32), {1e-6, 1e-5});
    t.ExpectOutput("Moment1Out", Cast(MakeTensor<double>({kRows, kWidth}, wa), DType::kFloat32), {1e-6, 1e-5});
    t.ExpectOutput("Moment2Out", Cast(MakeTensor<double>({kRows, kWidth}, wb), DType::kFloat32), {1e-6, 1e-5});
  }
}

TEST_CASE("a SelectedRows naming a row outside Param is an error") {
  OpTest t("sgd");
  t.Input("Param", Param()).Input("LearningRate", MakeTensor<float>({1}, {0.1f}));
  Tensor bad = MakeTensor<float>({1, kWidth}, {1, 1});
  bad.SetSelectedRows({7}, kRows);
  t.Input("Grad", bad).Output("ParamOut");
  Status st = t.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "sgd: the sparse Grad names row 7 of Param [5, 2]");
  OpTest dense("sgd");
  dense.Input("Param", Param()).Input("LearningRate", MakeTensor<float>({1}, {0.1f}));
  dense.Input("Grad", RandomTensor(DType::kFloat32, {3, kWidth}, 1)).Output("ParamOut");
  st = dense.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "sgd: Param has shape [5, 2] but Grad has shape [3, 2]: they must be equal");
}

}  // namespace
}  // namespace paddlec::testing
