// squared_l2_norm against a double-precision sum of squares, with gradient checks.
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

TEST_CASE("squared_l2_norm matches a double sum of squares on odd and large sizes") {
  const Dims shapes[] = {{1}, {7}, {3, 513}, {300007}};
  for (DType dt : {DType::kFloat32, DType::kFloat64})
    for (const Dims& d : shapes) {
      CAPTURE(DTypeName(dt));
      CAPTURE(d.ToString());
      Tensor x = RandomTensor(dt, d, 6, -2, 2);
      double s = 0;
      for (double v : ToDoubles(x)) s += v * v;
      OpTest t("squared_l2_norm");
      t.Input("X", x).Output("Out");
      REQUIRE_OK(t.Run());
      // float32 sums blocks of 8192 in float32: relative error well below 1e-5.
      Tolerance tol = dt == DType::kFloat32 ? Tolerance{0, 1e-5} : Tolerance{0, 1e-12};
      t.ExpectOutput("Out", Cast(MakeTensor<double>({1}, {s}), dt), tol);
    }
}

TEST_CASE("squared_l2_norm gives [1] for an unknown batch") {
  OpTest t("squared_l2_norm");
  t.Input("X", RandomTensor(DType::kFloat32, {4, 5}, 7)).CompileDims("X", {-1, 5}).Output("Out");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{1});
}

// float64, eps 1e-6: the loss is quadratic, so central differences are exact up to rounding (~1e-10).
TEST_CASE("squared_l2_norm_grad matches central differences") {
  for (const Dims& d : {Dims{7}, Dims{3, 5}}) {
    CAPTURE(d.ToString());
    OpTest t("squared_l2_norm");
    t.Input("X", RandomTensor(DType::kFloat32, d, 8, -2, 2)).Output("Out");
    t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
}

}  // namespace
}  // namespace paddlec::testing
