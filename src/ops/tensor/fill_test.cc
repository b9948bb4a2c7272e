// fill_constant, fill_zeros_like, assign and cast against closed forms, with gradient checks.
#include <cmath>
#include <limits>

#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

// VarType numbers of every element type the family serves.
constexpr int kDTypeNumbers[] = {0, 1, 2, 3, 5, 6, 20, 21};

TEST_CASE("fill_constant defaults: a float32 0-D zero") {
  OpTest t("fill_constant");
  t.Output("Out");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Out", MakeTensor<float>({}, {0.f}), {0, 0});
  CHECK(t.Out("Out").dtype() == DType::kFloat32);
}

TEST_CASE("fill_constant fills every dtype, odd sizes") {
  for (int dtype : kDTypeNumbers)
    for (const Dims& d : {Dims{1}, Dims{7}, Dims{3, 513}}) {
      CAPTURE(dtype);
      CAPTURE(d.ToString());
      OpTest t("fill_constant");
      t.Attr("dtype", dtype).Attr("shape", std::vector<int64_t>(d.begin(), d.end())).Attr("value", 3.0f).Output("Out");
      REQUIRE_OK(t.Run());
      DType want = *DTypeFromProto(dtype);
      CHECK(t.Out("Out").dtype() == want);
      t.ExpectOutput("Out", Cast(FullTensor<double>(d, dtype == 0 ? 1.0 : 3.0), want), {0, 0});
    }
}

TEST_CASE("fill_constant str_value overrides value, exactly for large int64") {
  struct Case {
    int dtype;
    const char* text;
    double expect;
  };
  const Case cases[] = {{5, "-1e30", -1e30f}, {6, "1e-3", 1e-3}, {2, "2.5", 2}, {2, "-7", -7}, {0, "0", 0}};
  for (const Case& c : cases) {
    CAPTURE(c.text);
    OpTest t("fill_constant");
    t.Attr("dtype", c.dtype).Attr("shape", std::vector<int64_t>{2}).Attr("value", 5.0f).Attr("str_value", c.text);
    t.Output("Out");
    REQUIRE_OK(t.Run());
    t.ExpectOutput("Out", Cast(FullTensor<double>({2}, c.expect), *DTypeFromProto(c.dtype)), {0, 0});
  }
  // 2^53 + 1 is not a double: only an integer parse keeps it.
  OpTest big("fill_constant");
  big.Attr("dtype", 3).Attr("shape", std::vector<int64_t>{3}).Attr("str_value", "9007199254740993").Output("Out");
  REQUIRE_OK(big.Run());
  CHECK(ToVector<int64_t>(big.Out("Out")) == std::vector<int64_t>(3, 9007199254740993));
  // ExpectClose computes inf - inf, so the non-finite values are checked directly.
  OpTest nan("fill_constant");
  nan.Attr("shape", std::vector<int64_t>{1}).Attr("str_value", "nan").Output("Out");
  REQUIRE_OK(nan.Run());
  CHECK(std::isnan(ToVector<float>(nan.Out("Out"))[0]));
  OpTest inf("fill_constant");
  inf.Attr("dtype", 6).Attr("shape", std::vector<int64_t>{1}).Attr("str_value", "-inf").Output("Out");
  REQUIRE_OK(inf.Run());
  CHECK(ToVector<double>(inf.Out("Out"))[0] == -INFINITY);
}

// PaddlePaddle builds an RNN's zero initial state this way: the batch size is a value of the graph.
TEST_CASE("fill_constant takes its shape from ShapeTensor or ShapeTensorList values at run time") {
  OpTest t("fill_constant");
  t.Input("ShapeTensor", MakeTensor<int64_t>({3}, {2, 1, 3})).Attr("value", 1.5f).Output("Out");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, -1, -1});
  t.ExpectOutput("Out", FullTensor<float>({2, 1, 3}, 1.5f));

  OpTest list("fill_constant");
  list.Inputs("ShapeTensorList",
              {MakeTensor<int32_t>({1}, {4}), MakeTensor<int64_t>({1}, {2}), MakeTensor<int32_t>({1}, {3})});
  list.Attr("shape", std::vector<int64_t>{4, -1, 3}).Attr("dtype", 3).Attr("str_value", "7").Output("Out");
  REQUIRE_OK(list.Run());
  CHECK(list.CompiledDims("Out") == Dims{4, -1, 3});
  list.ExpectOutput("Out", FullTensor<int64_t>({4, 2, 3}, 7));
}

