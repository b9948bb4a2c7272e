// Pass "layout": a tensor passed from one fused convolution to another stays in oneDNN's
// channel-blocked layout, so the reorder to NCHW after the first and the one back before the second
// both disappear (LeNet: conv1's pooled result, read only by conv2).
//
// Requires: validate, infer-shape, the inference fusions (fuse-conv-bn-act, fuse-conv-bias-act,
// fuse-conv-pool) before it, and plan-memory (if any) after it.
// Guarantees: a float32 variable of the global block with known NCHW dims whose channel count is a
// multiple of 16, written once by a fused_conv2d_bn_act and read only as the Input of other
// fused_conv2d_bn_act ops, is written with blocked_output and read with blocked_input; it then holds
// nChw16c (nChw8c without AVX-512: 16 channels is a whole number of blocks on every CPU, so the
// buffer keeps its NCHW size, see nn/conv_onednn.h). Since its bytes are no longer NCHW, it is
// renamed to `<name>@BLOCKED`: fetching the old name after -O2 is an error, never a scrambled
// value. Never changed: feeds, fetch targets, what the caller keeps (PassContext::kept), the loss,
// persistable variables, variables other blocks name. Values are unchanged (the same primitives run, minus two
// reorders).
#include <set>

#include "op_pattern.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

using namespace pattern;  // NOLINT

constexpr std::string_view kFusedConv = "fused_conv2d_bn_act";
constexpr int64_t kChannelMultiple = 16;

void SetBool(pb::OpDesc& op, std::string_view name) {
  for (auto& a : *op.mutable_attrs())
    if (a.name() == name) {
      a = ops::MakeAttr(std::string(name), true);
      return;
    }
  *op.add_attrs() = ops::MakeAttr(std::string(name), true);
}

/// Whether `var` appears in `op` only as its Input.
bool OnlyInput(const pb::OpDesc& op, const std::string& var) {
  for (const auto* slots : {&op.inputs(), &op.outputs()})
    for (const auto& s : *slots)
      for (const auto& a : s.arguments())
        if (a == var && !(slots == &op.inputs() && s.parameter() == "Input")) return false;
  return true;
}

class LayoutPass final : public Pass {
 public:
  std::string_view Name() const override { return "layout"; }
  std::string_view Summary() const override {
    return "keep tensors between fused convolutions in oneDNN's blocked layout (no reorders between them)";
  }

  StatusOr<bool> Run(ir::Module& module, PassContext& ctx) override {
    ir::Program& program = module.main();
    if (program.num_blocks() == 0) return false;
    std::set<std::string, std::less<>> fixed;
    for (const auto& f : module.compiled().feed_targets()) fixed.insert(f.name());
    for (const auto& f : module.compiled().fetch_targets()) fixed.insert(f);
    fixed.insert(ctx.kept.begin(), ctx.kept.end());
    fixed.insert(module.compiled().loss());
    for (int b = 1; b < program.num_blocks(); ++b)
      for (const auto& op : program.block(b).desc().ops())
        for (const auto* slots : {&op.inputs(), &op.outputs()})
          for (const auto& s : *slots)
            for (const auto& a : s.arguments()) fixed.insert(a);
    return RunBlock(program.global_block(), fixed);
  }

 private:
  static bool Blockable(const pb::VarDesc* v) {
    if (v == nullptr || v->persistable() || !ir::IsTensorVar(*v) || ir::VarDType(*v) != DType::kFloat32) return false;
    auto dims = ir::VarDims(*v);
    return dims.ok() && dims->rank() == 4 && (*dims)[1] > 0 && (*dims)[1] % kChannelMultiple == 0;
  }

  static bool RunBlock(ir::Block& block, const std::set<std::string, std::less<>>& fixed) {
    ir::DefUse du(block);
    auto& ops = *block.desc().mutable_ops();
    std::vector<std::string> blocked;
    for (int i = 0; i < ops.size(); ++i) {
      if (ops[i].type() != kFusedConv) continue;
      const std::string* out = Single(ops[i], false, "Output");
      if (out == nullptr || fixed.count(*out) || du.Writers(*out).size() != 1 || du.Readers(*out).empty()) continue;
      if (block.FindVarBlock(*out) != &block || !Blockable(block.FindVar(*out))) continue;
      if (block.FindVar(*out + "@BLOCKED") != nullptr) continue;
      bool ok = true;
      for (int r : du.Readers(*out)) ok = ok && r > i && ops[r].type() == kFusedConv && OnlyInput(ops[r], *out);
      if (!ok) continue;
      SetBool(ops[i], "blocked_output");
      for (int r : du.Readers(*out)) SetBool(ops[r], "blocked_input");
      blocked.push_back(*out);
    }
    if (blocked.empty()) return false;
    for (const std::string& name : blocked) {
      const std::string renamed = name + "@BLOCKED";
      block.FindVar(name)->set_name(renamed);
      for (auto& op : ops)
        for (auto* slots : {op.mutable_inputs(), op.mutable_outputs()})
          for (auto& s : *slots)
            for (auto& a : *s.mutable_arguments())
              if (a == name) a = renamed;
    }
    block.RebuildIndex();  // the name index holds the old names
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateLayoutPass() { return std::make_unique<LayoutPass>(); }

}  // namespace paddlec::passes
