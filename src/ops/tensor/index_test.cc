// slice and gather: values against naive references (PaddlePaddle's clamping and decrease rules,
// repeated and 0-D indices), shapes with unknown dims, exact errors, and gradient checks.
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

/// Naive slice: Out[i] = In[start + i] over the box, as doubles.
Tensor RefSlice(const Tensor& in, const Dims& start, const Dims& len, const Dims& out_dims) {
  const Dims& d = in.dims();
  std::vector<double> v = ToDoubles(in), out;
  const int64_t n = len.Numel();
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t q = flat, src = 0, stride = 1;
    for (int a = d.rank() - 1; a >= 0; --a) {
      src += (start[a] + q % len[a]) * stride;
      q /= len[a];
      stride *= d[a];
    }
    out.push_back(v[src]);
  }
  return Cast(MakeTensor<double>(out_dims, out), in.dtype());
}

TEST_CASE("slice clamps, counts from the end and decreases axes as PaddlePaddle does") {
  struct Case {
    std::vector<int64_t> axes;
    std::vector<int> starts, ends;
    std::vector<int64_t> decrease;
    Dims start, len, out;
  };
  const Dims in{4, 5, 6};
  const Case cases[] = {
      {{1}, {1}, {3}, {}, {0, 1, 0}, {4, 2, 6}, {4, 2, 6}},
      {{0, 2}, {-3, 2}, {-1, 100}, {}, {1, 0, 2}, {2, 5, 4}, {2, 5, 4}},       // negative start and end, clamped end
      {{2}, {-100}, {2147483647}, {}, {0, 0, 0}, {4, 5, 6}, {4, 5, 6}},        // PaddlePaddle's "to the end"
      {{1}, {-1}, {1000}, {1}, {0, 4, 0}, {4, 1, 6}, {4, 6}},                  // x[:, -1]: the LSTM's last step
      {{0, 1, 2}, {2, 3, 4}, {3, 4, 5}, {0, 1, 2}, {2, 3, 4}, {1, 1, 1}, {}},  // to 0-D
      {{1}, {3}, {1}, {}, {0, 3, 0}, {4, 0, 6}, {4, 0, 6}},                    // end before start: empty
      {{-1}, {0}, {3}, {}, {0, 0, 0}, {4, 5, 3}, {4, 5, 3}},                   // negative axis
  };
  for (DType t : {DType::kFloat32, DType::kInt32, DType::kInt64}) {
    Tensor x = RandomTensor(t, in, 1, -50, 50);
    for (const Case& c : cases) {
      CAPTURE(DTypeName(t));
      CAPTURE(c.out.ToString());
      OpTest op("slice");
      op.Input("Input", x).Attr("axes", c.axes).Attr("starts", c.starts).Attr("ends", c.ends).Output("Out");
      if (!c.decrease.empty()) op.Attr("decrease_axis", c.decrease);
      REQUIRE_OK(op.Run());
      op.ExpectOutput("Out", RefSlice(x, c.start, c.len, c.out), {0, 0});
    }
  }
}

TEST_CASE("slice of a shape tensor and with an unknown batch") {
  // shape(x)[0]: PaddlePaddle's dynamic batch size, a 0-D int32.
  OpTest batch("slice");
  batch.Input("Input", MakeTensor<int32_t>({3}, {8, 3, 7}))
      .Attr("axes", std::vector<int64_t>{0})
      .Attr("starts", std::vector<int>{0})
      .Attr("ends", std::vector<int>{1})
      .Attr("decrease_axis", std::vector<int64_t>{0})
      .Output("Out");
  REQUIRE_OK(batch.Run());
  batch.ExpectOutput("Out", MakeTensor<int32_t>({}, {8}), {0, 0});

  OpTest unknown("slice");
  unknown.Input("Input", RandomTensor(DType::kFloat32, {6, 4, 3}, 2))
      .CompileDims("Input", {-1, 4, 3})
      .Attr("axes", std::vector<int64_t>{0, 1})
      .Attr("starts", std::vector<int>{1, 1})
      .Attr("ends", std::vector<int>{3, 3})
      .Output("Out");
  REQUIRE_OK(unknown.Run());
  CHECK(unknown.CompiledDims("Out") == Dims{-1, 2, 3});  // an unknown axis gives an unknown length
}