// PaddlePaddle's LSTM/GRU programs size the initial state by the batch: fill_constant with a
// ShapeTensorList of 0-D int32 tensors (one from shape + slice) and `shape` [4, -1, 24].
TEST_CASE("fill_constant's shape tensors: 0-D and [1] entries, int32 and int64, zero sizes, precedence") {
  OpTest list("fill_constant");
  list.Inputs("ShapeTensorList",
              {MakeTensor<int32_t>({}, {4}), MakeTensor<int32_t>({}, {2}), MakeTensor<int32_t>({}, {3})})
      .Attr("shape", std::vector<int64_t>{4, -1, 3})
      .Attr("value", 1.5f)
      .Output("Out");
  REQUIRE_OK(list.Run());
  CHECK(list.CompiledDims("Out") == Dims{4, -1, 3});  // the attribute's known sizes, -1 for the rest
  list.ExpectOutput("Out", MakeTensor<float>({4, 2, 3}, std::vector<float>(24, 1.5f)), {0, 0});

  OpTest one_elem("fill_constant");  // [1]-shaped int64 entries, no `shape`: nothing known until run time
  one_elem.Inputs("ShapeTensorList", {MakeTensor<int64_t>({1}, {2}), MakeTensor<int64_t>({1}, {1})})
      .Attr("dtype", 3)
      .Attr("str_value", "7")
      .Output("Out");
  REQUIRE_OK(one_elem.Run());
  CHECK(one_elem.CompiledDims("Out") == Dims{-1, -1});
  one_elem.ExpectOutput("Out", MakeTensor<int64_t>({2, 1}, {7, 7}), {0, 0});

  for (bool wide : {false, true}) {
    OpTest t("fill_constant");
    t.Input("ShapeTensor", wide ? MakeTensor<int64_t>({3}, {2, 0, 5}) : MakeTensor<int32_t>({3}, {2, 1, 5}))
        .Attr("shape", std::vector<int64_t>{9})  // overridden by the tensor
        .Output("Out");
    REQUIRE_OK(t.Run());
    CHECK(t.CompiledDims("Out") == Dims{-1, -1, -1});
    CHECK(t.Out("Out").dims() == (wide ? Dims{2, 0, 5} : Dims{2, 1, 5}));
  }

  OpTest both("fill_constant");  // ShapeTensor wins over ShapeTensorList, as in PaddlePaddle
  both.Input("ShapeTensor", MakeTensor<int32_t>({2}, {1, 2}))
      .Inputs("ShapeTensorList", {MakeTensor<int32_t>({}, {5})})
      .Output("Out");
  REQUIRE_OK(both.Run());
  CHECK(both.CompiledDims("Out") == Dims{-1, -1});
  CHECK(both.Out("Out").dims() == Dims{1, 2});
}

TEST_CASE("fill_constant errors") {
  OpTest neg("fill_constant");
  neg.Attr("shape", std::vector<int64_t>{2, -1}).Output("Out");
  CHECK(CompileError(neg) ==
        "shape [2, -1] has negative dimension -1 at index 1: fill_constant needs a fully known shape");

  OpTest tensor_shape("fill_constant");
  tensor_shape.Input("ShapeTensor", MakeTensor<int32_t>({2, 1}, {2, 3})).Output("Out");
  CHECK(CompileError(tensor_shape) == "ShapeTensor has shape [2, 1] but must be 1-D");
  OpTest negative("fill_constant");
  negative.Input("ShapeTensor", MakeTensor<int32_t>({2}, {2, -3})).Output("Out");
  Status st = negative.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "the shape tensors give [2, -3], with the negative size -3 at index 1");
  OpTest float_shape("fill_constant");
  float_shape.Input("ShapeTensor", MakeTensor<float>({2}, {2, 3})).Output("Out");
  CHECK(CompileError(float_shape) == "ShapeTensor 'ShapeTensor' has dtype float32; a shape tensor is int32 or int64");
  OpTest wide_entry("fill_constant");
  wide_entry.Inputs("ShapeTensorList", {MakeTensor<int64_t>({2}, {2, 3})}).Output("Out");
  CHECK(CompileError(wide_entry) ==
        "ShapeTensorList 'ShapeTensorList' has shape [2]; expected one element ([] or [1])");
  OpTest tensor_value("fill_constant");
  tensor_value.Input("ValueTensor", MakeTensor<float>({1}, {2})).Output("Out");
  CHECK(CompileError(tensor_value) ==
        "input ValueTensor (bound to 'ValueTensor') is not supported yet: give `value` as an attribute instead");

  OpTest text("fill_constant");
  text.Attr("str_value", "1.5x").Output("Out");
  CHECK(CompileError(text) == "str_value '1.5x' is not a number");

  OpTest overflow("fill_constant");
  overflow.Attr("dtype", 2).Attr("str_value", "3000000000").Output("Out");
  CHECK(CompileError(overflow) == "value 3000000000 does not fit in dtype int32 (2)");
  OpTest nan_int("fill_constant");
  nan_int.Attr("dtype", 3).Attr("str_value", "nan").Output("Out");
  CHECK(CompileError(nan_int) == "value nan does not fit in dtype int64 (3)");

  OpTest fp16("fill_constant");
  fp16.Attr("dtype", 4).Output("Out");
  CHECK(CompileError(fp16) == "attribute 'dtype' value 4 is not allowed: expected one of 0, 1, 2, 3, 5, 6, 20, 21");
}

