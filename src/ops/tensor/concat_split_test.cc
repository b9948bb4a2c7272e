// concat, concat_grad, split and stack against naive references, with shape inference, errors and gradients.
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

/// Naive concat along `axis` in double, converted back to the inputs' dtype.
Tensor RefConcat(const std::vector<Tensor>& xs, int axis) {
  Dims d = xs[0].dims();
  int r = d.rank();
  axis = axis < 0 ? axis + r : axis;
  int64_t outer = d.Product(0, axis), inner = d.Product(axis + 1, r), total = 0;
  for (const auto& x : xs) total += x.dims()[axis];
  d[axis] = total;
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (const auto& x : xs) {
      std::vector<double> v = ToDoubles(x);
      int64_t row = x.dims()[axis] * inner;
      out.insert(out.end(), v.begin() + o * row, v.begin() + (o + 1) * row);
    }
  return Cast(MakeTensor<double>(d, out), xs[0].dtype());
}

/// Naive slice [begin, end) along `axis`.
Tensor RefSlice(const Tensor& x, int axis, int64_t begin, int64_t end) {
  Dims d = x.dims();
  int r = d.rank();
  axis = axis < 0 ? axis + r : axis;
  int64_t outer = d.Product(0, axis), inner = d.Product(axis + 1, r), n = d[axis];
  std::vector<double> v = ToDoubles(x), out;
  for (int64_t o = 0; o < outer; ++o)
    out.insert(out.end(), v.begin() + (o * n + begin) * inner, v.begin() + (o * n + end) * inner);
  d[axis] = end - begin;
  return Cast(MakeTensor<double>(d, out), x.dtype());
}

// ---- concat ---------------------------------------------------------------------------------

TEST_CASE("concat joins along any axis, odd sizes, any dtype") {
  struct Case {
    std::vector<Dims> dims;
    int axis;
  };
  const Case cases[] = {
      {{{2, 3, 5}, {2, 4, 5}, {2, 1, 5}}, 1},
      {{{2, 3, 5}, {7, 3, 5}}, 0},
      {{{2, 3, 5}, {2, 3, 1}, {2, 3, 513}}, -1},
      {{{1}, {7}}, 0},
      {{{4, 2}}, 1},  // a single input is a copy
  };
  for (const Case& c : cases)
    for (DType t : {DType::kFloat32, DType::kInt64, DType::kBool}) {
      CAPTURE(c.axis);
      CAPTURE(DTypeName(t));
      std::vector<Tensor> xs;
      for (size_t i = 0; i < c.dims.size(); ++i) xs.push_back(RandomTensor(t, c.dims[i], 20 + i, -9, 9));
      OpTest op("concat");
      op.Inputs("X", xs).Output("Out");
      if (c.axis != 0) op.Attr("axis", c.axis);
      REQUIRE_OK(op.Run());
      op.ExpectOutput("Out", RefConcat(xs, c.axis), {0, 0});
    }
}

TEST_CASE("concat shape inference with unknown dims") {
  struct Case {
    Dims a, b, run_a, run_b;
    int axis;
    Dims expect;
  };
  const Case cases[] = {
      {{-1, 3}, {-1, 4}, {2, 3}, {2, 4}, 1, {-1, 7}},  // the batch stays unknown, the axis sums
      {{-1, 3}, {2, 3}, {5, 3}, {2, 3}, 0, {-1, 3}},   // unknown + known along the axis is unknown
      {{2, -1}, {2, 3}, {2, 3}, {2, 3}, 0, {4, 3}},    // the other input pins the unknown dim
  };
  for (const Case& c : cases) {
    CAPTURE(c.a.ToString());
    OpTest op("concat");
    op.Inputs("X", {RandomTensor(DType::kFloat32, c.run_a, 1), RandomTensor(DType::kFloat32, c.run_b, 2)});
    op.CompileDims("X", c.a, 0).CompileDims("X", c.b, 1).Attr("axis", c.axis).Output("Out");
    REQUIRE_OK(op.Run());
    CHECK(op.CompiledDims("Out") == c.expect);
  }
}