TEST_CASE("slice rejects inconsistent attributes and tensor-valued starts") {
  auto make = [](std::vector<int64_t> axes, std::vector<int> starts, std::vector<int> ends,
                 std::vector<int64_t> decrease) {
    auto op = std::make_unique<OpTest>("slice");
    op->Input("Input", RandomTensor(DType::kFloat32, {4, 5}, 3))
        .Attr("axes", axes)
        .Attr("starts", starts)
        .Attr("ends", ends)
        .Attr("decrease_axis", decrease)
        .Output("Out");
    return op;
  };
  CHECK(CompileError(*make({0, 1}, {0}, {1, 2}, {})) ==
        "axes [0, 1], starts [0] and ends [1, 2] must have the same number of entries");
  CHECK(CompileError(*make({2}, {0}, {1}, {})) == "axes [2] has entry 2 out of range for Input of shape [4, 5]");
  CHECK(CompileError(*make({1, -1}, {0, 0}, {1, 1}, {})) == "axes [1, -1] names axis 1 twice");
  CHECK(CompileError(*make({1}, {0}, {2}, {1})) ==
        "decrease_axis removes axis 1, but the slice keeps 2 entries of it (Input has shape [4, 5])");
  CHECK(CompileError(*make({1}, {0}, {1}, {0})) ==
        "decrease_axis [0] has entry 0, which is not an axis sliced by axes [1]");
  OpTest tensor_starts("slice");
  tensor_starts.Input("Input", RandomTensor(DType::kFloat32, {4}, 3))
      .Input("StartsTensor", MakeTensor<int64_t>({1}, {1}))
      .Attr("axes", std::vector<int64_t>{0})
      .Attr("starts", std::vector<int>{0})
      .Attr("ends", std::vector<int>{2})
      .Output("Out");
  CHECK(CompileError(tensor_starts) ==
        "input StartsTensor (bound to 'StartsTensor') is not supported yet: give `starts` as an attribute instead");
}

TEST_CASE("slice gradient writes Out@GRAD into the box") {
  OpTest op("slice");
  op.Input("Input", RandomTensor(DType::kFloat32, {3, 4, 5}, 4))
      .Attr("axes", std::vector<int64_t>{1, 2})
      .Attr("starts", std::vector<int>{1, -3})
      .Attr("ends", std::vector<int>{3, 100})
      .Output("Out");
  op.CheckGrad({.inputs = {"Input"}});
  OpTest last("slice");
  last.Input("Input", RandomTensor(DType::kFloat32, {2, 3, 4}, 5))
      .Attr("axes", std::vector<int64_t>{1})
      .Attr("starts", std::vector<int>{-1})
      .Attr("ends", std::vector<int>{3})
      .Attr("decrease_axis", std::vector<int64_t>{1})
      .Output("Out");
  last.CheckGrad({.inputs = {"Input"}});
}

/// Naive gather along `axis`.
Tensor RefGather(const Tensor& x, const std::vector<int64_t>& idx, int axis, bool zero_d) {
  const Dims& d = x.dims();
  const int64_t outer = d.Product(0, axis), rows = d[axis], inner = d.Product(axis + 1, d.rank());
  std::vector<double> v = ToDoubles(x), out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j : idx)
      for (int64_t i = 0; i < inner; ++i) out.push_back(v[(o * rows + j) * inner + i]);
  Dims od = d;
  if (zero_d)
    od.erase(axis);
  else
    od[axis] = static_cast<int64_t>(idx.size());
  return Cast(MakeTensor<double>(od, out), x.dtype());
}

