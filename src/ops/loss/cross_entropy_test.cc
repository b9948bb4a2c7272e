// cross_entropy against a double-precision reference loop, with shape errors and gradient checks.
#include <cmath>

#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

/// Integer class indices uniform in [0, classes).
Tensor RandomLabels(const Dims& dims, int64_t classes, uint64_t seed, DType dtype = DType::kInt64) {
  return RandomTensor(dtype, dims, seed, 0, static_cast<double>(classes));
}

/// Reference: -log(x[label]) per row (0 for ignore_index), -sum(label * log(x)) for soft labels;
/// log(0) counts as -1e20 as in PaddlePaddle.
Tensor RefCrossEntropy(const Tensor& x, const Tensor& label, bool soft, int64_t ignore_index = -100) {
  const int64_t d = x.dims().back(), rows = x.numel() / d;
  std::vector<double> xv = ToDoubles(x), lv = ToDoubles(label);
  auto tlog = [](double v) { return v == 0 ? -1e20 : std::log(v); };
  std::vector<double> y(rows);
  for (int64_t i = 0; i < rows; ++i) {
    if (soft) {
      double s = 0;
      for (int64_t j = 0; j < d; ++j) s += lv[i * d + j] == 0 ? 0 : lv[i * d + j] * tlog(xv[i * d + j]);
      y[i] = -s;
    } else {
      auto l = static_cast<int64_t>(lv[i]);
      y[i] = l == ignore_index ? 0 : -tlog(xv[i * d + l]);
    }
  }
  Dims yd = x.dims();
  yd[yd.rank() - 1] = 1;
  return Cast(MakeTensor<double>(yd, y), x.dtype());
}

TEST_CASE("cross_entropy hard labels match -log(X[label]) on odd class counts") {
  for (DType dt : {DType::kFloat32, DType::kFloat64})
    for (int64_t d : {1, 7, 513}) {
      CAPTURE(DTypeName(dt));
      CAPTURE(d);
      Tensor x = RandomTensor(dt, {5, d}, 11 + d, 0.01, 1.0);
      Tensor label = RandomLabels({5, 1}, d, 12 + d);
      OpTest t("cross_entropy");
      t.Input("X", x).Input("Label", label).Output("Y");
      REQUIRE_OK(t.Run());
      Tolerance tol = dt == DType::kFloat32 ? Tolerance{1e-6, 1e-6} : Tolerance{1e-14, 1e-14};
      t.ExpectOutput("Y", RefCrossEntropy(x, label, false), tol);
    }
}

TEST_CASE("cross_entropy takes int32 labels without the trailing 1") {
  Tensor x = RandomTensor(DType::kFloat32, {6, 7}, 21, 0.01, 1.0);
  Tensor label = RandomLabels({6}, 7, 22, DType::kInt32);
  OpTest t("cross_entropy");
  t.Input("X", x).Input("Label", label).Output("Y");
  REQUIRE_OK(t.Run());
  // Y follows Label's rank, as in PaddlePaddle.
  Tensor ref = RefCrossEntropy(x, label, false);
  ref.set_dims({6});
  t.ExpectOutput("Y", ref, {1e-6, 1e-6});
}

TEST_CASE("cross_entropy gives zero loss at ignore_index") {
  Tensor x = RandomTensor(DType::kFloat32, {4, 5}, 31, 0.01, 1.0);
  // Default ignore_index -100, which lies outside the classes.
  OpTest def("cross_entropy");
  Tensor l1 = MakeTensor<int64_t>({4, 1}, {2, -100, 4, -100});
  def.Input("X", x).Input("Label", l1).Output("Y");
  REQUIRE_OK(def.Run());
  def.ExpectOutput("Y", RefCrossEntropy(x, l1, false), {1e-6, 1e-6});
  CHECK(ToVector<float>(def.Out("Y"))[1] == 0.0f);
  // An ignore_index inside the classes.
  OpTest in("cross_entropy");
  Tensor l2 = MakeTensor<int64_t>({4, 1}, {3, 0, 3, 1});
  in.Input("X", x).Input("Label", l2).Attr("ignore_index", 3).Output("Y");
  REQUIRE_OK(in.Run());
  in.ExpectOutput("Y", RefCrossEntropy(x, l2, false, 3), {1e-6, 1e-6});
  CHECK(ToVector<float>(in.Out("Y"))[0] == 0.0f);
}