TEST_CASE("concat errors") {
  auto f32 = [](const Dims& d) { return RandomTensor(DType::kFloat32, d, 3); };
  struct Case {
    std::vector<Tensor> xs;
    int axis;
    const char* message;
  };
  const Case cases[] = {
      {{f32({2, 3}), f32({2})}, 0, "X[1] has shape [2] but X[0] has shape [2, 3]: all inputs must have the same rank"},
      {{f32({2, 3}), f32({3, 4})},
       1,
       "X[1] has shape [3, 4] but X[0] has shape [2, 3]: inputs must match in every dimension except axis 1"},
      {{f32({2, 3}), f32({2, 3})}, 2, "axis 2 is out of range for X[0] of shape [2, 3] (rank 2)"},
      {{f32({2, 3}), RandomTensor(DType::kFloat64, {2, 3}, 4)}, 0, "X[1] has dtype float64 but X[0] has dtype float32"},
      {{MakeTensor<float>({}, {1.f}), MakeTensor<float>({}, {2.f})},
       0,
       "concat needs inputs of rank >= 1, but X[0] has shape []"},
  };
  for (const Case& c : cases) {
    OpTest op("concat");
    op.Inputs("X", c.xs).Attr("axis", c.axis).Output("Out");
    CHECK(CompileError(op) == c.message);
  }
  OpTest tensor_axis("concat");
  tensor_axis.Inputs("X", {f32({2, 3}), f32({2, 3})}).Input("AxisTensor", MakeTensor<int32_t>({1}, {1}));
  tensor_axis.Output("Out");
  CHECK(CompileError(tensor_axis) ==
        "input AxisTensor (bound to 'AxisTensor') is not supported yet: give `axis` as an attribute instead");
}

TEST_CASE("concat gradient slices Out@GRAD, skipping @EMPTY@ entries") {
  OpTest op("concat");
  op.Inputs("X", {RandomTensor(DType::kFloat32, {2, 3, 2}, 5), RandomTensor(DType::kFloat32, {2, 1, 2}, 6),
                  RandomTensor(DType::kFloat32, {2, 4, 2}, 7)});
  op.Attr("axis", -2).Output("Out");
  op.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-8}});

  // The maker marks no-grad inputs @EMPTY@; the kernel skips them but keeps their place.
  ops::pb::OpDesc fwd;
  fwd.set_type("concat");
  ops::AddInput(fwd, "X", {"a", "b", "c"});
  ops::AddOutput(fwd, "Out", {"y"});
  *fwd.add_attrs() = ops::MakeAttr("axis", 1);
  auto grads = MakeGradOps(fwd, {"b"});
  REQUIRE(grads.size() == 1);
  CHECK(grads[0].type() == "concat_grad");
  CHECK(SlotArgs(grads[0], "X@GRAD", false) == std::vector<std::string>{"a@GRAD", "@EMPTY@", "c@GRAD"});

  auto module = CompileText(R"txt(
main_program { blocks { idx: 0 parent_idx: -1
  vars { name: "a" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP64 dims: 2 dims: 3 } } } }
  vars { name: "b" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP64 dims: 2 dims: 2 } } } }
  vars { name: "c" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP64 dims: 2 dims: 4 } } } }
  vars { name: "g" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP64 dims: 2 dims: 9 } } } }
  ops { type: "concat_grad"
        inputs { parameter: "X" arguments: "a" arguments: "b" arguments: "c" }
        inputs { parameter: "Out@GRAD" arguments: "g" }
        outputs { parameter: "X@GRAD" arguments: "a@GRAD" arguments: "@EMPTY@" arguments: "c@GRAD" }
        attrs { name: "axis" type: INT i: 1 } }
} })txt");
  REQUIRE_OK(module.status());
  Tensor g = RandomTensor(DType::kFloat64, {2, 9}, 8);
  auto out = RunModule(**module,
                       {{"a", RandomTensor(DType::kFloat64, {2, 3}, 9)},
                        {"b", RandomTensor(DType::kFloat64, {2, 2}, 9)},
                        {"c", RandomTensor(DType::kFloat64, {2, 4}, 9)},
                        {"g", g}},
                       {"a@GRAD", "c@GRAD"});
  REQUIRE_OK(out.status());
  ExpectClose(out->at("a@GRAD"), RefSlice(g, 1, 0, 3), {0, 0}, "a@GRAD");
  ExpectClose(out->at("c@GRAD"), RefSlice(g, 1, 5, 9), {0, 0}, "c@GRAD");
}

