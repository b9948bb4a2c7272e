// Gradients through `while` and `conditional_block`: whole programs with sub-blocks, differentiated by
// the backward pass, against finite differences of the same program's loss and against the unrolled
// program's gradient (the C++ side of tools/python/tests/test_control_flow.py).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "paddlec/exec/executor.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

constexpr int kSteps = 10;
// The control-flow kernels are float32 only, so the differences are of float32 losses. Central
// differences with steps h and h/2, extrapolated: the h^2 error (2e-4 at h = 1e-2 here: ten steps of
// tanh curve a lot) cancels, and the loss's rounding (~1e-7) contributes at most ~1e-5 with steps
// this large. The worst errors seen are 5e-6; a gradient 1 % off (gradients here are 1e-3..1e-1)
// exceeds the tolerance wherever it is above 3e-3.
constexpr double kStep = 2e-2;
constexpr Tolerance kFiniteDiffTol{.atol = 2e-5, .rtol = 1e-3};
// The while loop against the unrolled program: the same float32 kernels, only the order in which
// the steps' gradients of w are added up differs.
constexpr Tolerance kUnrolledTol{.atol = 1e-7, .rtol = 1e-5};

std::string FloatVar(const std::string& name, const std::string& dims, const std::string& extra = "") {
  return fmt::format(
      "vars {{ name: \"{}\" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: FP32 {} }} }} }} "
      "{} }}\n",
      name, dims, extra);
}
std::string BoolVar(const std::string& name) {
  return fmt::format(
      "vars {{ name: \"{}\" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: BOOL dims: 1 }} }} }} }}\n",
      name);
}
std::string ScopesVar(const std::string& name) {
  return fmt::format("vars {{ name: \"{}\" type {{ type: STEP_SCOPES }} }}\n", name);
}
std::string Op(const std::string& type, const std::string& body) {
  return fmt::format("ops {{ type: \"{}\" {} }}\n", type, body);
}
/// fill_constant of shape [1]; dtype 5 is FP32, 0 BOOL.
std::string Fill(const std::string& out, double value, int dtype = 5) {
  return Op("fill_constant",
            fmt::format(R"(outputs {{ parameter: "Out" arguments: "{}" }} attrs {{ name: "shape" type: LONGS longs: 1 }}
                           attrs {{ name: "value" type: FLOAT f: {} }} attrs {{ name: "dtype" type: INT i: {} }})",
                        out, value, dtype));
}
std::string Unary(const std::string& type, const std::string& x, const std::string& out) {
  return Op(type, fmt::format(R"(inputs {{ parameter: "X" arguments: "{}" }}
                                 outputs {{ parameter: "Out" arguments: "{}" }})",
                              x, out));
}
std::string Binary(const std::string& type, const std::string& x, const std::string& y, const std::string& out,
                   const std::string& attrs = "") {
  return Op(type, fmt::format(R"(inputs {{ parameter: "X" arguments: "{}" }} inputs {{ parameter: "Y" arguments: "{}" }}
                                 outputs {{ parameter: "Out" arguments: "{}" }} {})",
                              x, y, out, attrs));
}

// x and w are parameters (persistable) so that the backward pass gives both a gradient.
std::string WhileParams() {
  return FloatVar("x", "dims: 2 dims: 4", "persistable: true") + FloatVar("w", "dims: 4 dims: 4", "persistable: true") +
         FloatVar("loss", "");
}

/// h = x (or x w); `steps` times h = tanh(h w) in a while loop; loss = mean(h). The loop-carried h is
/// written last, by an assign from a body variable, and the body updates the condition (control_kernels.h).
std::string WhileProgram(int steps, bool w_before_loop = false) {
  std::string b0 = "blocks { idx: 0 parent_idx: -1\n" + WhileParams() + FloatVar("h", "dims: 2 dims: 4") +
                   FloatVar("i", "dims: 1", "stop_gradient: true") + FloatVar("n", "dims: 1", "stop_gradient: true") +
                   BoolVar("cond") + ScopesVar("steps") +
                   (w_before_loop ? Binary("mul", "x", "w", "h") : Unary("assign", "x", "h")) + Fill("i", 0) +
                   Fill("n", steps) + Binary("less_than", "i", "n", "cond") +
                   Op("while",
                      R"pb(inputs { parameter: "X" arguments: "h" arguments: "w" arguments: "i" arguments: "n" }
                           inputs { parameter: "Condition" arguments: "cond" }
                           outputs { parameter: "Out" arguments: "h" arguments: "i" arguments: "cond" }
                           outputs { parameter: "StepScopes" arguments: "steps" }
                           attrs { name: "sub_block" type: BLOCK block_idx: 1 })pb") +
                   Unary("mean", "h", "loss") + "}\n";
  std::string b1 = "blocks { idx: 1 parent_idx: 0\n" + FloatVar("hw", "dims: 2 dims: 4") +
                   FloatVar("h_new", "dims: 2 dims: 4") + Binary("mul", "h", "w", "hw") + Unary("tanh", "hw", "h_new") +
                   Unary("assign", "h_new", "h") + Op("scale", R"pb(inputs { parameter: "X" arguments: "i" }
                                                                    outputs { parameter: "Out" arguments: "i" }
                                                                    attrs { name: "bias" type: FLOAT f: 1 })pb") +
                   Binary("less_than", "i", "n", "cond") + "}\n";
  return b0 + b1;
}

