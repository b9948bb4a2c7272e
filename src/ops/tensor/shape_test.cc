// reshape2, flatten_contiguous_range, squeeze2, unsqueeze2, shape and transpose2: values against naive
// references, shape inference with unknown dims, exact error messages, and gradient checks.
#include <algorithm>
#include <numeric>

#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

/// The same elements with other dims (what reshape and flatten must produce).
Tensor WithDims(const Tensor& x, const Dims& d) {
  Tensor y = Cast(x, x.dtype());
  y.set_dims(d);
  return y;
}

/// Naive transpose: output index o maps to input index with in[axis[i]] = o[i].
Tensor RefTranspose(const Tensor& x, std::vector<int> axis) {
  const Dims& d = x.dims();
  int r = d.rank();
  for (int& a : axis) a = a < 0 ? a + r : a;
  Dims od;
  for (int a : axis) od.push_back(d[a]);
  std::vector<double> v = ToDoubles(x), out(v.size());
  std::vector<int64_t> oi(r, 0), ii(r, 0);
  for (int64_t flat = 0; flat < static_cast<int64_t>(v.size()); ++flat) {
    int64_t q = flat;
    for (int i = r - 1; i >= 0; --i) {
      oi[i] = q % od[i];
      q /= od[i];
    }
    for (int i = 0; i < r; ++i) ii[axis[i]] = oi[i];
    int64_t src = 0;
    for (int i = 0; i < r; ++i) src = src * d[i] + ii[i];
    out[flat] = v[src];
  }
  return Cast(MakeTensor<double>(od, out), x.dtype());
}

// ---- reshape2 -------------------------------------------------------------------------------

TEST_CASE("reshape2 keeps element order and records XShape") {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kBool}) {
    CAPTURE(DTypeName(t));
    Tensor x = RandomTensor(t, {2, 3, 4}, 1, -5, 5);
    OpTest op("reshape2");
    op.Input("X", x).Attr("shape", std::vector<int>{4, -1}).Output("Out").Output("XShape");
    REQUIRE_OK(op.Run());
    op.ExpectOutput("Out", WithDims(x, {4, 6}), {0, 0});
    CHECK(op.Out("XShape").dims() == Dims{0, 2, 3, 4});
    CHECK(op.Out("XShape").dtype() == t);
  }
  // Large enough that the copy is split across threads in multi-threaded plans.
  Tensor big = RandomTensor(DType::kFloat32, {7, 513, 37}, 2);
  OpTest op("reshape2");
  op.Input("X", big).Attr("shape", std::vector<int>{0, -1}).Output("Out");
  REQUIRE_OK(op.Run());
  op.ExpectOutput("Out", WithDims(big, {7, 513 * 37}), {0, 0});
}

TEST_CASE("reshape2 propagates an unknown batch through 0 and -1") {
  struct Case {
    Dims compile;
    std::vector<int> shape;
    Dims expect;
  };
  const Case cases[] = {
      {{-1, 3, 4}, {0, -1}, {-1, 12}},       // the batch is copied, so the -1 is known
      {{-1, 3, 4}, {0, 0, -1}, {-1, 3, 4}},  //
      {{-1, 3, 4}, {0, 3, 2, 2}, {-1, 3, 2, 2}}, {{-1, 3, 4}, {-1, 12}, {-1, 12}},  // the batch lands in the -1
      {{-1, 784}, {-1, 28, 28}, {-1, 28, 28}},   {{-1, 3, 4}, {12, -1}, {12, -1}},  // nothing pins the -1
      {{2, -1, 4}, {0, 0, 2, 2}, {2, -1, 2, 2}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.compile.ToString());
    Dims run = c.compile;
    for (int64_t& v : run) v = v < 0 ? 3 : v;
    OpTest op("reshape2");
    op.Input("X", RandomTensor(DType::kFloat32, run, 3)).CompileDims("X", c.compile).Attr("shape", c.shape);
    op.Output("Out").Output("XShape");
    REQUIRE_OK(op.Run());  // also checks the run-time dims match the compile-time ones
    CHECK(op.CompiledDims("Out") == c.expect);
    Dims xshape{0};
    for (int64_t v : c.compile) xshape.push_back(v);
    CHECK(op.CompiledDims("XShape") == xshape);
  }
}

