// elementwise_* ops: PaddlePaddle broadcasting against hand-aligned double references, shape errors,
// integer kernels, the parallel paths, and gradient checks (float64, tolerance 1e-7 abs + 1e-6 rel).
#include <cmath>

#include "math/math_test_util.h"

namespace paddlec::testing {
namespace {

using math_test::BinaryRef;
using math_test::FromDoubles;
using math_test::SumTo;

struct BinaryOp {
  const char* type;
  double (*f)(double, double);
};
const BinaryOp kOps[] = {
    {"elementwise_add", [](double a, double b) { return a + b; }},
    {"elementwise_sub", [](double a, double b) { return a - b; }},
    {"elementwise_mul", [](double a, double b) { return a * b; }},
    {"elementwise_div", [](double a, double b) { return a / b; }},
    {"elementwise_max", [](double a, double b) { return std::max(a, b); }},
    {"elementwise_min", [](double a, double b) { return std::min(a, b); }},
};

/// A broadcasting case: the operands, the axis, and the expected alignment written out by hand.
struct Case {
  const char* name;
  Dims x, y;
  int axis;
  Dims out, x_aligned, y_aligned;
};
const Case kCases[] = {
    {"equal shapes, odd size", {3, 513}, {3, 513}, -1, {3, 513}, {3, 513}, {3, 513}},
    {"single element", {1}, {1}, -1, {1}, {1}, {1}},
    {"axis -1 trailing", {2, 3, 4, 5}, {4, 5}, -1, {2, 3, 4, 5}, {2, 3, 4, 5}, {1, 1, 4, 5}},
    {"axis 1 middle", {2, 3, 4, 5}, {3, 4}, 1, {2, 3, 4, 5}, {2, 3, 4, 5}, {1, 3, 4, 1}},
    {"axis 1 per-channel", {2, 3, 4, 5}, {3}, 1, {2, 3, 4, 5}, {2, 3, 4, 5}, {1, 3, 1, 1}},
    {"Y (2, 1) at axis 0: trailing 1 dropped", {2, 3, 4, 5}, {2, 1}, 0, {2, 3, 4, 5}, {2, 3, 4, 5}, {2, 1, 1, 1}},
    {"Y (3, 1) at axis 1: fits once its trailing 1 is dropped", {2, 3}, {3, 1}, 1, {2, 3}, {2, 3}, {1, 3}},
    {"scalar-like Y [1]", {2, 3}, {1}, -1, {2, 3}, {2, 3}, {1, 1}},
    {"0-D Y", {7}, {}, -1, {7}, {7}, {1}},
    {"bias add, Y a row", {7, 513}, {513}, -1, {7, 513}, {7, 513}, {1, 513}},
    {"rank(Y) > rank(X)", {4, 5}, {2, 3, 4, 5}, -1, {2, 3, 4, 5}, {1, 1, 4, 5}, {2, 3, 4, 5}},
    {"rank(Y) > rank(X) at axis 1", {3}, {2, 3, 4}, 1, {2, 3, 4}, {1, 3, 1}, {2, 3, 4}},
    {"size-1 dims on both sides", {2, 1, 4}, {3, 4}, -1, {2, 3, 4}, {2, 1, 4}, {1, 3, 4}},
    {"column Y [7, 1] over X [7, 3]", {7, 3}, {7, 1}, -1, {7, 3}, {7, 3}, {7, 1}},
};

TEST_CASE("elementwise ops broadcast like PaddlePaddle") {
  for (const BinaryOp& op : kOps)
    for (const Case& c : kCases) {
      std::string op_type = op.type;
      CAPTURE(op_type);
      std::string case_name = c.name;
      CAPTURE(case_name);
      const bool div = std::string(op.type) == "elementwise_div";
      Tensor x = RandomTensor(DType::kFloat32, c.x, 1, -2, 2);
      Tensor y = RandomTensor(DType::kFloat32, c.y, 2, div ? 0.5 : -2, 2);
      OpTest t(op.type);
      t.Input("X", x).Input("Y", y).Output("Out");
      if (c.axis != -1) t.Attr("axis", c.axis);
      REQUIRE_OK(t.Run());
      CHECK(t.CompiledDims("Out") == c.out);
      auto ref = BinaryRef(ToDoubles(x), c.x_aligned, ToDoubles(y), c.y_aligned, c.out, op.f);
      t.ExpectOutput("Out", FromDoubles<float>(c.out, ref), {1e-6, 1e-6});
    }
}

TEST_CASE("elementwise ops in float64 and the integer kernels") {
  Tensor x = RandomTensor(DType::kFloat64, {3, 5}, 3, -2, 2);
  Tensor y = RandomTensor(DType::kFloat64, {5}, 4, 0.5, 2);
  OpTest t("elementwise_div");
  t.Input("X", x).Input("Y", y).Output("Out");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Out",
                 FromDoubles<double>({3, 5}, BinaryRef(ToDoubles(x), {3, 5}, ToDoubles(y), {1, 5}, {3, 5},
                                                       [](double a, double b) { return a / b; })),
                 {1e-15, 1e-15});