TEST_CASE("cross_entropy on 3-D inputs, hard and soft") {
  Tensor x = RandomTensor(DType::kFloat32, {2, 3, 7}, 41, 0.01, 1.0);
  Tensor hard = RandomLabels({2, 3, 1}, 7, 42);
  OpTest h("cross_entropy");
  h.Input("X", x).Input("Label", hard).Output("Y");
  REQUIRE_OK(h.Run());
  h.ExpectOutput("Y", RefCrossEntropy(x, hard, false), {1e-6, 1e-6});

  Tensor soft = RandomTensor(DType::kFloat32, {2, 3, 7}, 43, 0, 1);
  OpTest s("cross_entropy");
  s.Input("X", x).Input("Label", soft).Attr("soft_label", true).Output("Y");
  REQUIRE_OK(s.Run());
  s.ExpectOutput("Y", RefCrossEntropy(x, soft, true), {1e-6, 1e-6});
  CHECK(s.Out("Y").dims() == Dims{2, 3, 1});
}

TEST_CASE("cross_entropy soft labels on odd class counts") {
  for (int64_t d : {1, 7, 513}) {
    CAPTURE(d);
    Tensor x = RandomTensor(DType::kFloat64, {3, d}, 51 + d, 0.01, 1.0);
    Tensor label = RandomTensor(DType::kFloat64, {3, d}, 52 + d, 0, 1);
    OpTest t("cross_entropy");
    t.Input("X", x).Input("Label", label).Attr("soft_label", true).Output("Y");
    REQUIRE_OK(t.Run());
    t.ExpectOutput("Y", RefCrossEntropy(x, label, true), {1e-12, 1e-13});
  }
}

TEST_CASE("cross_entropy guards log(0) as PaddlePaddle does") {
  Tensor x = MakeTensor<float>({2, 3}, {0.0f, 0.5f, 0.5f, 0.2f, 0.8f, 0.0f});
  OpTest hard("cross_entropy");
  hard.Input("X", x).Input("Label", MakeTensor<int64_t>({2, 1}, {0, 1})).Output("Y");
  REQUIRE_OK(hard.Run());
  hard.ExpectOutput("Y", MakeTensor<float>({2, 1}, {1e20f, -std::log(0.8f)}), {0, 1e-7});
  // A zero label on a zero probability contributes 0, not 0 * -inf = NaN.
  OpTest soft("cross_entropy");
  soft.Input("X", x).Input("Label", MakeTensor<float>({2, 3}, {0.0f, 0.5f, 0.5f, 0.3f, 0.7f, 0.0f}));
  soft.Attr("soft_label", true).Output("Y");
  REQUIRE_OK(soft.Run());
  soft.ExpectOutput("Y",
                    MakeTensor<float>({2, 1}, {static_cast<float>(-std::log(0.5)),
                                               static_cast<float>(-(0.3 * std::log(0.2) + 0.7 * std::log(0.8)))}),
                    {1e-7, 1e-6});
}

TEST_CASE("cross_entropy rejects labels outside the classes at run time") {
  Tensor x = RandomTensor(DType::kFloat32, {3, 7}, 61, 0.01, 1.0);
  OpTest high("cross_entropy");
  high.Input("X", x).Input("Label", MakeTensor<int64_t>({3, 1}, {0, 6, 7})).Output("Y");
  Status st = high.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code() == ErrorCode::kRuntime);
  CHECK(st.error().message() ==
        "Label holds 7 at index 2, outside the 7 classes [0, 7) along axis 1 of X (ignore_index is -100)");
  OpTest neg("cross_entropy");
  neg.Input("X", x).Input("Label", MakeTensor<int32_t>({3}, {-1, 0, 0})).Attr("ignore_index", -2).Output("Y");
  st = neg.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "Label holds -1 at index 0, outside the 7 classes [0, 7) along axis 1 of X (ignore_index is -2)");
}