// ---- split ----------------------------------------------------------------------------------

TEST_CASE("split by num and by sections") {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kUInt8}) {
    CAPTURE(DTypeName(t));
    Tensor x = RandomTensor(t, {2, 6, 5}, 10, 0, 100);
    OpTest by_num("split");
    by_num.Input("X", x).Attr("axis", 1).Attr("num", 3).Output("Out", 3);
    REQUIRE_OK(by_num.Run());
    for (int i = 0; i < 3; ++i) by_num.ExpectOutput("Out", RefSlice(x, 1, 2 * i, 2 * i + 2), {0, 0}, i);

    Tensor y = RandomTensor(t, {7, 3}, 11, 0, 100);
    OpTest by_sections("split");
    by_sections.Input("X", y).Attr("sections", std::vector<int>{2, -1, 1}).Output("Out", 3);
    REQUIRE_OK(by_sections.Run());
    by_sections.ExpectOutput("Out", RefSlice(y, 0, 0, 2), {0, 0}, 0);
    by_sections.ExpectOutput("Out", RefSlice(y, 0, 2, 6), {0, 0}, 1);
    by_sections.ExpectOutput("Out", RefSlice(y, 0, 6, 7), {0, 0}, 2);

    OpTest last_axis("split");
    last_axis.Input("X", x).Attr("axis", -1).Attr("sections", std::vector<int>{1, 0, 4}).Output("Out", 3);
    REQUIRE_OK(last_axis.Run());
    last_axis.ExpectOutput("Out", RefSlice(x, 2, 0, 1), {0, 0}, 0);
    CHECK(last_axis.Out("Out", 1).dims() == Dims{2, 6, 0});
    last_axis.ExpectOutput("Out", RefSlice(x, 2, 1, 5), {0, 0}, 2);
  }
}

TEST_CASE("split shape inference with unknown dims") {
  struct Case {
    Dims x;
    int axis, num;
    std::vector<int> sections;
    std::vector<Dims> expect;
  };
  const Case cases[] = {
      {{-1, 6}, 1, 2, {}, {{-1, 3}, {-1, 3}}},     {{-1, 6}, 0, 2, {}, {{-1, 6}, {-1, 6}}},
      {{-1, 6}, 0, 0, {2, -1}, {{2, 6}, {-1, 6}}},  // the -1 section of an unknown dim stays unknown
      {{-1, 6}, 0, 0, {2, 4}, {{2, 6}, {4, 6}}},   {{-1, 6}, 1, 0, {-1, 4}, {{-1, 2}, {-1, 4}}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.x.ToString());
    OpTest op("split");
    op.Input("X", RandomTensor(DType::kFloat32, {6, 6}, 12)).CompileDims("X", c.x).Output("Out", 2);
    if (c.axis != 0) op.Attr("axis", c.axis);
    if (c.num != 0) op.Attr("num", c.num);
    if (!c.sections.empty()) op.Attr("sections", c.sections);
    REQUIRE_OK(op.Run());
    CHECK(op.CompiledDims("Out", 0) == c.expect[0]);
    CHECK(op.CompiledDims("Out", 1) == c.expect[1]);
  }
}