TEST_CASE("fill_zeros_like zeroes every dtype and keeps an unknown batch") {
  for (int dtype : kDTypeNumbers) {
    CAPTURE(dtype);
    DType t = *DTypeFromProto(dtype);
    Tensor x = RandomTensor(t, {5, 513}, 3, 1, 9);
    OpTest op("fill_zeros_like");
    op.Input("X", x).CompileDims("X", {-1, 513}).Output("Out");
    REQUIRE_OK(op.Run());
    CHECK(op.CompiledDims("Out") == Dims{-1, 513});
    op.ExpectOutput("Out", Cast(FullTensor<double>({5, 513}, 0), t), {0, 0});
  }
  const ops::OpInfo* info = ops::GlobalOpRegistry().Find("fill_zeros_like");
  CHECK(info->no_gradient());
}

TEST_CASE("assign copies every dtype") {
  for (int dtype : kDTypeNumbers) {
    CAPTURE(dtype);
    Tensor x = RandomTensor(*DTypeFromProto(dtype), {7, 513}, 4, -50, 50);
    OpTest t("assign");
    t.Input("X", x).CompileDims("X", {-1, 513}).Output("Out");
    REQUIRE_OK(t.Run());
    CHECK(t.CompiledDims("Out") == Dims{-1, 513});
    t.ExpectOutput("Out", x, {0, 0});
  }
}

TEST_CASE("assign gradient is an assign of Out@GRAD") {
  ops::pb::OpDesc fwd;
  fwd.set_type("assign");
  ops::AddInput(fwd, "X", {"x"});
  ops::AddOutput(fwd, "Out", {"y"});
  *fwd.add_attrs() = ops::MakeAttr("op_namescope", std::string("/blk/"));
  auto ops = MakeGradOps(fwd);
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].type() == "assign");
  CHECK(SlotArgs(ops[0], "X") == std::vector<std::string>{"y@GRAD"});
  CHECK(SlotArgs(ops[0], "Out", false) == std::vector<std::string>{"x@GRAD"});
  CHECK(MakeGradOps(fwd, {"x"}).empty());

  // Tolerance: assign is the identity, so float64 central differences agree to rounding.
  OpTest t("assign");
  t.Input("X", RandomTensor(DType::kFloat32, {3, 5}, 5)).Output("Out");
  t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-8}});
}

