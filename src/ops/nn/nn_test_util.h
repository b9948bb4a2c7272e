// Test helper for what the one-op OpTest harness cannot express: an op whose output is one of its
// inputs (batch_norm's running statistics) and several steps of one plan (dropout's step counter),
// with a chosen thread count.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "paddlec/ir/program.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/runtime/executor.h"
#include "testing/op_tester.h"

namespace paddlec::testing {

/// One op over named variables, compiled once, run step by step on the CPU.
class StepRunner {
 public:
  /// `inputs`/`outputs`: slot -> variable name (a name may appear on both sides).
  StepRunner(std::string type, std::map<std::string, std::string> inputs, std::map<std::string, std::string> outputs,
             std::vector<ops::pb::OpDesc::Attr> attrs = {})
      : type_(std::move(type)), inputs_(std::move(inputs)), outputs_(std::move(outputs)), attrs_(std::move(attrs)) {}

  /// Compiles the op with `feeds` as the input values and prepares a plan with `threads` threads
  /// and program seed `seed`.
  Status Start(const std::map<std::string, Tensor>& feeds, int threads = 1, uint64_t seed = 7) {
    paddlec::proto::CompiledProgram cp;
    auto* block = cp.mutable_main_program()->add_blocks();
    block->set_idx(0);
    block->set_parent_idx(-1);
    for (const auto& [name, t] : feeds) {
      auto* v = block->add_vars();
      v->set_name(name);
      ir::SetVarShape(v, t.dims(), t.dtype());
    }
    auto* op = block->add_ops();
    op->set_type(type_);
    for (const auto& [slot, var] : inputs_) ops::AddInput(*op, slot, {var});
    for (const auto& [slot, var] : outputs_) ops::AddOutput(*op, slot, {var});
    for (const auto& a : attrs_) *op->add_attrs() = a;
    PC_ASSIGN_OR_RETURN(module_, ir::Module::Create(std::move(cp)));
    passes::PassManager pm;
    PC_RETURN_IF_ERROR(pm.AddPipeline("validate,infer-shape"));
    passes::PassContext ctx{ops::GlobalOpRegistry()};
    PC_RETURN_IF_ERROR(pm.Run(*module_, ctx));
    PC_ASSIGN_OR_RETURN(exec_, runtime::Executor::Create(Place::CPU(), {.num_threads = threads, .seed = seed}));
    for (const auto& [name, t] : feeds) PC_RETURN_IF_ERROR(exec_->device().CopyFromHost(t, scope_.Var(name).tensor()));
    PC_ASSIGN_OR_RETURN(plan_, exec_->Prepare(module_->main().global_block(), scope_));
    return Status::OK();
  }

  Status Step() { return plan_->Run(); }

  /// A copy of a variable's current value.
  Tensor Get(const std::string& name) {
    Tensor host;
    runtime::Variable* v = scope_.FindLocal(name);
    REQUIRE_MESSAGE(v != nullptr, "no variable " << name);
    REQUIRE(exec_->device().CopyToHost(v->tensor(), host, HostAllocator()).ok());
    return host;
  }

 private:
  std::string type_;
  std::map<std::string, std::string> inputs_, outputs_;
  std::vector<ops::pb::OpDesc::Attr> attrs_;
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<runtime::Executor> exec_;
  runtime::Scope scope_;
  std::unique_ptr<runtime::Plan> plan_;
};

}  // namespace paddlec::testing