TEST_CASE("reshape2 shape errors") {
  struct Case {
    Dims x;
    std::vector<int> shape;
    const char* message;
  };
  const Case cases[] = {
      {{2, 3}, {-1, -1}, "shape [-1, -1] has more than one -1: only one dimension can be inferred"},
      {{2, 3},
       {2, -3},
       "shape [2, -3] has invalid entry -3 at index 1: entries must be positive, 0 (copy X's dimension) or -1 (infer)"},
      {{2, 3},
       {0, 0, 0},
       "shape [0, 0, 0] has 0 at index 2, which copies a dimension of X, but X has shape [2, 3] (rank 2)"},
      {{2, 3}, {4, -1}, "cannot reshape X of shape [2, 3] (6 elements) to shape [4, -1]: 6 is not divisible by 4"},
      {{2, 3}, {4, 2}, "cannot reshape X of shape [2, 3] (6 elements) to shape [4, 2] (8 elements)"},
      {{-1, 5},
       {0, 2, -1},
       "cannot reshape X of shape [-1, 5] to shape [0, 2, -1]: the dimensions not copied by 0 hold 5 elements, which "
       "is not divisible by 2"},
      {{-1, 6},
       {0, 4},
       "cannot reshape X of shape [-1, 6] to shape [0, 4]: the dimensions not copied by 0 hold 6 elements but the "
       "shape asks for 4"},
      {{2, 3}, {}, "cannot reshape X of shape [2, 3] (6 elements) to shape [] (1 elements)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    Dims run = c.x;
    for (int64_t& v : run) v = v < 0 ? 2 : v;
    OpTest op("reshape2");
    op.Input("X", RandomTensor(DType::kFloat32, run, 4)).CompileDims("X", c.x).Attr("shape", c.shape);
    op.Output("Out").Output("XShape");
    CHECK(CompileError(op) == c.message);
  }
  OpTest tensor_shape("reshape2");
  tensor_shape.Input("X", RandomTensor(DType::kFloat32, {2, 3}, 5)).Input("Shape", MakeTensor<int32_t>({2}, {3, 2}));
  tensor_shape.Output("Out");
  CHECK(CompileError(tensor_shape) ==
        "input Shape (bound to 'Shape') is not supported yet: give `shape` as an attribute instead");
  // A 1-element tensor may become 0-D.
  OpTest scalar("reshape2");
  scalar.Input("X", MakeTensor<float>({1, 1}, {4.f})).Output("Out");
  REQUIRE_OK(scalar.Run());
  scalar.ExpectOutput("Out", MakeTensor<float>({}, {4.f}), {0, 0});
}

TEST_CASE("reshape2 gradient reshapes Out@GRAD back to XShape's dims") {
  OpTest op("reshape2");
  op.Input("X", RandomTensor(DType::kFloat32, {2, 3, 4}, 6)).Attr("shape", std::vector<int>{4, 0, -1});
  op.Output("Out").Output("XShape");
  // A copy: float64 central differences agree to rounding.
  op.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-8}});

  ops::pb::OpDesc fwd;
  fwd.set_type("reshape2");
  ops::AddInput(fwd, "X", {"x"});
  ops::AddOutput(fwd, "Out", {"y"});
  const ops::OpInfo* info = ops::GlobalOpRegistry().Find("reshape2");
  ops::GradMakerContext ctx(fwd, {}, ops::GlobalOpRegistry());
  Status st = info->grad_maker()(ctx);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "reshape2 has no XShape output, which its gradient needs to recover X's shape: bind XShape");
}

// ---- flatten_contiguous_range ---------------------------------------------------------------

TEST_CASE("flatten_contiguous_range merges the axis range") {
  Tensor x = RandomTensor(DType::kFloat32, {2, 3, 4, 5}, 7);
  struct Case {
    int start, stop;
    Dims expect;
  };
  const Case cases[] = {
      {1, 1, {2, 3, 4, 5}}, {1, 2, {2, 12, 5}}, {0, -1, {120}}, {-2, -1, {2, 3, 20}}, {0, 2, {24, 5}}};
  for (const Case& c : cases) {
    CAPTURE(c.start);
    CAPTURE(c.stop);
    OpTest op("flatten_contiguous_range");
    op.Input("X", x).Output("Out").Output("XShape");
    if (c.start != 1) op.Attr("start_axis", c.start);
    if (c.stop != 1) op.Attr("stop_axis", c.stop);
    REQUIRE_OK(op.Run());
    op.ExpectOutput("Out", WithDims(x, c.expect), {0, 0});
    CHECK(op.Out("XShape").dims() == Dims{0, 2, 3, 4, 5});
  }
  OpTest scalar("flatten_contiguous_range");
  scalar.Input("X", MakeTensor<int64_t>({}, {9})).Attr("start_axis", 0).Attr("stop_axis", -1).Output("Out");
  REQUIRE_OK(scalar.Run());
  scalar.ExpectOutput("Out", MakeTensor<int64_t>({1}, {9}), {0, 0});
}

