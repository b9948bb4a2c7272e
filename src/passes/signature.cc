// Feed, fetch and parameter lists of a compiled program.
#include "paddlec/passes/signature.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "paddlec/ir/op_role.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::passes {
namespace {

bool IntermediateSlot(const ops::OpInfo* info, std::string_view slot) {
  if (info == nullptr) return false;
  for (const auto& o : info->proto().outputs())
    if (o.name() == slot) return o.intermediate();
  return false;
}

}  // namespace

void ComputeSignature(ir::Module& module) {
  auto& compiled = module.compiled();
  ir::Block& block = module.main().global_block();
  // Names some op reads and names some op writes; views into the block's descs, which this
  // function does not change.
  using NameSet = std::unordered_set<std::string_view>;
  auto names = [&](bool inputs) {
    NameSet set;
    for (const auto& op : block.desc().ops())
      for (const auto& s : inputs ? op.inputs() : op.outputs())
        for (const auto& a : s.arguments()) set.insert(a);
    return set;
  };

  if (compiled.feed_targets_size() == 0) {
    std::vector<std::string> feeds;
    for (const auto& op : block.desc().ops())
      if (op.type() == "feed")
        for (const auto& s : op.outputs())
          for (const auto& a : s.arguments()) feeds.push_back(a);
    if (feeds.empty()) {
      const NameSet written = names(false);
      NameSet seen;
      for (const auto& op : block.desc().ops())
        for (const auto& s : op.inputs())
          for (const auto& a : s.arguments()) {
            const auto* v = block.FindVar(a);
            if (v == nullptr || v->persistable() || !ir::IsTensorVar(*v) || written.count(a)) continue;
            if (seen.insert(a).second) feeds.push_back(a);
          }
    }
    for (const auto& name : feeds) {
      auto* f = compiled.add_feed_targets();
      f->set_name(name);
      if (const auto* v = block.FindVar(name); v && ir::IsTensorVar(*v)) {
        const auto* t = ir::TensorDescOf(*v);
        f->set_data_type(t->data_type());
        for (int64_t d : t->dims()) f->add_dims(d);
      }
    }
  }

  if (compiled.fetch_targets_size() == 0) {
    std::vector<std::string> fetches;
    for (const auto& op : block.desc().ops())
      if (op.type() == "fetch")
        for (const auto& s : op.inputs())
          for (const auto& a : s.arguments()) fetches.push_back(a);
    if (fetches.empty()) {
      const NameSet read = names(true);
      NameSet seen;
      const ops::OpRegistry& registry = ops::GlobalOpRegistry();
      for (const auto& op : block.desc().ops())
        for (const auto& s : op.outputs()) {
          // An intermediate output (batch_norm's SavedMean) is a by-product, not a result: PaddlePaddle
          // does not compute it in inference mode, so it is no model output.
          if (IntermediateSlot(registry.Find(op.type()), s.parameter())) continue;
          for (const auto& a : s.arguments()) {
            const auto* v = block.FindVar(a);
            if (v == nullptr || v->persistable() || !ir::IsTensorVar(*v) || read.count(a)) continue;
            if (a.find("@GRAD") != std::string::npos) continue;
            if (seen.insert(a).second) fetches.push_back(a);
          }
        }
    }
    for (const auto& f : fetches) compiled.add_fetch_targets(f);
  }

  // A program that carries its own backward and optimizer ops (PaddlePaddle's training programs):
  // the loss is the output of the op marked Forward|Loss, and each update op names a parameter and
  // its gradient (ir/op_role.h).
  auto single = [](const google::protobuf::RepeatedPtrField<ir::pb::OpDesc::Var>& slots, std::string_view name) {
    for (const auto& s : slots)
      if (s.parameter() == name && s.arguments_size() == 1) return s.arguments(0);
    return std::string();
  };
  if (compiled.loss().empty())
    for (const auto& op : block.desc().ops())
      if ((ir::OpRoleOf(op) & ir::kOpRoleLoss) && ir::IsForwardOp(op) && op.outputs_size() > 0 &&
          op.outputs(0).arguments_size() == 1) {
        compiled.set_loss(op.outputs(0).arguments(0));
        break;
      }
  if (compiled.param_grads_size() == 0) {
    std::unordered_set<std::string> seen;
    for (const auto& op : block.desc().ops()) {
      if (!(ir::OpRoleOf(op) & ir::kOpRoleOptimize)) continue;
      std::string param = single(op.inputs(), "Param"), grad = single(op.inputs(), "Grad");
      if (param.empty() || grad.empty() || !seen.insert(param).second) continue;
      auto* pg = compiled.add_param_grads();
      pg->set_param(param);
      pg->set_grad(grad);
    }
  }

  std::vector<std::string> params(compiled.parameters().begin(), compiled.parameters().end());
  for (const auto& v : block.desc().vars())
    if (v.persistable() && ir::IsTensorVar(v)) params.push_back(v.name());
  std::sort(params.begin(), params.end());
  params.erase(std::unique(params.begin(), params.end()), params.end());
  compiled.clear_parameters();
  for (auto& p : params) compiled.add_parameters(std::move(p));
}

}  // namespace paddlec::passes