TEST_CASE("split errors") {
  struct Case {
    int axis, num;
    std::vector<int> sections;
    int outputs;
    const char* message;
  };
  const Case cases[] = {
      {0, 2, {1, 1}, 2, "num = 2 and sections = [1, 1] are both set: give exactly one"},
      {0, 0, {}, 2, "neither num nor sections is set: give exactly one"},
      {0, 3, {}, 2, "num = 3 but Out has 2 variables"},
      {0, 2, {}, 2, "X has shape [5, 4]: dimension 0 (5) is not divisible by num = 2"},
      {0, 0, {1, 2, 2}, 2, "sections [1, 2, 2] has 3 entries but Out has 2 variables"},
      {0, 0, {-1, -1}, 2, "sections [-1, -1] has more than one -1"},
      {0, 0, {2, -2}, 2, "sections [2, -2] has invalid entry -2 at index 1: entries must be >= 0, or -1 (infer)"},
      {0, 0, {4, 3, -1}, 3, "sections [4, 3, -1] sum to 7, more than dimension 0 (5) of X of shape [5, 4]"},
      {0, 0, {2, 2}, 2, "sections [2, 2] sum to 4 but dimension 0 of X of shape [5, 4] is 5"},
      {2, 1, {}, 1, "axis 2 is out of range for X of shape [5, 4] (rank 2)"},
  };
  for (const Case& c : cases) {
    OpTest op("split");
    op.Input("X", RandomTensor(DType::kFloat32, {5, 4}, 13)).Output("Out", c.outputs);
    if (c.axis != 0) op.Attr("axis", c.axis);
    if (c.num != 0) op.Attr("num", c.num);
    if (!c.sections.empty()) op.Attr("sections", c.sections);
    CHECK(CompileError(op) == c.message);
  }
  OpTest tensors("split");
  tensors.Input("X", RandomTensor(DType::kFloat32, {4, 4}, 14)).Attr("num", 2).Output("Out", 2);
  tensors.Inputs("SectionsTensorList", {MakeTensor<int32_t>({1}, {2}), MakeTensor<int32_t>({1}, {2})});
  CHECK(CompileError(tensors) ==
        "input SectionsTensorList (bound to 'SectionsTensorList_0') is not supported yet: "
        "give `sections` as an attribute instead");
}

TEST_CASE("split gradient is a concat of the outputs' gradients") {
  ops::pb::OpDesc fwd;
  fwd.set_type("split");
  ops::AddInput(fwd, "X", {"x"});
  ops::AddOutput(fwd, "Out", {"p", "q"});
  *fwd.add_attrs() = ops::MakeAttr("axis", 1);
  *fwd.add_attrs() = ops::MakeAttr("num", 2);
  auto grads = MakeGradOps(fwd);
  REQUIRE(grads.size() == 1);
  CHECK(grads[0].type() == "concat");
  CHECK(SlotArgs(grads[0], "X") == std::vector<std::string>{"p@GRAD", "q@GRAD"});
  CHECK(SlotArgs(grads[0], "Out", false) == std::vector<std::string>{"x@GRAD"});
  REQUIRE(grads[0].attrs_size() == 1);  // num and sections are split's, not concat's
  CHECK(grads[0].attrs(0).name() == "axis");
  CHECK(grads[0].attrs(0).i() == 1);
  CHECK(MakeGradOps(fwd, {"x"}).empty());

  // The harness weights Out[0] and feeds zeros as Out[1]'s gradient, so placement is checked too.
  OpTest op("split");
  op.Input("X", RandomTensor(DType::kFloat32, {3, 5, 2}, 15)).Attr("axis", 1).Attr("sections", std::vector<int>{2, 3});
  op.Output("Out", 2);
  op.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-8}});
}

