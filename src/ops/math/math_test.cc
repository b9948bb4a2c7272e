// scale, sum and square: closed-form references, integer kernels, @EMPTY@ and in-place sums, the
// gradient makers' output, and gradient checks (float64, 1e-7 abs + 1e-6 rel).
#include <cmath>
#include <unordered_set>

#include "math/math_test_util.h"

namespace paddlec::testing {
namespace {

using math_test::FromDoubles;

template <class F>
Tensor MapRef(const Tensor& x, F f) {
  std::vector<double> v = ToDoubles(x);
  for (double& e : v) e = f(e);
  return FromDoubles<float>(x.dims(), v);
}

const ops::pb::OpDesc::Attr* FindAttr(const ops::pb::OpDesc& op, const std::string& name) {
  for (const auto& a : op.attrs())
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<std::string> Args(const google::protobuf::RepeatedPtrField<ops::pb::OpDesc::Var>& slots,
                              const std::string& slot) {
  for (const auto& s : slots)
    if (s.parameter() == slot) return {s.arguments().begin(), s.arguments().end()};
  return {};
}

/// The ops a forward op's gradient maker emits.
std::vector<ops::pb::OpDesc> MakeGrad(const ops::pb::OpDesc& fwd, const std::unordered_set<std::string>& no_grad = {}) {
  const ops::OpRegistry& registry = ops::GlobalOpRegistry();
  ops::GradMakerContext ctx(fwd, no_grad, registry);
  REQUIRE_OK(registry.Find(fwd.type())->grad_maker()(ctx));
  return ctx.emitted();
}

// ---- scale ------------------------------------------------------------------------------------

TEST_CASE("scale: defaults, bias before and after, odd sizes") {
  for (const Dims& d : {Dims{1}, Dims{7}, Dims{3, 513}}) {
    CAPTURE(d.ToString());
    Tensor x = RandomTensor(DType::kFloat32, d, 1);
    OpTest id("scale");
    id.Input("X", x).Output("Out");
    REQUIRE_OK(id.Run());
    id.ExpectOutput("Out", x, {0, 0});

    OpTest after("scale");
    after.Input("X", x).Attr("scale", 2.5f).Attr("bias", 0.5f).Output("Out");
    REQUIRE_OK(after.Run());
    after.ExpectOutput("Out", MapRef(x, [](double v) { return 2.5 * v + 0.5; }), {1e-6, 1e-6});

    OpTest before("scale");
    before.Input("X", x).Attr("scale", 2.5f).Attr("bias", 0.5f).Attr("bias_after_scale", false).Output("Out");
    REQUIRE_OK(before.Run());
    before.ExpectOutput("Out", MapRef(x, [](double v) { return 2.5 * (v + 0.5); }), {1e-6, 1e-6});
  }
}

TEST_CASE("scale: integer kernels cast scale and bias to the integer type") {
  OpTest t("scale");
  t.Input("X", MakeTensor<int64_t>({3}, {1, -2, int64_t{1} << 40})).Attr("scale", 3.0f).Attr("bias", 2.0f);
  t.Output("Out");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Out", MakeTensor<int64_t>({3}, {5, -4, (int64_t{3} << 40) + 2}), {0, 0});

  OpTest half("scale");
  half.Input("X", MakeTensor<int32_t>({2}, {7, 9})).Attr("scale", 0.5f).Attr("bias", 1.9f).Output("Out");
  REQUIRE_OK(half.Run());
  half.ExpectOutput("Out", MakeTensor<int32_t>({2}, {1, 1}), {0, 0});  // scale 0, bias 1
}

TEST_CASE("scale: ScaleTensor overrides the attribute; unknown dims pass through") {
  Tensor x = RandomTensor(DType::kFloat32, {4, 3}, 2);
  OpTest t("scale");
  t.Input("X", x).Input("ScaleTensor", MakeTensor<float>({1}, {-3.0f})).Attr("scale", 2.0f).Attr("bias", 1.0f);
  t.CompileDims("X", {-1, 3}).Output("Out");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, 3});
  t.ExpectOutput("Out", MapRef(x, [](double v) { return -3 * v + 1; }), {1e-6, 1e-6});

  OpTest bad("scale");
  bad.Input("X", x).Input("ScaleTensor", MakeTensor<float>({2}, {1, 2})).Output("Out");
  Status st = bad.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "ScaleTensor has shape [2] but must hold exactly one element");
}

TEST_CASE("scale gradient: a scale op on Out@GRAD with bias 0") {
  OpTest t("scale");
  t.Input("X", RandomTensor(DType::kFloat32, {3, 4}, 3)).Attr("scale", -1.5f).Attr("bias", 4.0f).Output("Out");
  t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});

  ops::pb::OpDesc fwd;
  fwd.set_type("scale");
  ops::AddInput(fwd, "X", {"x"});
  ops::AddInput(fwd, "ScaleTensor", {"s"});
  ops::AddOutput(fwd, "Out", {"y"});
  *fwd.add_attrs() = ops::MakeAttr("scale", 2.0f);
  *fwd.add_attrs() = ops::MakeAttr("bias", 3.0f);
  *fwd.add_attrs() = ops::MakeAttr("bias_after_scale", false);
  auto ops = MakeGrad(fwd);
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].type() == "scale");
  CHECK(Args(ops[0].inputs(), "X") == std::vector<std::string>{"y@GRAD"});
  CHECK(Args(ops[0].inputs(), "ScaleTensor") == std::vector<std::string>{"s"});
  CHECK(Args(ops[0].outputs(), "Out") == std::vector<std::string>{"x@GRAD"});
  REQUIRE(FindAttr(ops[0], "scale") != nullptr);
  CHECK(FindAttr(ops[0], "scale")->f() == 2.0f);
  CHECK(FindAttr(ops[0], "bias")->f() == 0.0f);
  CHECK(FindAttr(ops[0], "bias_after_scale")->b() == true);
  CHECK(MakeGrad(fwd, {"x"}).empty());  // X needs no gradient: nothing to emit
}

