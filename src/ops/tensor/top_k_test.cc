// top_k_v2 against a naive sort, including ties, NaN, unsorted output, errors and the gradient.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

struct TopK {
  Tensor values, indices;
};

/// Full stable sort of each line (NaN greatest, ties by index), first k kept; unsorted = index order.
TopK RefTopK(const Tensor& x, int k, int axis, bool largest, bool sorted) {
  Dims d = x.dims();
  int r = d.rank();
  axis = axis < 0 ? axis + r : axis;
  int64_t outer = d.Product(0, axis), n = d[axis], inner = d.Product(axis + 1, r);
  std::vector<double> v = ToDoubles(x), vals;
  std::vector<int64_t> idx;
  Dims od = d;
  od[axis] = k;
  vals.resize(od.Numel());
  idx.resize(od.Numel());
  auto greater = [](double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && !std::isnan(b);
    return a > b;
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      auto at = [&](int64_t j) { return v[(o * n + j) * inner + in]; };
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return largest ? greater(at(a), at(b)) : greater(at(b), at(a)); });
      order.resize(k);
      if (!sorted) std::sort(order.begin(), order.end());
      for (int j = 0; j < k; ++j) {
        vals[(o * k + j) * inner + in] = at(order[j]);
        idx[(o * k + j) * inner + in] = order[j];
      }
    }
  return {Cast(MakeTensor<double>(od, vals), x.dtype()), MakeTensor<int64_t>(od, idx)};
}

TEST_CASE("top_k_v2 matches a full sort on every axis, both directions, sorted or not") {
  struct Case {
    Dims x;
    int k, axis;
  };
  const Case cases[] = {{{7}, 3, -1},
                        {{3, 513}, 5, -1},
                        {{4, 9, 5}, 4, 1},
                        {{4, 9, 5}, 2, 0},
                        {{6, 11}, 1, -1},
                        {{6, 11}, 1, 0},
                        {{5, 8}, 8, -1},
                        {{1}, 1, 0},
                        // k > 16 takes the nth_element path
                        {{3, 50}, 20, -1},
                        {{2, 25, 3}, 25, 1},
                        // lines longer than 1024: a block per line on the GPU
                        {{2, 3000}, 6, -1},
                        {{2, 1100, 3}, 3, 1}};
  for (const Case& c : cases)
    for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32})
      for (bool largest : {true, false})
        for (bool sorted : {true, false}) {
          CAPTURE(c.x.ToString());
          CAPTURE(c.k);
          CAPTURE(c.axis);
          CAPTURE(DTypeName(t));
          CAPTURE(largest);
          CAPTURE(sorted);
          // Integers from a small range make ties common.
          Tensor x = RandomTensor(t, c.x, 30, -20, 20);
          OpTest op("top_k_v2");
          op.Input("X", x).Output("Out").Output("Indices");
          if (c.k != 1) op.Attr("k", c.k);
          if (c.axis != -1) op.Attr("axis", c.axis);
          if (!largest) op.Attr("largest", false);
          if (!sorted) op.Attr("sorted", false);
          REQUIRE_OK(op.Run());
          TopK ref = RefTopK(x, c.k, c.axis, largest, sorted);
          op.ExpectOutput("Out", ref.values, {0, 0});
          op.ExpectOutput("Indices", ref.indices, {0, 0});
        }
}

TEST_CASE("top_k_v2 ties go to the lower index and NaN ranks highest") {
  Tensor ties = MakeTensor<float>({5}, {3, 1, 3, 2, 3});
  OpTest big("top_k_v2");
  big.Input("X", ties).Attr("k", 2).Output("Out").Output("Indices");
  REQUIRE_OK(big.Run());
  big.ExpectOutput("Out", MakeTensor<float>({2}, {3, 3}), {0, 0});
  big.ExpectOutput("Indices", MakeTensor<int64_t>({2}, {0, 2}), {0, 0});
  OpTest one("top_k_v2");
  one.Input("X", ties).Output("Out").Output("Indices");
  REQUIRE_OK(one.Run());
  one.ExpectOutput("Indices", MakeTensor<int64_t>({1}, {0}), {0, 0});

  Tensor with_nan = MakeTensor<double>({4}, {1, NAN, 3, -2});
  OpTest nan_large("top_k_v2");
  nan_large.Input("X", with_nan).Attr("k", 2).Output("Out").Output("Indices");
  REQUIRE_OK(nan_large.Run());
  nan_large.ExpectOutput("Out", MakeTensor<double>({2}, {NAN, 3}), {0, 0});
  nan_large.ExpectOutput("Indices", MakeTensor<int64_t>({2}, {1, 2}), {0, 0});
  OpTest nan_small("top_k_v2");
  nan_small.Input("X", with_nan).Attr("k", 3).Attr("largest", false).Output("Out").Output("Indices");
  REQUIRE_OK(nan_small.Run());
  nan_small.ExpectOutput("Out", MakeTensor<double>({3}, {-2, 1, 3}), {0, 0});
  nan_small.ExpectOutput("Indices", MakeTensor<int64_t>({3}, {3, 0, 2}), {0, 0});
}

