// expand_v2 and tile against naive references (PaddlePaddle's alignment and -1 rules), with unknown
// dims, exact errors and gradient checks.
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

/// Out[i] = X[i mod X's dims], X aligned to Out's trailing axes (a tile when `modulo`, else X's
/// size-1 axes repeat).
Tensor RefRepeat(const Tensor& x, const Dims& out) {
  const Dims& d = x.dims();
  const int diff = out.rank() - d.rank();
  std::vector<double> v = ToDoubles(x), o;
  for (int64_t flat = 0; flat < out.Numel(); ++flat) {
    int64_t q = flat, src = 0, stride = 1;
    for (int a = out.rank() - 1; a >= 0; --a) {
      const int64_t i = q % out[a];
      q /= out[a];
      if (a < diff) continue;
      const int64_t dim = d[a - diff];
      src += (i % dim) * stride;
      stride *= dim;
    }
    o.push_back(v[src]);
  }
  return Cast(MakeTensor<double>(out, o), x.dtype());
}

TEST_CASE("expand_v2 broadcasts size-1 axes and adds leading ones") {
  struct Case {
    Dims x;
    std::vector<int> shape;
    Dims out;
  };
  const Case cases[] = {
      {{3, 1}, {3, 4}, {3, 4}}, {{3, 1}, {2, 3, 4}, {2, 3, 4}},    {{1, 5}, {-1, 5}, {1, 5}}, {{1, 5}, {4, -1}, {4, 5}},
      {{}, {2, 3}, {2, 3}},     {{2, 1, 3}, {2, 7, 3}, {2, 7, 3}}, {{1}, {1000}, {1000}},
  };
  for (DType t : {DType::kFloat32, DType::kInt64, DType::kBool})
    for (const Case& c : cases) {
      CAPTURE(DTypeName(t));
      CAPTURE(c.out.ToString());
      Tensor x = RandomTensor(t, c.x, 31, -9, 9);
      OpTest op("expand_v2");
      op.Input("X", x).Attr("shape", c.shape).Output("Out");
      REQUIRE_OK(op.Run());
      op.ExpectOutput("Out", RefRepeat(x, c.out), {0, 0});
    }
  OpTest unknown("expand_v2");
  unknown.Input("X", RandomTensor(DType::kFloat32, {6, 1}, 32)).CompileDims("X", {-1, 1});
  unknown.Attr("shape", std::vector<int>{-1, 4}).Output("Out");
  REQUIRE_OK(unknown.Run());
  CHECK(unknown.CompiledDims("Out") == Dims{-1, 4});
}

TEST_CASE("expand_v2 rejects shapes X does not broadcast to") {
  OpTest op("expand_v2");
  op.Input("X", RandomTensor(DType::kFloat32, {3, 2}, 33)).Attr("shape", std::vector<int>{3, 4}).Output("Out");
  CHECK(CompileError(op) == "cannot expand X of shape [3, 2] to shape [3, 4]: dimension 1 of X is 2, neither 1 nor 4");
  OpTest shorter("expand_v2");
  shorter.Input("X", RandomTensor(DType::kFloat32, {3, 2}, 33)).Attr("shape", std::vector<int>{2}).Output("Out");
  CHECK(CompileError(shorter) == "shape [2] has 1 entries, but X has shape [3, 2] (rank 2): it needs 2 to 9");
  OpTest lead("expand_v2");
  lead.Input("X", RandomTensor(DType::kFloat32, {3}, 33)).Attr("shape", std::vector<int>{-1, 3}).Output("Out");
  CHECK(CompileError(lead) ==
        "shape [-1, 3] has entry -1 at index 0: entries must be positive where X has no dimension");
}

TEST_CASE("tile repeats along every axis, padding the shorter list") {
  struct Case {
    Dims x;
    std::vector<int> repeat;
    Dims out;
  };
  const Case cases[] = {
      {{2, 3}, {2, 2}, {4, 6}}, {{2, 3}, {3}, {2, 9}},    {{2, 3}, {2, 1, 1}, {2, 2, 3}},
      {{1, 3}, {4, 1}, {4, 3}}, {{2, 2}, {2, 2}, {4, 4}}, {{2, 1, 3, 1, 2}, {2, 3, 2, 3, 2}, {4, 3, 6, 3, 4}},
      {{5}, {1}, {5}},
  };
  for (DType t : {DType::kFloat32, DType::kInt32, DType::kBool})
    for (const Case& c : cases) {
      CAPTURE(DTypeName(t));
      CAPTURE(c.out.ToString());
      Tensor x = RandomTensor(t, c.x, 34, -9, 9);
      OpTest op("tile");
      op.Input("X", x).Attr("repeat_times", c.repeat).Output("Out");
      REQUIRE_OK(op.Run());
      op.ExpectOutput("Out", RefRepeat(x, c.out), {0, 0});
    }
  OpTest unknown("tile");
  unknown.Input("X", RandomTensor(DType::kFloat32, {6, 2}, 35)).CompileDims("X", {-1, 2});
  unknown.Attr("repeat_times", std::vector<int>{2, 3}).Output("Out");
  REQUIRE_OK(unknown.Run());
  CHECK(unknown.CompiledDims("Out") == Dims{-1, 6});
  OpTest zero("tile");
  zero.Input("X", RandomTensor(DType::kFloat32, {2}, 35)).Attr("repeat_times", std::vector<int>{0}).Output("Out");
  CHECK(CompileError(zero) == "repeat_times [0] has entry 0 at index 0: entries must be positive");
}

TEST_CASE("expand_v2 and tile gradients sum over the repeats") {
  OpTest e("expand_v2");
  e.Input("X", RandomTensor(DType::kFloat32, {3, 1, 2}, 36)).Attr("shape", std::vector<int>{2, 3, 4, 2}).Output("Out");
  e.CheckGrad({.inputs = {"X"}});
  OpTest t("tile");
  t.Input("X", RandomTensor(DType::kFloat32, {2, 3}, 37)).Attr("repeat_times", std::vector<int>{3, 1, 2}).Output("Out");
  t.CheckGrad({.inputs = {"X"}});
  // Large enough for the multi-threaded reduction.
  OpTest big("expand_v2");
  big.Input("X", RandomTensor(DType::kFloat32, {1, 64}, 38)).Attr("shape", std::vector<int>{2048, 64}).Output("Out");
  REQUIRE_OK(big.Run());
}

}  // namespace
}  // namespace paddlec::testing
