// Test helpers for the tensor family: running hand-written programs (for what the one-op harness cannot
// express: @EMPTY@ arguments, several ops) and invoking a gradient maker directly.
#pragma once

#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/runtime/executor.h"
#include "testing/op_tester.h"

namespace paddlec::testing {

/// Parses a CompiledProgram text proto and runs validate + infer-shape on it.
inline StatusOr<std::unique_ptr<ir::Module>> CompileProgramText(const std::string& text) {
  PC_ASSIGN_OR_RETURN(auto module, ir::ParseModule(text, ir::Format::kText, "test.pbtxt"));
  passes::PassManager pm;
  PC_RETURN_IF_ERROR(pm.AddPipeline("validate,infer-shape"));
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  PC_RETURN_IF_ERROR(pm.Run(*module, ctx));
  return module;
}

/// Runs block 0 of `module` once with `feeds` and returns host copies of `fetch`.
inline StatusOr<std::map<std::string, Tensor>> RunModule(ir::Module& module, const std::map<std::string, Tensor>& feeds,
                                                         const std::vector<std::string>& fetch, int threads = 1) {
  PC_ASSIGN_OR_RETURN(auto exec, runtime::Executor::Create(Place::CPU(), {.num_threads = threads, .seed = 7}));
  runtime::Scope scope;
  for (const auto& [name, t] : feeds) PC_RETURN_IF_ERROR(exec->device().CopyFromHost(t, scope.Var(name).tensor()));
  PC_ASSIGN_OR_RETURN(auto plan, exec->Prepare(module.main().global_block(), scope));
  PC_RETURN_IF_ERROR(plan->Run());
  std::map<std::string, Tensor> out;
  for (const auto& name : fetch) {
    runtime::Variable* v = scope.FindLocal(name);
    if (v == nullptr || !v->tensor().initialized())
      return MakeError(ErrorCode::kNotFound, "variable '{}' was not produced", name);
    Tensor host;
    PC_RETURN_IF_ERROR(exec->device().CopyToHost(v->tensor(), host, HostAllocator()));
    out[name] = std::move(host);
  }
  return out;
}

/// The ops a forward op's gradient maker emits (no variable in the no-grad set unless given).
inline std::vector<ops::pb::OpDesc> MakeGradOps(const ops::pb::OpDesc& fwd,
                                                const std::unordered_set<std::string>& no_grad = {}) {
  const ops::OpRegistry& r = ops::GlobalOpRegistry();
  const ops::OpInfo* info = r.Find(fwd.type());
  REQUIRE(info != nullptr);
  REQUIRE(static_cast<bool>(info->grad_maker()));
  ops::GradMakerContext ctx(fwd, no_grad, r);
  Status st = info->grad_maker()(ctx);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? std::string() : st.error().Render()));
  return ctx.emitted();
}

/// Arguments of slot `slot` of an OpDesc's inputs (or outputs).
inline std::vector<std::string> SlotArgs(const ops::pb::OpDesc& op, const std::string& slot, bool input = true) {
  for (const auto& v : input ? op.inputs() : op.outputs())
    if (v.parameter() == slot) return {v.arguments().begin(), v.arguments().end()};
  return {};
}

}  // namespace paddlec::testing
