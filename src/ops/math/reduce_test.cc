// mean, reduce_sum and reduce_mean against double-precision sums: axes, keep_dim, reduce_all, 0-D
// results, out_dtype, unknown dims, shape errors, the parallel paths and gradient checks (float64,
// 1e-7 abs + 1e-6 rel). float32 sums of n elements in [-1, 1] are compared with atol n * 2e-7.
#include <cmath>

#include "math/math_test_util.h"

namespace paddlec::testing {
namespace {

using math_test::FromDoubles;
using math_test::SumTo;

struct ReduceCase {
  const char* name;
  Dims x;
  std::vector<int> dim;  // empty: the default [0]
  bool keep_dim, reduce_all;
  Dims out;   // the expected output shape
  Dims kept;  // X's dims with the reduced axes set to 1, written by hand
};
const ReduceCase kReduceCases[] = {
    {"default dim [0]", {2, 3, 4}, {}, false, false, {3, 4}, {1, 3, 4}},
    {"middle axis", {2, 3, 4}, {1}, false, false, {2, 4}, {2, 1, 4}},
    {"last axis, negative", {7, 513}, {-1}, false, false, {7}, {7, 1}},
    {"first axis, odd size", {513, 7}, {0}, false, false, {7}, {1, 7}},
    {"two axes, keep_dim", {2, 3, 4}, {0, 2}, true, false, {1, 3, 1}, {1, 3, 1}},
    {"reduce_all", {2, 3, 4}, {1}, false, true, {}, {1, 1, 1}},
    {"reduce_all, keep_dim", {2, 3, 4}, {}, true, true, {1, 1, 1}, {1, 1, 1}},
    {"every axis named", {3, 5}, {1, 0}, false, false, {}, {1, 1}},
    {"single element", {1}, {}, false, false, {}, {1}},
    {"0-D input", {}, {}, false, false, {}, {}},
    {"size-1 axes around", {1, 6, 1}, {1}, false, false, {1, 1}, {1, 1, 1}},
};

void SetReduceAttrs(OpTest& t, const ReduceCase& c) {
  if (!c.dim.empty()) t.Attr("dim", c.dim);
  if (c.keep_dim) t.Attr("keep_dim", true);
  if (c.reduce_all) t.Attr("reduce_all", true);
}

TEST_CASE("reduce_sum and reduce_mean over axes, keep_dim and reduce_all") {
  for (const char* type : {"reduce_sum", "reduce_mean"})
    for (const ReduceCase& c : kReduceCases) {
      std::string name = std::string(type) + ": " + c.name;
      CAPTURE(name);
      const bool mean = std::string(type) == "reduce_mean";
      Tensor x = RandomTensor(DType::kFloat32, c.x, 1);
      OpTest t(type);
      t.Input("X", x).Output("Out");
      SetReduceAttrs(t, c);
      REQUIRE_OK(t.Run());
      CHECK(t.CompiledDims("Out") == c.out);
      std::vector<double> ref = SumTo(ToDoubles(x), c.x, c.kept);
      const double count = static_cast<double>(c.x.Numel() / std::max<int64_t>(c.kept.Numel(), 1));
      if (mean)
        for (double& v : ref) v /= count;
      t.ExpectOutput("Out", FromDoubles<float>(c.out, ref), {mean ? 1e-6 : count * 2e-7, 1e-6});
    }
}

TEST_CASE("reduce_sum integer kernels and out_dtype") {
  OpTest i("reduce_sum");
  i.Input("X", MakeTensor<int64_t>({2, 3}, {1, 2, 3, int64_t{1} << 40, 5, 6})).Attr("dim", std::vector<int>{1});
  i.Output("Out");
  REQUIRE_OK(i.Run());
  i.ExpectOutput("Out", MakeTensor<int64_t>({2}, {6, (int64_t{1} << 40) + 11}), {0, 0});

  // int32 summed into int64 (out_dtype 3) does not overflow.
  OpTest w("reduce_sum");
  w.Input("X", MakeTensor<int32_t>({3}, {2000000000, 2000000000, 5})).Attr("out_dtype", 3).Output("Out");
  REQUIRE_OK(w.Run());
  w.ExpectOutput("Out", MakeTensor<int64_t>({}, {4000000005}), {0, 0});

  OpTest f("reduce_mean");
  Tensor x = RandomTensor(DType::kFloat32, {4, 5}, 2);
  f.Input("X", x).Attr("dim", std::vector<int>{1}).Attr("out_dtype", 6).Output("Out");
  REQUIRE_OK(f.Run());
  std::vector<double> ref = SumTo(ToDoubles(x), {4, 5}, {4, 1});
  for (double& v : ref) v /= 5;
  f.ExpectOutput("Out", FromDoubles<double>({4}, ref), {1e-15, 1e-15});
}

TEST_CASE("reduce ops keep unknown dims and report bad axes") {
  struct Unknown {
    std::vector<int> dim;
    bool keep_dim;
    Dims out;
  };
  const Unknown cases[] = {{{1}, false, {-1}}, {{0}, true, {1, 5}}, {{0}, false, {5}}, {{-1}, true, {-1, 1}}};
  for (const Unknown& c : cases) {
    OpTest t("reduce_sum");
    t.Input("X", RandomTensor(DType::kFloat32, {3, 5}, 3)).CompileDims("X", {-1, 5}).Attr("dim", c.dim).Output("Out");
    if (c.keep_dim) t.Attr("keep_dim", true);
    REQUIRE_OK(t.Run());
    CHECK(t.CompiledDims("Out") == c.out);
  }

  struct Bad {
    const char* type;
    std::vector<int> dim;
    int out_dtype;
    const char* message;
  };
  const Bad bad[] = {
      {"reduce_sum", {2}, -1, "dim 2 is out of range for X of shape [2, 3] (rank 2): it must be in [-2, 1]"},
      {"reduce_mean", {-3}, -1, "dim -3 is out of range for X of shape [2, 3] (rank 2): it must be in [-2, 1]"},
      {"reduce_sum", {0, -2}, -1, "dim [0, -2] names axis 0 of X (shape [2, 3]) twice"},
      {"reduce_mean",
       {0},
       3,
       "out_dtype 3 is not supported by reduce_mean: use -1 (X's dtype), 5 (float32) or 6 (float64)"},
      {"reduce_sum",
       {0},
       0,
       "out_dtype 0 is not supported by reduce_sum: use -1 (X's dtype), 2 (int32), 3 (int64), 5 (float32) or 6 "
       "(float64)"},
  };
  for (const Bad& c : bad) {
    OpTest t(c.type);
    t.Input("X", RandomTensor(DType::kFloat32, {2, 3}, 4)).Attr("dim", c.dim).Output("Out");
    if (c.out_dtype != -1) t.Attr("out_dtype", c.out_dtype);
    Status st = t.Compile();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == c.message);
  }
}

TEST_CASE("mean of all elements is 0-D") {
  for (const Dims& d : {Dims{7, 513}, Dims{1}, Dims{}, Dims{2, 3, 4}}) {
    CAPTURE(d.ToString());
    Tensor x = RandomTensor(DType::kFloat32, d, 5);
    OpTest t("mean");
    t.Input("X", x).Output("Out");
    REQUIRE_OK(t.Run());
    CHECK(t.CompiledDims("Out") == Dims{});
    double s = 0;
    for (double v : ToDoubles(x)) s += v;
    t.ExpectOutput("Out", FromDoubles<float>({}, {s / static_cast<double>(d.Numel())}), {1e-6, 1e-6});
  }
  OpTest u("mean");
  u.Input("X", RandomTensor(DType::kFloat32, {3, 4}, 6)).CompileDims("X", {-1, 4}).Output("Out");
  REQUIRE_OK(u.Run());
  CHECK(u.CompiledDims("Out") == Dims{});
}

// 2^20 copies of 0.1f: a float32 running sum drifts by about 1e-3 (relative) here; blocked sums stay
// within 2e-5 even when the compiler does not vectorize them (256-term float blocks).
TEST_CASE("long float32 sums stay accurate") {
  const float v = 0.1f;
  Tensor x = FullTensor<float>({1 << 20}, v);
  OpTest m("mean");
  m.Input("X", x).Output("Out");
  REQUIRE_OK(m.Run());
  m.ExpectOutput("Out", MakeTensor<float>({}, {v}), {0, 2e-5});
  auto threaded = RunOpNamedBySlot("mean", {{"X", x}}, {}, {"Out"}, {.threads = 2});
  ExpectClose(threaded.at("Out"), MakeTensor<float>({}, {v}), {0, 2e-5}, "mean on two threads");

  OpTest s("reduce_sum");
  s.Input("X", FullTensor<float>({2, 1 << 19}, v)).Attr("dim", std::vector<int>{1}).Output("Out");
  REQUIRE_OK(s.Run());
  s.ExpectOutput("Out", FromDoubles<float>({2}, {v * double(1 << 19), v * double(1 << 19)}), {0, 2e-5});
}

TEST_CASE("reduce gradients match central differences") {
  for (const char* type : {"reduce_sum", "reduce_mean"})
    for (const ReduceCase& c : kReduceCases) {
      if (c.x.Numel() > 100) continue;
      std::string name = std::string(type) + ": " + c.name;
      CAPTURE(name);
      OpTest t(type);
      t.Input("X", RandomTensor(DType::kFloat32, c.x, 7)).Output("Out");
      SetReduceAttrs(t, c);
      t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
    }
  OpTest m("mean");
  m.Input("X", RandomTensor(DType::kFloat32, {3, 7}, 8)).Output("Out");
  m.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
}

// Two threads, inputs over 65,536 elements: the last axis (split along rows), the first axis
// (per-thread partials), a middle axis, and everything (a one-element target).
TEST_CASE("reductions on two threads match the references") {
  struct Big {
    Dims x;
    std::vector<int> dim;
    Dims out, kept;
  };
  const Big cases[] = {
      {{513, 300}, {1}, {513}, {513, 1}},
      {{513, 300}, {0}, {300}, {1, 300}},
      {{20, 513, 9}, {1}, {20, 9}, {20, 1, 9}},
      {{300, 513}, {0, 1}, {}, {1, 1}},
  };
  for (const Big& c : cases) {
    CAPTURE(c.x.ToString());
    Tensor x = RandomTensor(DType::kFloat32, c.x, 9);
    auto out = RunOpNamedBySlot("reduce_sum", {{"X", x}}, {ops::MakeAttr("dim", c.dim)}, {"Out"}, {.threads = 2});
    const double count = static_cast<double>(c.x.Numel() / c.kept.Numel());
    ExpectClose(out.at("Out"), FromDoubles<float>(c.out, SumTo(ToDoubles(x), c.x, c.kept)), {count * 2e-7, 1e-6},
                "reduce_sum");
    Tensor dout = RandomTensor(DType::kFloat32, c.out, 10);
    auto g = RunOpNamedBySlot("reduce_mean_grad", {{"X", x}, {"Out@GRAD", dout}}, {ops::MakeAttr("dim", c.dim)},
                                    {"X@GRAD"}, {.threads = 2});
    std::vector<double> d = ToDoubles(dout), ref(c.x.Numel());
    for (int64_t i = 0; i < c.x.Numel(); ++i) ref[i] = d[math_test::Ravel(math_test::Unravel(i, c.x), c.kept)] / count;
    ExpectClose(g.at("X@GRAD"), FromDoubles<float>(c.x, ref), {1e-7, 1e-6}, "reduce_mean_grad");
  }
}

}  // namespace
}  // namespace paddlec::testing