TEST_CASE("concat and split of more parts than one GPU launch takes") {
  // 50 parts of odd byte widths (the GPU moves at most 48 per launch, in the widest unit that fits).
  for (DType t : {DType::kFloat32, DType::kInt8, DType::kInt16}) {
    CAPTURE(DTypeName(t));
    std::vector<Tensor> xs;
    for (int i = 0; i < 50; ++i) xs.push_back(RandomTensor(t, {3, 1 + i % 4, 3}, 200 + i, -9, 9));
    OpTest c("concat");
    c.Inputs("X", xs).Attr("axis", 1).Output("Out");
    REQUIRE_OK(c.Run());
    const Tensor whole = RefConcat(xs, 1);
    c.ExpectOutput("Out", whole, {0, 0});

    std::vector<int> sections;
    for (const Tensor& x : xs) sections.push_back(static_cast<int>(x.dims()[1]));
    OpTest s("split");
    s.Input("X", whole).Attr("axis", 1).Attr("sections", sections).Output("Out", 50);
    REQUIRE_OK(s.Run());
    for (int i = 0; i < 50; ++i) s.ExpectOutput("Out", xs[i], {0, 0}, i);
  }
}

TEST_CASE("concat and split give the same bits on 1 and 2 threads") {
  // Row-parallel (axis 1: 300 rows of 4 KB) and byte-parallel (axis 0: one 1.2 MB row) paths.
  for (int axis : {0, 1}) {
    CAPTURE(axis);
    Tensor a = RandomTensor(DType::kFloat32, {300, 1000}, 16), b = RandomTensor(DType::kFloat32, {300, 7}, 17);
    if (axis == 0) b = RandomTensor(DType::kFloat32, {5, 1000}, 17);
    auto module =
        CompileText(fmt::format(R"txt(
main_program {{ blocks {{ idx: 0 parent_idx: -1
  vars {{ name: "a" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: FP32 dims: {} dims: {} }} }} }} }}
  vars {{ name: "b" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: FP32 dims: {} dims: {} }} }} }} }}
  ops {{ type: "concat" inputs {{ parameter: "X" arguments: "a" arguments: "b" }}
         outputs {{ parameter: "Out" arguments: "y" }} attrs {{ name: "axis" type: INT i: {} }} }}
  ops {{ type: "split" inputs {{ parameter: "X" arguments: "y" }}
         outputs {{ parameter: "Out" arguments: "a2" arguments: "b2" }}
         attrs {{ name: "axis" type: INT i: {} }} attrs {{ name: "sections" type: INTS ints: {} ints: -1 }} }}
}} }})txt",
                                a.dims()[0], a.dims()[1], b.dims()[0], b.dims()[1], axis, axis, a.dims()[axis]));
    REQUIRE_OK(module.status());
    auto two = RunModule(**module, {{"a", a}, {"b", b}}, {"y", "a2", "b2"}, {.threads = 2});
    REQUIRE_OK(two.status());
    ExpectClose(two->at("y"), RefConcat({a, b}, axis), {0, 0}, "concat on 2 threads");
    ExpectClose(two->at("a2"), a, {0, 0}, "split part 0 on 2 threads");
    ExpectClose(two->at("b2"), b, {0, 0}, "split part 1 on 2 threads");
  }
}

}  // namespace
}  // namespace paddlec::testing