/// The same function with the loop written out: one mul and one tanh per step.
std::string UnrolledProgram(bool w_before_loop = false) {
  std::string b0 = "blocks { idx: 0 parent_idx: -1\n" + WhileParams();
  std::string h = "x";
  if (w_before_loop) {
    b0 += FloatVar("h0", "dims: 2 dims: 4") + Binary("mul", "x", "w", "h0");
    h = "h0";
  }
  for (int s = 0; s < kSteps; ++s) {
    std::string hw = "hw" + std::to_string(s), next = "h" + std::to_string(s + 1);
    b0 += FloatVar(hw, "dims: 2 dims: 4") + FloatVar(next, "dims: 2 dims: 4") + Binary("mul", h, "w", hw) +
          Unary("tanh", hw, next);
    h = next;
  }
  return b0 + Unary("mean", h, "loss") + "}\n";
}

/// out = tanh(x t.w + t.b) when flag < 0, else sigmoid(x f.w + f.b), each branch a conditional_block
/// (as layers.cond builds it: the second runs on pred == false); loss = mean(out).
std::string IfElseProgram() {
  auto branch = [](int idx, const std::string& p, const std::string& act) {
    return fmt::format("blocks {{ idx: {} parent_idx: 0\n", idx) + FloatVar(p + ".mul", "dims: 2 dims: 3") +
           FloatVar(p + ".pre", "dims: 2 dims: 3") + FloatVar(p + ".act", "dims: 2 dims: 3") +
           Binary("mul", "x", p + ".w", p + ".mul") +
           Binary("elementwise_add", p + ".mul", p + ".b", p + ".pre", R"pb(attrs { name: "axis" type: INT i: 1 })pb") +
           Unary(act, p + ".pre", p + ".act") + Unary("assign", p + ".act", "out") + "}\n";
  };
  // The branch's block reads x and its own parameters and writes out.
  auto cond_block = [](const std::string& cond, const std::string& p, int idx) {
    return Op("conditional_block", fmt::format(R"(inputs {{ parameter: "Cond" arguments: "{0}" }}
                             inputs {{ parameter: "Input" arguments: "x" arguments: "{1}.w" arguments: "{1}.b" }}
                             outputs {{ parameter: "Out" arguments: "out" }}
                             outputs {{ parameter: "Scope" arguments: "{1}.scope" }}
                             attrs {{ name: "sub_block" type: BLOCK block_idx: {2} }}
                             attrs {{ name: "is_scalar_condition" type: BOOLEAN b: true }})",
                                               cond, p, idx));
  };
  std::string b0 = "blocks { idx: 0 parent_idx: -1\n" + FloatVar("x", "dims: 2 dims: 4", "persistable: true") +
                   FloatVar("loss", "") + FloatVar("flag", "dims: 1", "stop_gradient: true") +
                   FloatVar("zero", "dims: 1", "stop_gradient: true") + FloatVar("out", "dims: 2 dims: 3") +
                   BoolVar("pred") + BoolVar("false_value") + BoolVar("not_pred") + ScopesVar("t.scope") +
                   ScopesVar("f.scope");
  for (const char* p : {"t", "f"})
    b0 += FloatVar(std::string(p) + ".w", "dims: 4 dims: 3", "persistable: true") +
          FloatVar(std::string(p) + ".b", "dims: 3", "persistable: true");
  b0 += Fill("zero", 0) + Binary("less_than", "flag", "zero", "pred") + Fill("false_value", 0, /*dtype=*/0) +
        Binary("equal", "pred", "false_value", "not_pred") + cond_block("pred", "t", 1) +
        cond_block("not_pred", "f", 2) + Unary("mean", "out", "loss") + "}\n";
  return b0 + branch(1, "t", "tanh") + branch(2, "f", "sigmoid");
}

