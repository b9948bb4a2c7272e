// Program-level test helpers.
#include "testing/program_runner.h"

#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"

namespace paddlec::testing {

namespace pb = ::paddle::framework::proto;

StatusOr<std::unique_ptr<ir::Module>> CompileText(const std::string& text, const std::string& pipeline,
                                                  const std::string& file) {
  PC_ASSIGN_OR_RETURN(auto module, ir::ParseModule(text, ir::Format::kText, file));
  passes::PassManager pm;
  PC_RETURN_IF_ERROR(pm.AddPipeline(pipeline));
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  PC_RETURN_IF_ERROR(pm.Run(*module, ctx));
  return module;
}

StatusOr<std::unique_ptr<ir::Module>> CompileOp(const pb::OpDesc& op, const std::map<std::string, Tensor>& feeds) {
  paddlec::proto::CompiledProgram cp;
  auto* block = cp.mutable_main_program()->add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  *block->add_ops() = op;
  for (const auto& [name, t] : feeds) {
    auto* v = block->add_vars();
    v->set_name(name);
    ir::SetVarShape(v, t.dims(), t.dtype());
  }
  PC_ASSIGN_OR_RETURN(auto module, ir::Module::Create(std::move(cp)));
  passes::PassManager pm;
  PC_RETURN_IF_ERROR(pm.AddPipeline("validate,infer-shape"));
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  PC_RETURN_IF_ERROR(pm.Run(*module, ctx));
  return module;
}

StatusOr<std::map<std::string, Tensor>> RunModule(ir::Module& module, const std::map<std::string, Tensor>& feeds,
                                                  const std::vector<std::string>& fetch, RunOptions options) {
  std::map<std::string, Tensor> out;
  {
    PC_ASSIGN_OR_RETURN(auto exec,
                        exec::Executor::Create(options.place, {.num_threads = options.threads, .seed = options.seed}));
    runtime::Scope scope;
    for (const auto& [name, t] : feeds) PC_RETURN_IF_ERROR(exec->device().CopyFromHost(t, scope.Var(name).tensor()));
    PC_ASSIGN_OR_RETURN(auto plan,
                        exec->Prepare(module.main().global_block(), scope, {.start_step = options.start_step}));
    PC_RETURN_IF_ERROR(plan->Run());
    for (const auto& name : fetch) {
      runtime::Variable* v = scope.FindLocal(name);
      if (v == nullptr || !v->tensor().initialized())
        return MakeError(ErrorCode::kNotFound, "variable '{}' was not produced", name);
      Tensor host;
      PC_RETURN_IF_ERROR(exec->device().CopyToHost(v->tensor(), host, HostAllocator()));
      out[name] = std::move(host);
    }
  }
  // A CPU context sets OpenMP's (process-wide) thread count; put back the one OpTest runs with.
  if (options.threads != 1) PC_RETURN_IF_ERROR(exec::Executor::Create(Place::CPU(), {.num_threads = 1}).status());
  return out;
}

std::map<std::string, Tensor> RunOp(const pb::OpDesc& op, const std::map<std::string, Tensor>& feeds,
                                    const std::vector<std::string>& fetch, RunOptions options) {
  auto module = CompileOp(op, feeds);
  REQUIRE_OK(module.status());
  auto out = RunModule(**module, feeds, fetch, options);
  REQUIRE_OK(out.status());
  return std::move(out).value();
}

std::map<std::string, Tensor> RunOpNamedBySlot(const std::string& type,
                                               const std::vector<std::pair<std::string, Tensor>>& inputs,
                                               const std::vector<pb::OpDesc::Attr>& attrs,
                                               const std::vector<std::string>& outputs, RunOptions options) {
  pb::OpDesc op;
  op.set_type(type);
  std::map<std::string, Tensor> feeds;
  for (const auto& [slot, t] : inputs) {
    ops::AddInput(op, slot, {slot});
    feeds[slot] = t;
  }
  for (const auto& slot : outputs) ops::AddOutput(op, slot, {slot});
  for (const auto& a : attrs) *op.add_attrs() = a;
  return RunOp(op, feeds, outputs, options);
}

std::vector<pb::OpDesc> MakeGradOps(const pb::OpDesc& fwd, const std::unordered_set<std::string>& no_grad) {
  const ops::OpRegistry& r = ops::GlobalOpRegistry();
  const ops::OpInfo* info = r.Find(fwd.type());
  REQUIRE(info != nullptr);
  REQUIRE(static_cast<bool>(info->grad_maker()));
  ops::GradMakerContext ctx(fwd, no_grad, r);
  Status st = info->grad_maker()(ctx);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? std::string() : st.error().Render()));
  return ctx.emitted();
}

std::vector<std::string> SlotArgs(const pb::OpDesc& op, const std::string& slot, bool input) {
  for (const auto& v : input ? op.inputs() : op.outputs())
    if (v.parameter() == slot) return {v.arguments().begin(), v.arguments().end()};
  return {};
}

StepRunner::StepRunner(std::string type, std::map<std::string, std::string> inputs,
                       std::map<std::string, std::string> outputs, std::vector<pb::OpDesc::Attr> attrs)
    : type_(std::move(type)), inputs_(std::move(inputs)), outputs_(std::move(outputs)), attrs_(std::move(attrs)) {}

StepRunner::~StepRunner() = default;

Status StepRunner::Start(const std::map<std::string, Tensor>& feeds, RunOptions options) {
  pb::OpDesc op;
  op.set_type(type_);
  for (const auto& [slot, var] : inputs_) ops::AddInput(op, slot, {var});
  for (const auto& [slot, var] : outputs_) ops::AddOutput(op, slot, {var});
  for (const auto& a : attrs_) *op.add_attrs() = a;
  PC_ASSIGN_OR_RETURN(module_, CompileOp(op, feeds));
  PC_ASSIGN_OR_RETURN(exec_,
                      exec::Executor::Create(options.place, {.num_threads = options.threads, .seed = options.seed}));
  for (const auto& [name, t] : feeds) PC_RETURN_IF_ERROR(exec_->device().CopyFromHost(t, scope_.Var(name).tensor()));
  PC_ASSIGN_OR_RETURN(plan_,
                      exec_->Prepare(module_->main().global_block(), scope_, {.start_step = options.start_step}));
  return Status::OK();
}

Status StepRunner::Step() { return plan_->Run(); }

Status StepRunner::Set(const std::string& name, const Tensor& value) {
  return exec_->device().CopyFromHost(value, scope_.Var(name).tensor());
}

Tensor StepRunner::Get(const std::string& name) {
  Tensor host;
  runtime::Variable* v = scope_.FindLocal(name);
  REQUIRE_MESSAGE(v != nullptr, "no variable " << name);
  REQUIRE(exec_->device().CopyToHost(v->tensor(), host, HostAllocator()).ok());
  return host;
}

}  // namespace paddlec::testing