TEST_CASE("cast converts between dtypes with static_cast semantics") {
  Tensor xf = MakeTensor<float>({2, 4}, {-2.7f, -0.5f, 0.f, 0.5f, 2.7f, 100.25f, -0.f, 7.f});
  struct Case {
    int out;
    std::vector<double> expect;
  };
  const Case cases[] = {
      {2, {-2, 0, 0, 0, 2, 100, 0, 7}},                // float -> int32 truncates toward zero
      {3, {-2, 0, 0, 0, 2, 100, 0, 7}},                // float -> int64
      {0, {1, 1, 0, 1, 1, 1, 0, 1}},                   // float -> bool: nonzero is true
      {6, {-2.7f, -0.5, 0, 0.5, 2.7f, 100.25, 0, 7}},  // float -> double is exact
      {5, {-2.7f, -0.5, 0, 0.5, 2.7f, 100.25, 0, 7}},  // same dtype: a copy
  };
  for (const Case& c : cases) {
    CAPTURE(c.out);
    OpTest t("cast");
    t.Input("X", xf).Attr("out_dtype", c.out).Output("Out");
    REQUIRE_OK(t.Run());
    DType want = *DTypeFromProto(c.out);
    CHECK(t.Out("Out").dtype() == want);
    t.ExpectOutput("Out", Cast(MakeTensor<double>({2, 4}, c.expect), want), {0, 0});
  }
  // Integer and bool sources.
  OpTest from_int("cast");
  from_int.Input("X", MakeTensor<int64_t>({3}, {-(int64_t{1} << 40), 3, 0})).Attr("in_dtype", 3).Attr("out_dtype", 6);
  from_int.Output("Out");
  REQUIRE_OK(from_int.Run());
  from_int.ExpectOutput("Out", MakeTensor<double>({3}, {-1099511627776.0, 3, 0}), {0, 0});
  OpTest from_bool("cast");
  from_bool.Input("X", MakeTensor<bool>({3}, {true, false, true})).Attr("in_dtype", 0).Output("Out");
  REQUIRE_OK(from_bool.Run());
  from_bool.ExpectOutput("Out", MakeTensor<float>({3}, {1, 0, 1}), {0, 0});
  OpTest from_u8("cast");
  from_u8.Input("X", MakeTensor<uint8_t>({2}, {255, 1})).Attr("in_dtype", 20).Attr("out_dtype", 3).Output("Out");
  REQUIRE_OK(from_u8.Run());
  CHECK(ToVector<int64_t>(from_u8.Out("Out")) == std::vector<int64_t>{255, 1});
  // A large input runs split across threads.
  Tensor big = RandomTensor(DType::kFloat64, {3, 40001}, 6, -1000, 1000);
  OpTest b("cast");
  b.Input("X", big).Attr("in_dtype", 6).Attr("out_dtype", 5).CompileDims("X", {-1, 40001}).Output("Out");
  REQUIRE_OK(b.Run());
  CHECK(b.CompiledDims("Out") == Dims{-1, 40001});
  b.ExpectOutput("Out", Cast(big, DType::kFloat32), {0, 0});
}

TEST_CASE("cast rejects an in_dtype that is not X's dtype") {
  OpTest t("cast");
  t.Input("X", MakeTensor<double>({2}, {1, 2})).Attr("out_dtype", 3).Output("Out");
  CHECK(CompileError(t) == "X has dtype float64 but in_dtype is float32 (5)");
}

TEST_CASE("cast gradient casts Out@GRAD back, only between floating types") {
  ops::pb::OpDesc fwd;
  fwd.set_type("cast");
  ops::AddInput(fwd, "X", {"x"});
  ops::AddOutput(fwd, "Out", {"y"});
  *fwd.add_attrs() = ops::MakeAttr("in_dtype", 5);
  *fwd.add_attrs() = ops::MakeAttr("out_dtype", 6);
  auto ops = MakeGradOps(fwd);
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].type() == "cast");
  CHECK(SlotArgs(ops[0], "X") == std::vector<std::string>{"y@GRAD"});
  CHECK(SlotArgs(ops[0], "Out", false) == std::vector<std::string>{"x@GRAD"});
  ops::AttrReader ga(ops[0], ops::GlobalOpRegistry().Find("cast"));
  CHECK(ga.Get<int>("in_dtype") == 6);
  CHECK(ga.Get<int>("out_dtype") == 5);
  // float -> int64: no gradient flows.
  *fwd.mutable_attrs(1) = ops::MakeAttr("out_dtype", 3);
  CHECK(MakeGradOps(fwd).empty());

  // The dtypes are the point here, so no float64 promotion. float32 -> float64 is exact and linear:
  // central differences with eps 1e-2 agree to float32 rounding of the step.
  OpTest up("cast");
  up.Input("X", RandomTensor(DType::kFloat32, {3, 5}, 7)).Attr("out_dtype", 6).Output("Out");
  up.CheckGrad({.inputs = {"X"}, .eps = 1e-2, .tol = {1e-6, 1e-6}, .prefer_float64 = false});
  // float64 -> float32 rounds the output: the loss carries ~1e-7 relative noise over a 2e-2 step.
  OpTest down("cast");
  down.Input("X", Cast(RandomTensor(DType::kFloat32, {3, 5}, 8), DType::kFloat64)).Attr("in_dtype", 6);
  down.Output("Out");
  down.CheckGrad({.inputs = {"X"}, .eps = 1e-2, .tol = {1e-4, 1e-4}, .prefer_float64 = false});
}

}  // namespace
}  // namespace paddlec::testing