  OpTest add("elementwise_add");
  add.Input("X", MakeTensor<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6}))
      .Input("Y", MakeTensor<int64_t>({3}, {10, 20, int64_t{1} << 40}))
      .Output("Out");
  REQUIRE_OK(add.Run());
  add.ExpectOutput("Out", MakeTensor<int64_t>({2, 3}, {11, 22, 3 + (int64_t{1} << 40), 14, 25, 6 + (int64_t{1} << 40)}),
                   {0, 0});

  // Integer division truncates toward zero, as in C++ and PaddlePaddle.
  OpTest div("elementwise_div");
  div.Input("X", MakeTensor<int32_t>({4}, {7, -7, 9, 1}))
      .Input("Y", MakeTensor<int32_t>({4}, {2, 2, -4, 3}))
      .Output("Out");
  REQUIRE_OK(div.Run());
  div.ExpectOutput("Out", MakeTensor<int32_t>({4}, {3, -3, -2, 0}), {0, 0});

  OpTest zero("elementwise_div");
  zero.Input("X", MakeTensor<int32_t>({2}, {1, 2})).Input("Y", MakeTensor<int32_t>({1}, {0})).Output("Out");
  Status st = zero.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "integer division by zero: Y of shape [1] holds a 0");
}

TEST_CASE("elementwise ops keep unknown dims at compile time") {
  struct Unknown {
    Dims x, y, out;     // compile-time dims
    Dims x_run, y_run;  // run-time dims
  };
  const Unknown cases[] = {
      {{-1, 5}, {5}, {-1, 5}, {3, 5}, {5}},         // a -1 batch
      {{-1, 3}, {-1, 1}, {-1, 3}, {2, 3}, {2, 1}},  // both unknown in the window
      {{5}, {-1, 5}, {-1, 5}, {5}, {4, 5}},         // rank(Y) > rank(X)
      {{2, -1}, {2, 3}, {2, 3}, {2, 3}, {2, 3}},    // unknown against known > 1: the known one
      {{-1, 1}, {1, 1}, {-1, 1}, {6, 1}, {1, 1}},   // unknown against 1 stays unknown
  };
  for (const Unknown& c : cases) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.y.ToString());
    OpTest t("elementwise_add");
    t.Input("X", RandomTensor(DType::kFloat32, c.x_run, 5)).CompileDims("X", c.x);
    t.Input("Y", RandomTensor(DType::kFloat32, c.y_run, 6)).CompileDims("Y", c.y);
    t.Output("Out");
    REQUIRE_OK(t.Run());
    CHECK(t.CompiledDims("Out") == c.out);
  }
}