// ---- sum --------------------------------------------------------------------------------------

TEST_CASE("sum adds same-shaped tensors") {
  std::vector<Tensor> xs{RandomTensor(DType::kFloat32, {3, 513}, 4), RandomTensor(DType::kFloat32, {3, 513}, 5),
                         RandomTensor(DType::kFloat32, {3, 513}, 6)};
  std::vector<double> ref(3 * 513, 0.0);
  for (const Tensor& x : xs) {
    auto v = ToDoubles(x);
    for (size_t i = 0; i < v.size(); ++i) ref[i] += v[i];
  }
  OpTest t("sum");
  t.Inputs("X", xs).Output("Out");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Out", FromDoubles<float>({3, 513}, ref), {1e-6, 1e-6});

  OpTest one("sum");
  one.Inputs("X", {xs[0]}).CompileDims("X", {-1, 513}).Output("Out");
  REQUIRE_OK(one.Run());
  CHECK(one.CompiledDims("Out") == Dims{-1, 513});
  one.ExpectOutput("Out", xs[0], {0, 0});

  OpTest ints("sum");
  ints.Inputs("X", {MakeTensor<int64_t>({2}, {1, int64_t{1} << 40}), MakeTensor<int64_t>({2}, {2, 3})}).Output("Out");
  REQUIRE_OK(ints.Run());
  ints.ExpectOutput("Out", MakeTensor<int64_t>({2}, {3, (int64_t{1} << 40) + 3}), {0, 0});

  OpTest bad("sum");
  bad.Inputs("X", {RandomTensor(DType::kFloat32, {2, 3}, 7), RandomTensor(DType::kFloat32, {2, 4}, 8)}).Output("Out");
  Status st = bad.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "X[1] has shape [2, 4] but X[0] has shape [2, 3]: sum adds tensors of one shape");
}

TEST_CASE("sum skips @EMPTY@ entries and may write one of its inputs") {
  Tensor a = RandomTensor(DType::kFloat32, {700, 100}, 9), b = RandomTensor(DType::kFloat32, {700, 100}, 10);
  Tensor c = RandomTensor(DType::kFloat32, {700, 100}, 11);
  std::vector<double> ref(700 * 100);
  {
    auto va = ToDoubles(a), vb = ToDoubles(b), vc = ToDoubles(c);
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = va[i] + vb[i] + vc[i];
  }
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    ops::pb::OpDesc op;
    op.set_type("sum");
    ops::AddInput(op, "X", {"a", std::string(ir::kEmptyVarName), "b", "c"});
    ops::AddOutput(op, "Out", {"b"});  // in place, as gradient accumulation does
    auto out = RunOp(op, {{"a", a}, {"b", b}, {"c", c}}, {"b"}, {.threads = threads});
    ExpectClose(out.at("b"), FromDoubles<float>({700, 100}, ref), {1e-6, 1e-6}, "sum in place");
  }
}

TEST_CASE("sum gradient: one scale per input that needs it") {
  OpTest t("sum");
  t.Inputs("X", {RandomTensor(DType::kFloat32, {2, 3}, 12), RandomTensor(DType::kFloat32, {2, 3}, 13)}).Output("Out");
  t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});

  ops::pb::OpDesc fwd;
  fwd.set_type("sum");
  ops::AddInput(fwd, "X", {"a", "b", std::string(ir::kEmptyVarName), "c"});
  ops::AddOutput(fwd, "Out", {"s"});
  auto ops = MakeGrad(fwd, {"b"});
  REQUIRE(ops.size() == 2);
  for (size_t i = 0; i < ops.size(); ++i) {
    CHECK(ops[i].type() == "scale");
    CHECK(Args(ops[i].inputs(), "X") == std::vector<std::string>{"s@GRAD"});
    CHECK(FindAttr(ops[i], "scale") == nullptr);  // the default, 1
  }
  CHECK(Args(ops[0].outputs(), "Out") == std::vector<std::string>{"a@GRAD"});
  CHECK(Args(ops[1].outputs(), "Out") == std::vector<std::string>{"c@GRAD"});
}

// ---- square -----------------------------------------------------------------------------------

TEST_CASE("square and its gradient") {
  for (const Dims& d : {Dims{1}, Dims{7}, Dims{3, 513}}) {
    Tensor x = RandomTensor(DType::kFloat32, d, 14, -3, 3);
    OpTest t("square");
    t.Input("X", x).Output("Out");
    REQUIRE_OK(t.Run());
    t.ExpectOutput("Out", MapRef(x, [](double v) { return v * v; }), {1e-6, 1e-6});
  }
  OpTest i("square");
  i.Input("X", MakeTensor<int64_t>({3}, {-3, 0, int64_t{1} << 31})).Output("Out");
  REQUIRE_OK(i.Run());
  i.ExpectOutput("Out", MakeTensor<int64_t>({3}, {9, 0, int64_t{1} << 62}), {0, 0});

  OpTest u("square");
  u.Input("X", RandomTensor(DType::kFloat32, {3, 5}, 16)).CompileDims("X", {-1, 5}).Output("Out");
  REQUIRE_OK(u.Run());
  CHECK(u.CompiledDims("Out") == Dims{-1, 5});

  OpTest g("square");
  g.Input("X", RandomTensor(DType::kFloat32, {3, 5}, 15)).Output("Out");
  g.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
}

}  // namespace
}  // namespace paddlec::testing
