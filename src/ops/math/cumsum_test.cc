// cumsum against a naive scan (every axis, flatten, exclusive, reverse, integer types), with
// unknown dims, errors and gradient checks.
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

Tensor RefCumsum(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse,
                 const Dims& out) {
  std::vector<double> v = ToDoubles(x), y(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t kk = reverse ? n - 1 - k : k, at = (o * n + kk) * inner + i;
        if (exclusive) {
          y[at] = acc;
          acc += v[at];
        } else {
          acc += v[at];
          y[at] = acc;
        }
      }
    }
  return Cast(MakeTensor<double>(out, y), x.dtype());
}

TEST_CASE("cumsum along each axis, exclusive and reversed, for float and integer types") {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    Tensor x = RandomTensor(t, {3, 4, 257}, 41, -5, 5);
    for (int axis : {-1, 0, 1})
      for (bool exclusive : {false, true})
        for (bool reverse : {false, true}) {
          CAPTURE(DTypeName(t));
          CAPTURE(axis);
          CAPTURE(exclusive);
          CAPTURE(reverse);
          const int a = axis < 0 ? axis + 3 : axis;
          const Dims& d = x.dims();
          OpTest op("cumsum");
          op.Input("X", x).Output("Out");
          if (axis != -1) op.Attr("axis", axis);
          if (exclusive) op.Attr("exclusive", true);
          if (reverse) op.Attr("reverse", true);
          REQUIRE_OK(op.Run());
          op.ExpectOutput("Out", RefCumsum(x, d.Product(0, a), d[a], d.Product(a + 1, 3), exclusive, reverse, d),
                          {1e-4, 1e-6});
        }
  }
  Tensor x = RandomTensor(DType::kFloat32, {5, 6}, 42);
  OpTest flat("cumsum");
  flat.Input("X", x).CompileDims("X", {-1, 6}).Attr("flatten", true).Output("Out");
  REQUIRE_OK(flat.Run());
  CHECK(flat.CompiledDims("Out") == Dims{-1});
  flat.ExpectOutput("Out", RefCumsum(x, 1, 30, 1, false, false, {30}), {1e-5, 1e-6});
  OpTest bad("cumsum");
  bad.Input("X", x).Attr("axis", 2).Output("Out");
  Status st = bad.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "axis 2 is out of range for X of shape [5, 6] (rank 2)");
}

TEST_CASE("cumsum gradient is the reversed cumsum") {
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true})
      for (int axis : {0, -1}) {
        OpTest op("cumsum");
        op.Input("X", RandomTensor(DType::kFloat32, {3, 5}, 43)).Attr("axis", axis).Output("Out");
        if (exclusive) op.Attr("exclusive", true);
        if (reverse) op.Attr("reverse", true);
        op.CheckGrad({.inputs = {"X"}});
      }
  OpTest flat("cumsum");
  flat.Input("X", RandomTensor(DType::kFloat32, {3, 5}, 44)).Attr("flatten", true).Output("Out");
  flat.CheckGrad({.inputs = {"X"}});
}

}  // namespace
}  // namespace paddlec::testing
