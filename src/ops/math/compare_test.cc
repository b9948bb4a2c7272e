// The comparison ops and where against naive references: broadcasting (PaddlePaddle's for the
// comparisons, NumPy's for where), NaN, every dtype, unknown dims, errors and where's gradient.
#include <cmath>
#include <functional>

#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

/// Element i of `t` broadcast NumPy-style to `out` (t aligned to out's trailing axes).
double At(const std::vector<double>& v, const Dims& d, const Dims& out, int64_t flat) {
  int64_t src = 0, stride = 1;
  const int diff = out.rank() - d.rank();
  for (int a = out.rank() - 1; a >= 0; --a) {
    const int64_t i = flat % out[a];
    flat /= out[a];
    if (a < diff) continue;
    src += (d[a - diff] == 1 ? 0 : i) * stride;
    stride *= d[a - diff];
  }
  return v[src];
}

TEST_CASE("comparisons match C++'s relations with broadcasting, NaN and every dtype") {
  const std::pair<const char*, std::function<bool(double, double)>> ops[] = {
      {"equal", [](double a, double b) { return a == b; }},
      {"not_equal", [](double a, double b) { return a != b; }},
      {"less_than", [](double a, double b) { return a < b; }},
      {"less_equal", [](double a, double b) { return a <= b; }},
      {"greater_than", [](double a, double b) { return a > b; }},
      {"greater_equal", [](double a, double b) { return a >= b; }},
  };
  struct Shapes {
    Dims x, y, out;
  };
  const Shapes shapes[] = {
      {{4, 5}, {4, 5}, {4, 5}}, {{4, 5}, {5}, {4, 5}}, {{3, 1, 5}, {4, 1}, {3, 4, 5}}, {{5}, {}, {5}}};
  for (const auto& [op, f] : ops)
    for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64})
      for (const Shapes& s : shapes) {
        CAPTURE(op);
        CAPTURE(DTypeName(t));
        CAPTURE(s.out.ToString());
        // Few distinct values, so equal pairs are common.
        Tensor x = RandomTensor(t, s.x, 51, -3, 3), y = RandomTensor(t, s.y, 52, -3, 3);
        if (t == DType::kFloat32 || t == DType::kFloat64) {
          x = Cast(Cast(x, DType::kInt32), t);
          y = Cast(Cast(y, DType::kInt32), t);
        }
        std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y);
        std::vector<bool> ref;
        for (int64_t i = 0; i < s.out.Numel(); ++i) ref.push_back(f(At(xv, s.x, s.out, i), At(yv, s.y, s.out, i)));
        OpTest test(op);
        test.Input("X", x).Input("Y", y).Output("Out");
        REQUIRE_OK(test.Run());
        test.ExpectOutput("Out", MakeTensor<bool>(s.out, ref), {0, 0});
      }
  OpTest nan("not_equal");
  nan.Input("X", MakeTensor<float>({3}, {NAN, 1.f, NAN})).Input("Y", MakeTensor<float>({3}, {NAN, 1.f, 2.f}));
  nan.Output("Out");
  REQUIRE_OK(nan.Run());
  nan.ExpectOutput("Out", MakeTensor<bool>({3}, {true, false, true}), {0, 0});
  OpTest bools("equal");
  bools.Input("X", MakeTensor<bool>({2}, {true, false})).Input("Y", MakeTensor<bool>({2}, {true, true})).Output("Out");
  REQUIRE_OK(bools.Run());
  bools.ExpectOutput("Out", MakeTensor<bool>({2}, {true, false}), {0, 0});
}