TEST_CASE("top_k_v2 shape inference and errors") {
  OpTest op("top_k_v2");
  op.Input("X", RandomTensor(DType::kFloat32, {4, 10}, 31)).CompileDims("X", {-1, 10}).Attr("k", 3);
  op.Output("Out").Output("Indices");
  REQUIRE_OK(op.Run());
  CHECK(op.CompiledDims("Out") == Dims{-1, 3});
  CHECK(op.CompiledDims("Indices") == Dims{-1, 3});
  CHECK(op.Out("Indices").dtype() == DType::kInt64);
  // Selecting along the unknown axis cannot be checked at compile time, only at run time.
  OpTest unknown_axis("top_k_v2");
  unknown_axis.Input("X", RandomTensor(DType::kFloat32, {4, 10}, 31)).CompileDims("X", {-1, 10}).Attr("k", 3);
  unknown_axis.Attr("axis", 0).Output("Out").Output("Indices");
  REQUIRE_OK(unknown_axis.Run());
  CHECK(unknown_axis.CompiledDims("Out") == Dims{3, 10});

  struct Case {
    int k, axis;
    const char* message;
  };
  const Case cases[] = {{5, -1, "k = 5 is larger than dimension 1 (3) of X of shape [2, 3]"},
                        {1, 2, "axis 2 is out of range for X of shape [2, 3] (rank 2)"},
                        {0, -1, "attribute 'k' value 0 is out of range: must be >= 1"}};
  for (const Case& c : cases) {
    OpTest bad("top_k_v2");
    bad.Input("X", RandomTensor(DType::kFloat32, {2, 3}, 32)).Attr("k", c.k).Output("Out").Output("Indices");
    if (c.axis != -1) bad.Attr("axis", c.axis);
    CHECK(CompileError(bad) == c.message);
  }
  OpTest tensor_k("top_k_v2");
  tensor_k.Input("X", RandomTensor(DType::kFloat32, {2, 3}, 33)).Input("K", MakeTensor<int32_t>({1}, {2}));
  tensor_k.Output("Out").Output("Indices");
  CHECK(CompileError(tensor_k) == "input K (bound to 'K') is not supported yet: give `k` as an attribute instead");
}

TEST_CASE("top_k_v2 gradient scatters Out@GRAD into zeros") {
  // Well-separated values so that the central-difference steps never reorder them.
  std::vector<float> v(18);
  for (int i = 0; i < 18; ++i) v[i] = 0.1f * static_cast<float>((i * 7) % 18) - 0.9f;
  for (int axis : {-1, 0}) {
    CAPTURE(axis);
    OpTest op("top_k_v2");
    op.Input("X", MakeTensor<float>({3, 6}, v)).Attr("k", 2).Output("Out").Output("Indices");
    if (axis != -1) op.Attr("axis", axis);
    op.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-8, 1e-8}});
  }
}

TEST_CASE("top_k_v2 on 2 threads matches the reference") {
  Tensor x = RandomTensor(DType::kFloat32, {2000, 100}, 34);
  auto module = CompileText(R"txt(
main_program { blocks { idx: 0 parent_idx: -1
  vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2000 dims: 100 } } } }
  ops { type: "top_k_v2" inputs { parameter: "X" arguments: "x" }
        outputs { parameter: "Out" arguments: "v" } outputs { parameter: "Indices" arguments: "i" }
        attrs { name: "k" type: INT i: 5 } }
} })txt");
  REQUIRE_OK(module.status());
  auto out = RunModule(**module, {{"x", x}}, {"v", "i"}, {.threads = 2});
  REQUIRE_OK(out.status());
  TopK ref = RefTopK(x, 5, -1, true, true);
  ExpectClose(out->at("v"), ref.values, {0, 0}, "values");
  ExpectClose(out->at("i"), ref.indices, {0, 0}, "indices");
}

}  // namespace
}  // namespace paddlec::testing