namespace paddlec::testing {
namespace {

// ---- stack --------------------------------------------------------------------------------------

/// Naive stack: Y[..., i, ...] = X[i] with the new axis at `axis`.
Tensor RefStack(const std::vector<Tensor>& xs, int axis) {
  const Dims d = xs[0].dims();
  const int64_t outer = d.Product(0, axis), inner = d.Product(axis, d.rank());
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor& x : xs) {
      std::vector<double> v = ToDoubles(x);
      out.insert(out.end(), v.begin() + o * inner, v.begin() + (o + 1) * inner);
    }
  Dims od = d;
  od.insert(axis, static_cast<int64_t>(xs.size()));
  return Cast(MakeTensor<double>(od, out), xs[0].dtype());
}

TEST_CASE("stack inserts the new axis anywhere, for every dtype") {
  for (DType t : {DType::kFloat32, DType::kInt64, DType::kBool})
    for (int axis : {0, 1, 2, -1, -3}) {
      CAPTURE(DTypeName(t));
      CAPTURE(axis);
      std::vector<Tensor> xs;
      for (int i = 0; i < 3; ++i) xs.push_back(RandomTensor(t, {2, 5}, 10 + i, -9, 9));
      OpTest op("stack");
      op.Inputs("X", xs).Output("Y");
      if (axis != 0) op.Attr("axis", axis);
      REQUIRE_OK(op.Run());
      op.ExpectOutput("Y", RefStack(xs, axis < 0 ? axis + 3 : axis), {0, 0});
    }
  OpTest unknown("stack");
  unknown.Inputs("X", {RandomTensor(DType::kFloat32, {4, 3}, 1), RandomTensor(DType::kFloat32, {4, 3}, 2)})
      .CompileDims("X", {-1, 3}, 0)
      .Attr("axis", 1)
      .Output("Y");
  REQUIRE_OK(unknown.Run());
  CHECK(unknown.CompiledDims("Y") == Dims{4, 2, 3});  // X[1]'s known batch fills X[0]'s unknown one
}

TEST_CASE("stack rejects mismatched inputs and axes") {
  OpTest shapes("stack");
  shapes.Inputs("X", {RandomTensor(DType::kFloat32, {2, 3}, 1), RandomTensor(DType::kFloat32, {3, 2}, 2)}).Output("Y");
  CHECK(CompileError(shapes) == "X[1] has shape [3, 2] but X[0] has shape [2, 3]: stack needs inputs of one shape");
  OpTest axis("stack");
  axis.Inputs("X", {RandomTensor(DType::kFloat32, {2, 3}, 1)}).Attr("axis", 3).Output("Y");
  CHECK(CompileError(axis) == "axis 3 is out of range for stacking X[0] of shape [2, 3]: it must be in [-3, 2]");
}

TEST_CASE("stack gradient unstacks Y@GRAD") {
  for (int axis : {0, 1, -1}) {
    CAPTURE(axis);
    OpTest op("stack");
    op.Inputs("X", {RandomTensor(DType::kFloat32, {2, 3}, 1), RandomTensor(DType::kFloat32, {2, 3}, 2),
                    RandomTensor(DType::kFloat32, {2, 3}, 3)})
        .Attr("axis", axis)
        .Output("Y");
    op.CheckGrad({.inputs = {"X"}, .output = "Y"});
  }
}

}  // namespace
}  // namespace paddlec::testing

namespace paddlec::testing {
namespace {

TEST_CASE("concat_grad and stack_grad reject an Out@GRAD that does not fit the inputs") {
  // The kernels cut Out@GRAD into the inputs' slices: a wrong shape must be an error, not a bad copy.
  OpTest concat("concat_grad");
  concat.Inputs("X", {RandomTensor(DType::kFloat32, {2, 3}, 1), RandomTensor(DType::kFloat32, {2, 4}, 2)})
      .Input("Out@GRAD", RandomTensor(DType::kFloat32, {2, 9}, 3))
      .Attr("axis", 1)
      .Output("X@GRAD", 2);
  CHECK(CompileError(concat) == "Out@GRAD has shape [2, 9] with 9 entries along axis 1, but the X hold 7");
  OpTest inner("concat_grad");
  inner.Inputs("X", {RandomTensor(DType::kFloat32, {2, 3}, 1), RandomTensor(DType::kFloat32, {2, 4}, 2)})
      .Input("Out@GRAD", RandomTensor(DType::kFloat32, {3, 7}, 3))
      .Attr("axis", 1)
      .Output("X@GRAD", 2);
  CHECK(CompileError(inner) ==
        "Out@GRAD has shape [3, 7] but X[0] has shape [2, 3]: they must match except along axis 1");
  OpTest ok("concat_grad");
  ok.Inputs("X", {RandomTensor(DType::kFloat32, {2, 3}, 1), RandomTensor(DType::kFloat32, {2, 4}, 2)})
      .Input("Out@GRAD", RandomTensor(DType::kFloat32, {2, 7}, 3))
      .Attr("axis", 1)
      .Output("X@GRAD", 2);
  REQUIRE_OK(ok.Run());
  CHECK(ok.Out("X@GRAD", 1).dims() == Dims{2, 4});
}

}  // namespace
}  // namespace paddlec::testing