TEST_CASE("elementwise shape errors name both shapes and the axis") {
  struct Bad {
    Dims x, y;
    int axis;
    const char* message;
  };
  const Bad cases[] = {
      {{2, 3, 4, 5},
       {3, 5},
       1,
       "Broadcast dimension mismatch. Operands could not be broadcast together with the shape of X = [2, 3, 4, 5] "
       "and the shape of Y = [3, 5] at axis 1: X's dim 2 (4) and Y's dim 1 (5) differ and neither is 1"},
      {{2, 3},
       {4},
       -1,
       "Broadcast dimension mismatch. Operands could not be broadcast together with the shape of X = [2, 3] and the "
       "shape of Y = [4] at axis -1: X's dim 1 (3) and Y's dim 0 (4) differ and neither is 1"},
      {{4},
       {2, 3},
       -1,
       "Broadcast dimension mismatch. Operands could not be broadcast together with the shape of X = [4] and the "
       "shape of Y = [2, 3] at axis -1: X's dim 0 (4) and Y's dim 1 (3) differ and neither is 1"},
      {{2, 3, 4},
       {3, 4},
       2,
       "axis 2 is out of range for X of shape [2, 3, 4] and Y of shape [3, 4]: Y (without trailing 1s) must fit in X "
       "starting at axis, so axis must be -1 or in [0, 1]"},
      {{3},
       {2, 3, 4},
       3,
       "axis 3 is out of range for X of shape [3] and Y of shape [2, 3, 4]: X (without trailing 1s) must fit in Y "
       "starting at axis, so axis must be -1 or in [0, 2]"},
  };
  for (const Bad& c : cases) {
    OpTest t("elementwise_mul");
    t.Input("X", RandomTensor(DType::kFloat32, c.x, 7)).Input("Y", RandomTensor(DType::kFloat32, c.y, 8)).Output("Out");
    if (c.axis != -1) t.Attr("axis", c.axis);
    Status st = t.Compile();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == c.message);
  }
  OpTest dtypes("elementwise_add");
  dtypes.Input("X", RandomTensor(DType::kFloat32, {2}, 9))
      .Input("Y", RandomTensor(DType::kFloat64, {2}, 9))
      .Output("Out");
  Status st = dtypes.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "X has dtype float32 but Y has dtype float64: elementwise ops need operands of one dtype");
}

/// Values on a grid where every X differs from every Y by at least 0.025, so max/min have no ties
/// within the finite-difference step.
Tensor GridTensor(const Dims& d, uint64_t seed, bool odd) {
  std::vector<double> v = ToDoubles(RandomTensor(DType::kFloat64, d, seed, -1, 1));
  for (double& e : v) e = std::round(e * 20) / 20 + (odd ? 0.025 : 0.0);
  return FromDoubles<float>(d, v);
}