TEST_CASE("comparisons: PaddlePaddle's axis, unknown dims, errors, no gradient") {
  OpTest axis("less_than");
  axis.Input("X", RandomTensor(DType::kFloat32, {2, 3, 4}, 53)).Input("Y", RandomTensor(DType::kFloat32, {3}, 54));
  axis.Attr("axis", 1).Output("Out");
  REQUIRE_OK(axis.Run());
  CHECK(axis.Out("Out").dims() == Dims{2, 3, 4});
  OpTest unknown("greater_equal");
  unknown.Input("X", RandomTensor(DType::kInt64, {6, 4}, 55, 0, 9)).CompileDims("X", {-1, 4});
  unknown.Input("Y", RandomTensor(DType::kInt64, {4}, 56, 0, 9)).Output("Out");
  REQUIRE_OK(unknown.Run());
  CHECK(unknown.CompiledDims("Out") == Dims{-1, 4});
  OpTest types("equal");
  types.Input("X", RandomTensor(DType::kFloat32, {2}, 57)).Input("Y", RandomTensor(DType::kInt64, {2}, 58));
  types.Output("Out");
  CHECK(CompileError(types) == "X has dtype float32 but Y has dtype int64: comparisons need operands of one dtype");
  for (const char* op : {"equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal"})
    CHECK(ops::GlobalOpRegistry().Find(op)->no_gradient());
}

TEST_CASE("where selects with NumPy broadcasting") {
  struct Shapes {
    Dims c, x, y, out;
  };
  const Shapes shapes[] = {
      {{4, 5}, {4, 5}, {4, 5}, {4, 5}}, {{4, 1}, {4, 5}, {5}, {4, 5}}, {{5}, {3, 1, 5}, {}, {3, 1, 5}}};
  for (DType t : {DType::kFloat32, DType::kInt64, DType::kBool})
    for (const Shapes& s : shapes) {
      CAPTURE(DTypeName(t));
      CAPTURE(s.out.ToString());
      Tensor c = Cast(RandomTensor(DType::kInt32, s.c, 61, 0, 2), DType::kBool);
      Tensor x = RandomTensor(t, s.x, 62, -9, 9), y = RandomTensor(t, s.y, 63, -9, 9);
      std::vector<double> cv = ToDoubles(c), xv = ToDoubles(x), yv = ToDoubles(y), ref;
      for (int64_t i = 0; i < s.out.Numel(); ++i)
        ref.push_back(At(cv, s.c, s.out, i) != 0 ? At(xv, s.x, s.out, i) : At(yv, s.y, s.out, i));
      OpTest op("where");
      op.Input("Condition", c).Input("X", x).Input("Y", y).Output("Out");
      REQUIRE_OK(op.Run());
      op.ExpectOutput("Out", Cast(MakeTensor<double>(s.out, ref), t), {0, 0});
    }
  OpTest bad("where");
  bad.Input("Condition", Cast(RandomTensor(DType::kInt32, {3}, 64, 0, 2), DType::kBool));
  bad.Input("X", RandomTensor(DType::kFloat32, {4}, 65)).Input("Y", RandomTensor(DType::kFloat32, {4}, 66));
  bad.Output("Out");
  CHECK(CompileError(bad) ==
        "Condition [3], X [4] and Y [4] do not broadcast: dimension 0 of Out would be both 3 and 4");
  OpTest cond_type("where");
  cond_type.Input("Condition", RandomTensor(DType::kFloat32, {4}, 67));
  cond_type.Input("X", RandomTensor(DType::kFloat32, {4}, 65)).Input("Y", RandomTensor(DType::kFloat32, {4}, 66));
  cond_type.Output("Out");
  CHECK(CompileError(cond_type) == "Condition has dtype float32: where needs a bool condition");
}

TEST_CASE("where gradient routes Out@GRAD by the condition, summed onto broadcast operands") {
  OpTest same("where");
  same.Input("Condition", Cast(RandomTensor(DType::kInt32, {3, 4}, 71, 0, 2), DType::kBool));
  same.Input("X", RandomTensor(DType::kFloat32, {3, 4}, 72)).Input("Y", RandomTensor(DType::kFloat32, {3, 4}, 73));
  same.Output("Out");
  same.CheckGrad({.inputs = {"X", "Y"}});
  OpTest bcast("where");
  bcast.Input("Condition", Cast(RandomTensor(DType::kInt32, {3, 4}, 74, 0, 2), DType::kBool));
  bcast.Input("X", RandomTensor(DType::kFloat32, {4}, 75)).Input("Y", RandomTensor(DType::kFloat32, {3, 1}, 76));
  bcast.Output("Out");
  bcast.CheckGrad({.inputs = {"X", "Y"}});
}

}  // namespace
}  // namespace paddlec::testing