TEST_CASE("flatten_contiguous_range with an unknown batch, and its errors") {
  OpTest op("flatten_contiguous_range");
  op.Input("X", RandomTensor(DType::kFloat32, {5, 3, 4}, 8)).CompileDims("X", {-1, 3, 4}).Attr("stop_axis", 2);
  op.Output("Out").Output("XShape");
  REQUIRE_OK(op.Run());
  CHECK(op.CompiledDims("Out") == Dims{-1, 12});
  CHECK(op.CompiledDims("XShape") == Dims{0, -1, 3, 4});
  OpTest batch("flatten_contiguous_range");
  batch.Input("X", RandomTensor(DType::kFloat32, {5, 3, 4}, 8)).CompileDims("X", {-1, 3, 4}).Attr("start_axis", 0);
  batch.Output("Out");
  REQUIRE_OK(batch.Run());
  CHECK(batch.CompiledDims("Out") == Dims{-1, 4});

  struct Case {
    int start, stop;
    const char* message;
  };
  const Case cases[] = {{3, 1, "start_axis 3 is out of range for X of shape [2, 3, 4] (rank 3)"},
                        {1, -4, "stop_axis -4 is out of range for X of shape [2, 3, 4] (rank 3)"},
                        {2, 1, "start_axis 2 comes after stop_axis 1 for X of shape [2, 3, 4]"}};
  for (const Case& c : cases) {
    OpTest bad("flatten_contiguous_range");
    bad.Input("X", RandomTensor(DType::kFloat32, {2, 3, 4}, 9)).Attr("start_axis", c.start).Attr("stop_axis", c.stop);
    bad.Output("Out");
    CHECK(CompileError(bad) == c.message);
  }
}

TEST_CASE("flatten_contiguous_range gradient") {
  OpTest op("flatten_contiguous_range");
  op.Input("X", RandomTensor(DType::kFloat32, {2, 3, 4}, 10)).Attr("stop_axis", 2).Output("Out").Output("XShape");
  op.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-8}});
}

// ---- transpose2 -----------------------------------------------------------------------------

TEST_CASE("transpose2 matches a naive reference for every kernel path") {
  struct Case {
    Dims x;
    std::vector<int> axis;
  };
  const Case cases[] = {
      {{1, 1}, {1, 0}},    // all size-1: one copy
      {{7, 513}, {1, 0}},  // 2-D tiled, odd sizes
      {{513, 7}, {1, 0}},
      {{65, 130}, {1, 0}},           // partial tiles on both sides
      {{3, 70, 33}, {0, 2, 1}},      // batched 2-D
      {{3, 70, 33}, {2, 0, 1}},      // merges to 2-D
      {{4, 5, 33}, {1, 0, 2}},       // last axis kept: row copies
      {{4, 5, 6}, {2, 1, 0}},        // general gather
      {{2, 3, 5, 7}, {0, 2, 3, 1}},  // NCHW -> NHWC: batched 2-D after merging H, W
      {{2, 3, 5, 7}, {0, 3, 1, 2}},  // NHWC -> NCHW
      {{2, 3, 5, 7}, {3, 2, 1, 0}},
      {{2, 3, 5, 7}, {1, 0, 3, 2}},
      {{1, 5, 1, 3}, {3, 2, 1, 0}},  // size-1 axes dropped
      {{3, 4, 5}, {-1, 0, 1}},       // negative axes
      {{2, 3, 2, 3, 2}, {4, 1, 3, 0, 2}},
      {{2, 3, 4}, {0, 1, 2}},  // identity
      {{7}, {0}},
  };
  for (const Case& c : cases)
    for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt16, DType::kBool}) {
      CAPTURE(c.x.ToString());
      CAPTURE(DTypeName(t));
      Tensor x = RandomTensor(t, c.x, 11, -100, 100);
      OpTest op("transpose2");
      op.Input("X", x).Attr("axis", c.axis).Output("Out").Output("XShape");
      REQUIRE_OK(op.Run());
      op.ExpectOutput("Out", RefTranspose(x, c.axis), {0, 0});
    }
}