TEST_CASE("elementwise gradients match central differences, broadcast cases included") {
  struct GradCase {
    Dims x, y;
    int axis;
  };
  const GradCase cases[] = {
      {{2, 3}, {2, 3}, -1},    {{2, 3, 4}, {4}, -1},    {{2, 3, 4}, {3}, 1},  {{2, 3}, {1}, -1},
      {{3, 4}, {2, 3, 4}, -1}, {{2, 1, 4}, {3, 4}, -1}, {{3, 2}, {3, 1}, -1}, {{2, 3, 4}, {2, 1}, 0},
  };
  for (const BinaryOp& op : kOps)
    for (const GradCase& c : cases) {
      std::string op_type = op.type;
      CAPTURE(op_type);
      CAPTURE(c.x.ToString());
      CAPTURE(c.y.ToString());
      const bool div = std::string(op.type) == "elementwise_div";
      Tensor x = GridTensor(c.x, 11, true);
      Tensor y = div ? RandomTensor(DType::kFloat32, c.y, 12, 0.5, 2) : GridTensor(c.y, 12, false);
      OpTest t(op.type);
      t.Input("X", x).Input("Y", y).Output("Out");
      if (c.axis != -1) t.Attr("axis", c.axis);
      t.CheckGrad({.inputs = {"X", "Y"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
    }
}

TEST_CASE("elementwise_max_grad and elementwise_min_grad send ties to X") {
  for (const char* type : {"elementwise_max_grad", "elementwise_min_grad"}) {
    std::string op_type = type;
    CAPTURE(op_type);
    OpTest t(type);
    t.Input("X", MakeTensor<float>({4}, {1, 2, 3, 4}))
        .Input("Y", MakeTensor<float>({4}, {1, 5, 3, 0}))
        .Input("Out@GRAD", MakeTensor<float>({4}, {10, 20, 30, 40}))
        .Output("X@GRAD")
        .Output("Y@GRAD");
    REQUIRE_OK(t.Run());
    const bool max = std::string(type) == "elementwise_max_grad";
    t.ExpectOutput("X@GRAD", MakeTensor<float>({4}, {10, max ? 0.f : 20.f, 30, max ? 40.f : 0.f}), {0, 0});
    t.ExpectOutput("Y@GRAD", MakeTensor<float>({4}, {0, max ? 20.f : 0.f, 0, max ? 0.f : 40.f}), {0, 0});
  }
}

TEST_CASE("elementwise_add_grad computes only the requested gradient") {
  OpTest t("elementwise_add_grad");
  t.Input("X", RandomTensor(DType::kFloat32, {3, 4}, 13))
      .Input("Y", RandomTensor(DType::kFloat32, {4}, 14))
      .Input("Out@GRAD", MakeTensor<float>({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
      .Output("Y@GRAD");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Y@GRAD", MakeTensor<float>({4}, {15, 18, 21, 24}), {0, 0});
}

// The parallel paths (more than 2 x 32768 elements, two threads): the flat path, a row broadcast,
// a scalar-per-run broadcast, and gradients reduced with per-thread partials (Y broadcast along the
// outer dim) or split along the outer dim (Y broadcast along the inner dim).
TEST_CASE("elementwise kernels on two threads match the references") {
  struct Big {
    Dims x, y;
    int axis;
    Dims out, xa, ya;
  };
  const Big cases[] = {
      {{300, 513}, {300, 513}, -1, {300, 513}, {300, 513}, {300, 513}},
      {{300, 513}, {513}, -1, {300, 513}, {300, 513}, {1, 513}},
      {{4, 7, 3001}, {7}, 1, {4, 7, 3001}, {4, 7, 3001}, {1, 7, 1}},
      {{513, 300}, {513, 1}, -1, {513, 300}, {513, 300}, {513, 1}},
  };
  for (const Big& c : cases) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.y.ToString());
    Tensor x = RandomTensor(DType::kFloat32, c.x, 21), y = RandomTensor(DType::kFloat32, c.y, 22, 0.5, 2);
    std::vector<ops::pb::OpDesc::Attr> attrs;
    if (c.axis != -1) attrs.push_back(ops::MakeAttr("axis", c.axis));
    auto fwd = RunOpNamedBySlot("elementwise_mul", {{"X", x}, {"Y", y}}, attrs, {"Out"}, {.threads = 2});
    auto ref = BinaryRef(ToDoubles(x), c.xa, ToDoubles(y), c.ya, c.out, [](double a, double b) { return a * b; });
    ExpectClose(fwd.at("Out"), FromDoubles<float>(c.out, ref), {1e-6, 1e-6}, "elementwise_mul forward");

    Tensor dout = RandomTensor(DType::kFloat32, c.out, 23);
    auto grad = RunOpNamedBySlot("elementwise_mul_grad", {{"X", x}, {"Y", y}, {"Out@GRAD", dout}}, attrs,
                                       {"X@GRAD", "Y@GRAD"}, {.threads = 2});
    auto dxy = BinaryRef(ToDoubles(dout), c.out, ToDoubles(y), c.ya, c.out, [](double a, double b) { return a * b; });
    auto dyx = BinaryRef(ToDoubles(dout), c.out, ToDoubles(x), c.xa, c.out, [](double a, double b) { return a * b; });
    ExpectClose(grad.at("X@GRAD"), FromDoubles<float>(c.x, SumTo(dxy, c.out, c.xa)), {1e-5, 1e-5}, "X@GRAD");
    // Y@GRAD sums up to 1,200 products in float32.
    ExpectClose(grad.at("Y@GRAD"), FromDoubles<float>(c.y, SumTo(dyx, c.out, c.ya)), {1e-3, 1e-4}, "Y@GRAD");
  }
}

}  // namespace
}  // namespace paddlec::testing