namespace paddlec::testing {
namespace {

// ---- arg_max -----------------------------------------------------------------------------------

/// Naive arg max over [outer, n, inner] lines (first index on ties, NaN above every number).
std::vector<int64_t> RefArgMax(const Tensor& x, int64_t outer, int64_t n, int64_t inner) {
  std::vector<double> v = ToDoubles(x);
  std::vector<int64_t> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k) {
        const double a = v[(o * n + k) * inner + i], b = v[(o * n + best) * inner + i];
        if (!std::isnan(b) && (std::isnan(a) || a > b)) best = k;
      }
      out.push_back(best);
    }
  return out;
}

TEST_CASE("arg_max along every axis, flattened, with keepdims and both index types") {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    // Few distinct values, so ties are common.
    Tensor x = RandomTensor(t, {3, 4, 300}, 21, -4, 4);
    for (int64_t axis : {0, 1, 2, -1}) {
      CAPTURE(DTypeName(t));
      CAPTURE(axis);
      const int a = static_cast<int>(axis < 0 ? axis + 3 : axis);
      const Dims& d = x.dims();
      std::vector<int64_t> ref = RefArgMax(x, d.Product(0, a), d[a], d.Product(a + 1, 3));
      Dims out = d;
      out.erase(a);
      OpTest op("arg_max");
      op.Input("X", x).Attr("axis", axis).Output("Out");
      REQUIRE_OK(op.Run());
      op.ExpectOutput("Out", MakeTensor<int64_t>(out, ref), {0, 0});
      OpTest keep("arg_max");
      keep.Input("X", x).Attr("axis", axis).Attr("keepdims", true).Attr("dtype", 2).Output("Out");
      REQUIRE_OK(keep.Run());
      Dims kept = d;
      kept[a] = 1;
      std::vector<int32_t> ref32(ref.begin(), ref.end());
      keep.ExpectOutput("Out", MakeTensor<int32_t>(kept, ref32), {0, 0});
    }
    OpTest flat("arg_max");
    flat.Input("X", x).Attr("axis", int64_t{0}).Attr("flatten", true).Output("Out");
    REQUIRE_OK(flat.Run());
    flat.ExpectOutput("Out", MakeTensor<int64_t>({}, RefArgMax(x, 1, x.numel(), 1)), {0, 0});
  }
  OpTest nan("arg_max");
  nan.Input("X", MakeTensor<float>({2, 3}, {1.f, NAN, 5.f, 2.f, 2.f, 1.f})).Attr("axis", int64_t{1}).Output("Out");
  REQUIRE_OK(nan.Run());
  nan.ExpectOutput("Out", MakeTensor<int64_t>({2}, {1, 0}), {0, 0});
}

TEST_CASE("arg_max shapes with unknown dims and errors") {
  OpTest op("arg_max");
  op.Input("X", RandomTensor(DType::kFloat32, {5, 7}, 22)).CompileDims("X", {-1, 7}).Attr("axis", int64_t{1});
  op.Output("Out");
  REQUIRE_OK(op.Run());
  CHECK(op.CompiledDims("Out") == Dims{-1});
  OpTest bad("arg_max");
  bad.Input("X", RandomTensor(DType::kFloat32, {5, 7}, 22)).Attr("axis", int64_t{2}).Output("Out");
  CHECK(CompileError(bad) == "axis 2 is out of range for X of shape [5, 7]: it must be in [-2, 1]");
  OpTest missing("arg_max");
  missing.Input("X", RandomTensor(DType::kFloat32, {5, 7}, 22)).Output("Out");
  CHECK_FALSE(missing.Compile().ok());  // axis is required, as in PaddlePaddle
  CHECK(ops::GlobalOpRegistry().Find("arg_max")->no_gradient());
}

}  // namespace
}  // namespace paddlec::testing