TEST_CASE("transpose2 shape inference and errors") {
  OpTest op("transpose2");
  op.Input("X", RandomTensor(DType::kFloat32, {5, 3, 4}, 12)).CompileDims("X", {-1, 3, 4});
  op.Attr("axis", std::vector<int>{2, 0, 1}).Output("Out").Output("XShape");
  REQUIRE_OK(op.Run());
  CHECK(op.CompiledDims("Out") == Dims{4, -1, 3});
  CHECK(op.CompiledDims("XShape") == Dims{0, -1, 3, 4});

  struct Case {
    std::vector<int> axis;
    const char* message;
  };
  const Case cases[] = {
      {{1, 0}, "axis [1, 0] has 2 entries but X has rank 3 (X has shape [2, 3, 4])"},
      {{0, 0, 1}, "axis [0, 0, 1] is not a permutation: axis 0 appears twice (X has shape [2, 3, 4])"},
      {{0, -3, 0}, "axis [0, -3, 0] is not a permutation: axis 0 appears twice (X has shape [2, 3, 4])"},
      {{0, 1, 3}, "axis [0, 1, 3] has entry 3 out of range for rank 3 (X has shape [2, 3, 4])"},
  };
  for (const Case& c : cases) {
    OpTest bad("transpose2");
    bad.Input("X", RandomTensor(DType::kFloat32, {2, 3, 4}, 13)).Attr("axis", c.axis).Output("Out");
    CHECK(CompileError(bad) == c.message);
  }
  OpTest missing("transpose2");
  missing.Input("X", RandomTensor(DType::kFloat32, {2, 3}, 14)).Output("Out");
  CHECK(CompileError(missing) ==
        "missing required attribute 'axis' (INTS, A permutation of X's axes; negative entries count from the end.)");
}

TEST_CASE("transpose2 gradient applies the inverse permutation") {
  for (auto axis : {std::vector<int>{2, 0, 1}, std::vector<int>{0, 2, 1}, std::vector<int>{1, 0, 2}}) {
    OpTest op("transpose2");
    op.Input("X", RandomTensor(DType::kFloat32, {2, 3, 4}, 15)).Attr("axis", axis).Output("Out").Output("XShape");
    op.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-8}});
  }
}

// ---- Multi-threaded plans -------------------------------------------------------------------

/// One op, X of `dims` (float32) -> Out, as a program text.
std::string OneOpProgram(const std::string& op, const Dims& dims, const std::string& attrs,
                         const std::string& extra_outputs = "") {
  std::string d;
  for (int64_t v : dims) d += fmt::format(" dims: {}", v);
  return fmt::format(R"txt(
main_program {{ blocks {{ idx: 0 parent_idx: -1
  vars {{ name: "x" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: FP32 {} }} }} }} }}
  ops {{ type: "{}" inputs {{ parameter: "X" arguments: "x" }} outputs {{ parameter: "Out" arguments: "out" }} {} {} }}
}} }})txt",
                     d, op, extra_outputs, attrs);
}

TEST_CASE("transpose2 and reshape2 give the same bits on 1 and 2 threads") {
  Tensor x = RandomTensor(DType::kFloat32, {4, 3, 96, 97}, 16);
  for (const char* axis : {"0, 2, 3, 1", "3, 1, 2, 0", "1, 0, 2, 3"}) {
    CAPTURE(axis);
    std::string attrs = fmt::format("attrs {{ name: \"axis\" type: INTS {} }}", [&] {
      std::string s;
      for (char ch : std::string(axis))
        if (ch >= '0' && ch <= '9') s += fmt::format(" ints: {}", ch - '0');
      return s;
    }());
    auto module = CompileText(OneOpProgram("transpose2", x.dims(), attrs));
    REQUIRE_OK(module.status());
    auto one = RunModule(**module, {{"x", x}}, {"out"}, {.threads = 1});
    auto two = RunModule(**module, {{"x", x}}, {"out"}, {.threads = 2});
    REQUIRE_OK(one.status());
    REQUIRE_OK(two.status());
    ExpectClose(two->at("out"), one->at("out"), {0, 0}, "2 threads vs 1");
  }
  std::vector<int> perm = {0, 2, 3, 1};
  auto module = CompileText(
      OneOpProgram("transpose2", x.dims(), "attrs { name: \"axis\" type: INTS ints: 0 ints: 2 ints: 3 ints: 1 }"));
  REQUIRE_OK(module.status());
  auto two = RunModule(**module, {{"x", x}}, {"out"}, {.threads = 2});
  REQUIRE_OK(two.status());
  ExpectClose(two->at("out"), RefTranspose(x, perm), {0, 0}, "2 threads vs reference");
}

}  // namespace
}  // namespace paddlec::testing