/// A program with its backward ops, prepared once and run with new values of its inputs.
class GradProgram {
 public:
  explicit GradProgram(const std::string& text) {
    auto m = CompileText(text, "validate,infer-shape,backward{loss=loss}", "control_grad.pbtxt");
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().Render()));
    module_ = std::move(m).value();
    auto e = exec::Executor::Create(Place::CPU(), {.num_threads = 1});
    REQUIRE_OK(e.status());
    exec_ = std::move(e).value();
  }

  const ir::Program& program() const { return module_->main(); }

  /// Sets the variables of `values` (the others keep theirs) and runs forward and backward once.
  void Run(const std::map<std::string, Tensor>& values) {
    for (const auto& [name, t] : values) REQUIRE_OK(exec_->device().CopyFromHost(t, scope_.Var(name).tensor()));
    if (!plan_) {
      auto p = exec_->Prepare(module_->main().global_block(), scope_);
      REQUIRE_OK(p.status());
      plan_ = std::move(p).value();
    }
    REQUIRE_OK(plan_->Run());
  }

  Tensor Get(const std::string& name) {
    runtime::Variable* v = scope_.Find(name);
    REQUIRE_MESSAGE((v != nullptr && v->tensor().initialized()), "no value for " << name);
    Tensor host;
    REQUIRE_OK(exec_->device().CopyToHost(v->tensor(), host, HostAllocator()));
    return host;
  }

  double Loss(const std::map<std::string, Tensor>& values) {
    Run(values);
    return ToDoubles(Get("loss"))[0];
  }

  /// d loss / d `name` at `values`, one element at a time: central differences with steps h and h/2,
  /// extrapolated (Richardson) so that their h^2 errors cancel.
  Tensor FiniteDiff(const std::map<std::string, Tensor>& values, const std::string& name, double h = kStep) {
    const Tensor& base = values.at(name);
    const std::vector<float> v = ToVector<float>(base);
    std::vector<double> grad(v.size());
    std::map<std::string, Tensor> moved = values;
    auto central = [&](size_t k, double step) {
      std::vector<float> plus = v, minus = v;
      plus[k] += static_cast<float>(step);
      minus[k] -= static_cast<float>(step);
      moved[name] = MakeTensor<float>(base.dims(), plus);
      double lp = Loss(moved);
      moved[name] = MakeTensor<float>(base.dims(), minus);
      double lm = Loss(moved);
      // Divided by the step actually taken in float32.
      return (lp - lm) / (static_cast<double>(plus[k]) - static_cast<double>(minus[k]));
    };
    for (size_t k = 0; k < v.size(); ++k) grad[k] = (4 * central(k, h / 2) - central(k, h)) / 3;
    Run(values);  // leave the scope at `values`
    return MakeTensor<double>(base.dims(), grad);
  }

 private:
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<exec::Executor> exec_;
  runtime::Scope scope_;
  std::unique_ptr<exec::Plan> plan_;
};

int CountOps(const ir::Program& p, const std::string& type) {
  int n = 0;
  for (int b = 0; b < p.num_blocks(); ++b)
    for (const auto& op : p.block(b).desc().ops()) n += op.type() == type;
  return n;
}

double MaxAbs(const Tensor& t) {
  double m = 0;
  for (double v : ToDoubles(t)) m = std::max(m, std::fabs(v));
  return m;
}

// Values for which ten steps of tanh(h w) neither vanish nor saturate, so every step matters.
std::map<std::string, Tensor> WhileInputs() {
  return {{"x", RandomTensor(DType::kFloat32, {2, 4}, 4, -1.0, 1.0)},
          {"w", RandomTensor(DType::kFloat32, {4, 4}, 3, -0.9, 0.9)}};
}