TEST_CASE("gather picks rows along any axis with int32 and int64 indices") {
  const std::vector<int64_t> idx = {3, 0, 3, 1, 4};
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kBool})
    for (int axis : {0, 1, -1}) {
      CAPTURE(DTypeName(t));
      CAPTURE(axis);
      Tensor x = RandomTensor(t, {5, 5, 3}, 6, -9, 9);
      if (axis == -1) x = RandomTensor(t, {2, 3, 5}, 6, -9, 9);
      for (DType it : {DType::kInt32, DType::kInt64}) {
        OpTest op("gather");
        op.Input("X", x).Input("Index", Cast(MakeTensor<int64_t>({5}, idx), it)).Output("Out");
        if (axis != 0) op.Attr("axis", axis);
        REQUIRE_OK(op.Run());
        op.ExpectOutput("Out", RefGather(x, idx, axis < 0 ? axis + 3 : axis, false), {0, 0});
      }
    }
  // A 0-D index drops the axis; an [n, 1] index reads as [n].
  Tensor x = RandomTensor(DType::kFloat32, {4, 3}, 7);
  OpTest scalar("gather");
  scalar.Input("X", x).Input("Index", MakeTensor<int64_t>({}, {2})).Output("Out");
  REQUIRE_OK(scalar.Run());
  scalar.ExpectOutput("Out", RefGather(x, {2}, 0, true), {0, 0});
  OpTest column("gather");
  column.Input("X", x).Input("Index", MakeTensor<int32_t>({2, 1}, {1, 3})).Output("Out");
  REQUIRE_OK(column.Run());
  column.ExpectOutput("Out", RefGather(x, {1, 3}, 0, false), {0, 0});
  // Unknown dims flow.
  OpTest unknown("gather");
  unknown.Input("X", x)
      .CompileDims("X", {-1, 3})
      .Input("Index", MakeTensor<int64_t>({5}, idx))
      .CompileDims("Index", {-1});
  unknown.Output("Out");
  REQUIRE_OK(unknown.Compile());
  CHECK(unknown.CompiledDims("Out") == Dims{-1, 3});
}

TEST_CASE("gather reports out-of-range indices and bad index shapes") {
  OpTest op("gather");
  op.Input("X", RandomTensor(DType::kFloat32, {4, 3}, 8))
      .Input("Index", MakeTensor<int64_t>({3}, {0, 4, 1}))
      .Output("Out");
  Status st = op.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "Index[1] = 4 is out of range for X, which has 4 entries along axis 0");
  OpTest neg("gather");
  neg.Input("X", RandomTensor(DType::kFloat32, {4, 3}, 8))
      .Input("Index", MakeTensor<int32_t>({2}, {-1, 1}))
      .Output("Out");
  st = neg.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "Index[0] = -1 is out of range for X, which has 4 entries along axis 0");
  OpTest matrix("gather");
  matrix.Input("X", RandomTensor(DType::kFloat32, {4, 3}, 8)).Input("Index", MakeTensor<int64_t>({2, 2}, {0, 1, 2, 3}));
  matrix.Output("Out");
  CHECK(CompileError(matrix) == "Index has shape [2, 2]: gather takes a 0-D or 1-D index (or [n, 1])");
  OpTest floats("gather");
  floats.Input("X", RandomTensor(DType::kFloat32, {4, 3}, 8))
      .Input("Index", MakeTensor<float>({1}, {0.f}))
      .Output("Out");
  CHECK(CompileError(floats) == "Index has dtype float32: gather needs int32 or int64 indices");
}

TEST_CASE("gather gradient sums repeated indices") {
  for (int axis : {0, 1}) {
    CAPTURE(axis);
    OpTest op("gather");
    op.Input("X", RandomTensor(DType::kFloat32, {4, 5, 3}, 9))
        .Input("Index", MakeTensor<int64_t>({6}, {2, 0, 2, 3, 2, 1}))
        .Output("Out");
    if (axis) op.Attr("axis", axis);
    op.CheckGrad({.inputs = {"X"}});
  }
}

}  // namespace
}  // namespace paddlec::testing