namespace paddlec::testing {
namespace {

// ---- squeeze2 / unsqueeze2 / shape -------------------------------------------------------------

TEST_CASE("squeeze2 follows PaddlePaddle's rule for listed, unlisted and unknown axes") {
  struct Case {
    Dims x;
    std::vector<int> axes;
    Dims expect;
  };
  const Case cases[] = {
      {{1, 3, 1, 5}, {}, {3, 5}},         // every size-1 axis
      {{1, 3, 1, 5}, {0}, {3, 1, 5}},     //
      {{1, 3, 1, 5}, {-2, 0}, {3, 5}},    // negative axes count from the end
      {{1, 3, 1, 5}, {1}, {1, 3, 1, 5}},  // a listed axis of size 3 stays, silently
      {{1}, {}, {}},                      // to 0-D
      {{}, {}, {}},                       //
      {{-1, 1, 4}, {1}, {-1, 4}},         //
      {{2, -1, 4}, {1}, {2, 4}},          // an unknown listed axis is assumed to be 1
      {{2, -1, 4}, {}, {2, -1, 4}},       // but never squeezed unlisted
  };
  for (const Case& c : cases) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.axes.size());
    OpTest op("squeeze2");
    Dims run = c.x;
    for (int64_t& d : run) d = d < 0 ? 1 : d;
    Tensor x = RandomTensor(DType::kFloat32, run, 3);
    op.Input("X", x).CompileDims("X", c.x).Output("Out").Output("XShape");
    if (!c.axes.empty()) op.Attr("axes", c.axes);
    REQUIRE_OK(op.Compile());
    CHECK(op.CompiledDims("Out") == c.expect);
    Dims xshape = c.x;
    xshape.insert(0, 0);
    CHECK(op.CompiledDims("XShape") == xshape);
  }
  OpTest run("squeeze2");
  Tensor x = RandomTensor(DType::kInt64, {1, 3, 1, 5}, 4, -9, 9);
  run.Input("X", x).Attr("axes", std::vector<int>{2}).Output("Out");
  REQUIRE_OK(run.Run());
  run.ExpectOutput("Out", WithDims(x, {1, 3, 5}), {0, 0});
}

TEST_CASE("unsqueeze2 inserts axes one after the other, as PaddlePaddle does") {
  struct Case {
    Dims x;
    std::vector<int> axes;
    Dims expect;
  };
  const Case cases[] = {
      {{3, 5}, {0}, {1, 3, 5}},
      {{3, 5}, {-1}, {3, 5, 1}},
      {{3, 5}, {0, 2}, {1, 3, 1, 5}},    // 2 counts in [1, 3, 5]
      {{3, 5}, {2, 0}, {1, 3, 5, 1}},    //
      {{3, 5}, {1, 1}, {3, 1, 1, 5}},    //
      {{3, 5}, {-1, -1}, {3, 5, 1, 1}},  //
      {{}, {0}, {1}},                    // a 0-D tensor to [1]
      {{-1, 4}, {1}, {-1, 1, 4}},        //
  };
  for (const Case& c : cases) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.axes.size());
    Dims run = c.x;
    for (int64_t& d : run) d = d < 0 ? 2 : d;
    Tensor x = RandomTensor(DType::kFloat32, run, 5);
    OpTest op("unsqueeze2");
    op.Input("X", x).CompileDims("X", c.x).Attr("axes", c.axes).Output("Out").Output("XShape");
    REQUIRE_OK(op.Run());
    CHECK(op.CompiledDims("Out") == c.expect);
    Dims expect_run = c.expect;
    for (int64_t& d : expect_run) d = d < 0 ? 2 : d;
    op.ExpectOutput("Out", WithDims(x, expect_run), {0, 0});
  }
  OpTest bad("unsqueeze2");
  bad.Input("X", RandomTensor(DType::kFloat32, {3, 5}, 6)).Attr("axes", std::vector<int>{4}).Output("Out");
  CHECK(CompileError(bad) ==
        "axes has entry 4 out of range for a shape of rank 2 (X has shape [3, 5]): it must be in [-3, 2]");
  OpTest tensor_axes("unsqueeze2");
  tensor_axes.Input("X", RandomTensor(DType::kFloat32, {3}, 6))
      .Input("AxesTensor", MakeTensor<int32_t>({1}, {0}))
      .Output("Out");
  CHECK(CompileError(tensor_axes) ==
        "input AxesTensor (bound to 'AxesTensor') is not supported yet: give `axes` as an attribute instead");
}