TEST_CASE("cross_entropy keeps an unknown batch at compile time") {
  OpTest t("cross_entropy");
  t.Input("X", RandomTensor(DType::kFloat32, {4, 7}, 71, 0.01, 1.0)).CompileDims("X", {-1, 7});
  t.Input("Label", RandomLabels({4, 1}, 7, 72)).CompileDims("Label", {-1, 1}).Output("Y");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Y") == Dims{-1, 1});
  // A batch known from Label alone is propagated.
  OpTest k("cross_entropy");
  k.Input("X", RandomTensor(DType::kFloat32, {4, 7}, 73, 0.01, 1.0)).CompileDims("X", {-1, 7});
  k.Input("Label", RandomLabels({4}, 7, 74)).Output("Y");
  REQUIRE_OK(k.Compile());
  CHECK(k.CompiledDims("Y") == Dims{4});
}

TEST_CASE("cross_entropy shape errors name both shapes") {
  struct Case {
    Dims x;
    Tensor label;
    bool soft;
    const char* message;
  };
  const Case cases[] = {
      {{4, 7},
       RandomLabels({3, 1}, 7, 1),
       false,
       "X has shape [4, 7] but Label has shape [3, 1]: with soft_label false, Label must be X's shape with the last "
       "dim 1 (or without it)"},
      {{4, 7},
       RandomLabels({4, 2}, 7, 1),
       false,
       "X has shape [4, 7] but Label has shape [4, 2]: with soft_label false, Label must be X's shape with the last "
       "dim 1 (or without it)"},
      {{4, 7},
       RandomLabels({4, 1, 1}, 7, 1),
       false,
       "X has shape [4, 7] but Label has shape [4, 1, 1]: with soft_label false, Label must be X's shape with the "
       "last dim 1 (or without it)"},
      {{4, 7},
       RandomTensor(DType::kFloat32, {4, 1}, 1),
       false,
       "Label is float32: with soft_label false, Label must hold int64 or int32 class indices"},
      {{4, 7},
       RandomTensor(DType::kFloat32, {4, 6}, 1),
       true,
       "X has shape [4, 7] but Label has shape [4, 6]: with soft_label true, Label must have X's shape"},
      {{4, 7},
       RandomTensor(DType::kFloat64, {4, 7}, 1),
       true,
       "Label is float64 but X is float32: with soft_label true, Label must have X's dtype"},
      {{},
       RandomLabels({}, 7, 1),
       false,
       "X has shape [] but needs rank >= 1: its last dim holds the class probabilities"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    OpTest t("cross_entropy");
    t.Input("X", RandomTensor(DType::kFloat32, c.x, 2, 0.01, 1.0)).Input("Label", c.label).Output("Y");
    if (c.soft) t.Attr("soft_label", true);
    Status st = t.Compile();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == c.message);
  }
}

// Gradient checks run in float64 with probabilities in [0.2, 1) (away from the pole of 1/X);
// central differences with eps 1e-6 agree to ~1e-9, so tolerance 1e-7 absolute + 1e-6 relative.
TEST_CASE("cross_entropy_grad matches central differences") {
  const OpTest::GradCheck check{.inputs = {"X"}, .output = "Y", .eps = 1e-6, .tol = {1e-7, 1e-6}};
  OpTest hard("cross_entropy");
  hard.Input("X", RandomTensor(DType::kFloat32, {5, 7}, 81, 0.2, 1.0)).Input("Label", RandomLabels({5, 1}, 7, 82));
  hard.Output("Y").CheckGrad(check);

  OpTest ignore("cross_entropy");
  ignore.Input("X", RandomTensor(DType::kFloat32, {4, 3}, 83, 0.2, 1.0));
  ignore.Input("Label", MakeTensor<int32_t>({4}, {2, 1, 2, 0})).Attr("ignore_index", 2).Output("Y").CheckGrad(check);

  OpTest soft("cross_entropy");
  soft.Input("X", RandomTensor(DType::kFloat32, {2, 3, 6}, 84, 0.2, 1.0));
  soft.Input("Label", RandomTensor(DType::kFloat32, {2, 3, 6}, 85, 0, 1)).Attr("soft_label", true).Output("Y");
  soft.CheckGrad(check);
}

}  // namespace
}  // namespace paddlec::testing
