// The proto-driven default gradient maker and its helpers.
#include "paddlec/ops/grad_maker.h"

#include <algorithm>

#include "paddlec/ir/program.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

static const pb::OpDesc::Var* FindSlot(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& slots,
                                       std::string_view name) {
  for (const auto& s : slots)
    if (s.parameter() == name) return &s;
  return nullptr;
}

std::vector<std::string> GradMakerContext::Input(std::string_view slot) const {
  const auto* v = FindSlot(fwd_.inputs(), slot);
  return v ? std::vector<std::string>(v->arguments().begin(), v->arguments().end()) : std::vector<std::string>{};
}

std::vector<std::string> GradMakerContext::Output(std::string_view slot) const {
  const auto* v = FindSlot(fwd_.outputs(), slot);
  return v ? std::vector<std::string>(v->arguments().begin(), v->arguments().end()) : std::vector<std::string>{};
}

std::vector<std::string> GradMakerContext::InputGrad(std::string_view slot) const {
  std::vector<std::string> out;
  for (const auto& x : Input(slot))
    out.push_back(IsNoGrad(x) ? std::string(ir::kEmptyVarName) : ir::GradVarName(x));
  return out;
}

std::vector<std::string> GradMakerContext::OutputGrad(std::string_view slot) const {
  std::vector<std::string> out;
  for (const auto& y : Output(slot)) out.push_back(ir::GradVarName(y));
  return out;
}

pb::OpDesc GradMakerContext::NewOp(const std::string& type) const {
  pb::OpDesc op;
  op.set_type(type);
  for (const auto& a : fwd_.attrs()) {
    if (a.name() == "op_role" || a.name() == "op_role_var") continue;  // the backward pass sets these
    *op.add_attrs() = a;
  }
  return op;
}

void AddInput(pb::OpDesc& op, std::string_view slot, const std::vector<std::string>& args) {
  auto* v = op.add_inputs();
  v->set_parameter(std::string(slot));
  for (const auto& a : args) v->add_arguments(a);
}

void AddOutput(pb::OpDesc& op, std::string_view slot, const std::vector<std::string>& args) {
  auto* v = op.add_outputs();
  v->set_parameter(std::string(slot));
  for (const auto& a : args) v->add_arguments(a);
}

Status DefaultGradMaker(GradMakerContext& ctx) {
  const std::string& fwd_type = ctx.forward().type();
  const OpInfo* fwd = ctx.registry().Find(fwd_type);
  const OpInfo* grad = ctx.registry().Find(fwd_type + "_grad");
  if (grad == nullptr || fwd == nullptr)
    return MakeError(ErrorCode::kInternal, "op {} has no gradient op {}_grad", fwd_type, fwd_type);

  pb::OpDesc op = ctx.NewOp(grad->type());
  bool any_output = false;
  for (const auto& out : grad->proto().outputs()) {
    const std::string& name = out.name();
    if (!name.ends_with(ir::kGradSuffix)) continue;
    std::string base = name.substr(0, name.size() - ir::kGradSuffix.size());
    int fwd_in = fwd->InputIndex(base);
    if (fwd_in < 0) continue;
    const auto& no_grad = fwd->no_grad_inputs();
    if (std::find(no_grad.begin(), no_grad.end(), fwd_in) != no_grad.end()) continue;
    std::vector<std::string> args = ctx.InputGrad(base);
    if (std::all_of(args.begin(), args.end(), [](const std::string& a) { return a == ir::kEmptyVarName; }))
      continue;
    AddOutput(op, name, args);
    any_output = true;
  }
  if (!any_output) return Status::OK();  // nothing upstream needs a gradient

  for (const auto& in : grad->proto().inputs()) {
    const std::string& name = in.name();
    std::vector<std::string> args;
    if (name.ends_with(ir::kGradSuffix)) {
      args = ctx.OutputGrad(name.substr(0, name.size() - ir::kGradSuffix.size()));
    } else if (fwd->InputIndex(name) >= 0) {
      args = ctx.Input(name);
    } else if (fwd->OutputIndex(name) >= 0) {
      args = ctx.Output(name);
    }
    if (!args.empty()) AddInput(op, name, args);
  }
  ctx.Emit(std::move(op));
  return Status::OK();
}

}  // namespace paddlec::ops