TEST_CASE("squeeze2 and unsqueeze2 gradients reshape Out@GRAD back, from XShape or from X") {
  OpTest sq("squeeze2");
  sq.Input("X", RandomTensor(DType::kFloat32, {2, 1, 3}, 7)).Output("Out").Output("XShape");
  sq.CheckGrad({.inputs = {"X"}});
  OpTest sq_no_xshape("squeeze2");  // PaddlePaddle 3.x writes no XShape: the gradient reads X's shape
  sq_no_xshape.Input("X", RandomTensor(DType::kFloat32, {2, 1, 3}, 7)).Output("Out");
  sq_no_xshape.CheckGrad({.inputs = {"X"}});
  OpTest unsq("unsqueeze2");
  unsq.Input("X", RandomTensor(DType::kFloat32, {2, 3}, 8)).Attr("axes", std::vector<int>{1, -1}).Output("Out");
  unsq.CheckGrad({.inputs = {"X"}});
  // The emitted grad op binds exactly one shape source.
  for (bool xshape : {true, false}) {
    ir::pb::OpDesc fwd;
    fwd.set_type("squeeze2");
    ops::AddInput(fwd, "X", {"x"});
    ops::AddOutput(fwd, "Out", {"y"});
    if (xshape) ops::AddOutput(fwd, "XShape", {"xs"});
    std::unordered_set<std::string> no_grad;
    ops::GradMakerContext g(fwd, no_grad, ops::GlobalOpRegistry());
    REQUIRE_OK(ops::GlobalOpRegistry().Find("squeeze2")->grad_maker()(g));
    REQUIRE(g.emitted().size() == 1);
    std::vector<std::string> slots;
    for (const auto& in : g.emitted()[0].inputs()) slots.push_back(in.parameter());
    CHECK(slots ==
          (xshape ? std::vector<std::string>{"XShape", "Out@GRAD"} : std::vector<std::string>{"Out@GRAD", "X"}));
  }
}

TEST_CASE("shape returns int32 dims without reading the data") {
  for (DType t : {DType::kFloat32, DType::kInt64, DType::kBool}) {
    OpTest op("shape");
    op.Input("Input", RandomTensor(t, {4, 1, 7}, 9)).CompileDims("Input", {-1, 1, 7}).Output("Out");
    REQUIRE_OK(op.Run());
    CHECK(op.CompiledDims("Out") == Dims{3});
    op.ExpectOutput("Out", MakeTensor<int32_t>({3}, {4, 1, 7}), {0, 0});
  }
  OpTest scalar("shape");
  scalar.Input("Input", MakeTensor<float>({}, {1.f})).Output("Out");
  REQUIRE_OK(scalar.Run());
  CHECK(scalar.Out("Out").dims() == Dims{0});
  CHECK(ops::GlobalOpRegistry().Find("shape")->no_gradient());
}

}  // namespace
}  // namespace paddlec::testing

namespace paddlec::testing {
namespace {

TEST_CASE("the copy gradients reject an Out@GRAD with another element count") {
  for (const char* op : {"reshape2_grad", "squeeze2_grad", "transpose2_grad"}) {
    CAPTURE(op);
    OpTest t(op);
    t.Input("XShape", MakeTensor<float>({0, 2, 3}, {}))
        .Input("Out@GRAD", RandomTensor(DType::kFloat32, {7}, 1))
        .Output("X@GRAD");
    if (std::string(op) == "transpose2_grad") t.Attr("axis", std::vector<int>{1, 0});
    CHECK(CompileError(t) == "Out@GRAD has shape [7] (7 elements) but X has shape [2, 3] (6 elements)");
  }
}

}  // namespace
}  // namespace paddlec::testing