TEST_CASE("while: the gradient through a 10-step loop matches finite differences and the unrolled program") {
  GradProgram loop(WhileProgram(kSteps));
  REQUIRE(CountOps(loop.program(), "while_grad") == 1);
  const auto inputs = WhileInputs();
  loop.Run(inputs);
  CHECK(ToDoubles(loop.Get("i"))[0] == kSteps);
  Tensor loss = loop.Get("loss"), dw = loop.Get("w@GRAD"), dx = loop.Get("x@GRAD");

  GradProgram unrolled(UnrolledProgram());
  unrolled.Run(inputs);
  ExpectClose(loss, unrolled.Get("loss"), {.atol = 0, .rtol = 1e-6}, "loss vs the unrolled program's");
  ExpectClose(dw, unrolled.Get("w@GRAD"), kUnrolledTol, "w@GRAD vs the unrolled program's");
  ExpectClose(dx, unrolled.Get("x@GRAD"), kUnrolledTol, "x@GRAD vs the unrolled program's");

  ExpectClose(dw, loop.FiniteDiff(inputs, "w"), kFiniteDiffTol, "w@GRAD vs finite differences");
  ExpectClose(dx, loop.FiniteDiff(inputs, "x"), kFiniteDiffTol, "x@GRAD vs finite differences");
  // Not vacuous: the gradients are well above the tolerance.
  CHECK(MaxAbs(dw) > 1e-2);
  CHECK(MaxAbs(dx) > 1e-2);

  // Running again (new step scopes, the old ones dropped) gives the same gradient, bit for bit.
  loop.Run(inputs);
  CHECK(ToVector<float>(loop.Get("w@GRAD")) == ToVector<float>(dw));
}

TEST_CASE("while: a parameter read both before and inside the loop gets the sum of both gradients") {
  // w@GRAD then has two writers, mul_grad and while_grad, whose outputs the backward pass renames to
  // partials that a sum adds up; while_grad must still fill its partial from the gradient block.
  GradProgram loop(WhileProgram(kSteps, /*w_before_loop=*/true));
  GradProgram unrolled(UnrolledProgram(/*w_before_loop=*/true));
  const auto inputs = WhileInputs();
  loop.Run(inputs);
  unrolled.Run(inputs);
  Tensor dw = loop.Get("w@GRAD"), dx = loop.Get("x@GRAD");
  ExpectClose(dw, unrolled.Get("w@GRAD"), kUnrolledTol, "w@GRAD vs the unrolled program's");
  ExpectClose(dx, unrolled.Get("x@GRAD"), kUnrolledTol, "x@GRAD vs the unrolled program's");
  ExpectClose(dw, loop.FiniteDiff(inputs, "w"), kFiniteDiffTol, "w@GRAD vs finite differences");
  CHECK(MaxAbs(dw) > 1e-2);
}

TEST_CASE("while: a loop of zero steps passes the loss's gradient to x unchanged and gives w none") {
  GradProgram loop(WhileProgram(0));
  const auto inputs = WhileInputs();
  loop.Run(inputs);
  CHECK(ToVector<float>(loop.Get("h")) == ToVector<float>(inputs.at("x")));
  // loss = mean(x): each of the 8 elements gets 1/8, exactly.
  CHECK(ToVector<float>(loop.Get("x@GRAD")) == std::vector<float>(8, 0.125f));
  CHECK(ToVector<float>(loop.Get("w@GRAD")) == std::vector<float>(16, 0.0f));
}

TEST_CASE(
    "conditional_block: IfElse gives the taken branch's parameters the finite-difference gradient, the "
    "other branch's zeros") {
  GradProgram prog(IfElseProgram());
  REQUIRE(CountOps(prog.program(), "conditional_block_grad") == 2);
  std::map<std::string, Tensor> inputs = {{"x", RandomTensor(DType::kFloat32, {2, 4}, 4, -1.0, 1.0)},
                                          {"t.w", RandomTensor(DType::kFloat32, {4, 3}, 5, -1.0, 1.0)},
                                          {"t.b", RandomTensor(DType::kFloat32, {3}, 6, -0.5, 0.5)},
                                          {"f.w", RandomTensor(DType::kFloat32, {4, 3}, 7, -1.0, 1.0)},
                                          {"f.b", RandomTensor(DType::kFloat32, {3}, 8, -0.5, 0.5)}};
  for (float flag : {-1.0f, 1.0f}) {
    CAPTURE(flag);
    const std::string taken = flag < 0 ? "t" : "f", other = flag < 0 ? "f" : "t";
    inputs["flag"] = MakeTensor<float>({1}, {flag});
    prog.Run(inputs);
    // x feeds both branches: its gradient is the sum of the two blocks' (one of them zeros).
    for (const std::string& name : {taken + ".w", taken + ".b", std::string("x")}) {
      Tensor grad = prog.Get(name + "@GRAD");
      ExpectClose(grad, prog.FiniteDiff(inputs, name), kFiniteDiffTol, name + "@GRAD vs finite differences");
      CHECK(MaxAbs(grad) > 1e-2);
    }
    for (const std::string& name : {other + ".w", other + ".b"}) {
      Tensor grad = prog.Get(name + "@GRAD");
      CHECK_MESSAGE(MaxAbs(grad) == 0.0, name << "@GRAD of the branch not taken is not zero");
    }
  }
}

}  // namespace
}  // namespace paddlec::testing
