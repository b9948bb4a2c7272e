// Pass "fuse-conv-bias-act": conv2d -> elementwise_add of a per-channel bias (-> relu) becomes one
// fused_conv2d_bn_act without batch-norm inputs: the bias and the relu run inside oneDNN's
// convolution (its bias and post-op), so the activations are written once instead of two or three
// times.
//
// Requires: validate, infer-shape.
// Guarantees: each chain conv2d -> elementwise_add(Y = a persistable [O] vector, axis 1) (-> relu)
// whose intermediates are read by nothing else and are not persistable is replaced by
// fused_conv2d_bn_act(Input, Filter, Bias) writing the chain's last output. Convolutions asking
// for PaddlePaddle's own fusions are left alone. Training programs fuse only where the gradient ops
// do not read the intermediates. The intermediates stay declared but are no longer computed.
#include <set>

#include "op_pattern.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

using namespace pattern;  // NOLINT

class FuseConvBiasActPass final : public Pass {
 public:
  std::string_view Name() const override { return "fuse-conv-bias-act"; }
  std::string_view Summary() const override {
    return "fuse conv2d + per-channel bias add (+ relu) into fused_conv2d_bn_act";
  }

  StatusOr<bool> Run(ir::Module& module, PassContext&) override {
    bool changed = false;
    for (int b = 0; b < module.main().num_blocks(); ++b) changed |= FuseBlock(module.main().block(b));
    return changed;
  }

 private:
  bool FuseBlock(ir::Block& block) {
    ir::DefUse du(block);
    auto ops = block.desc().ops();  // a copy to read while the block is rebuilt
    std::set<int> removed;
    std::vector<std::pair<int, pb::OpDesc>> replaced;
    auto private_to = [&](const std::string& var, int reader) {
      auto readers = du.Readers(var);
      const pb::VarDesc* v = block.FindVar(var);
      return readers.size() == 1 && readers[0] == reader && du.Writers(var).size() == 1 && v && !v->persistable();
    };
    for (int i = 0; i < ops.size(); ++i) {
      const pb::OpDesc& conv = ops[i];
      if (conv.type() != "conv2d" || removed.count(i)) continue;
      if (BoolAttr(conv, "fuse_relu") || BoolAttr(conv, "fuse_residual_connection") || BoolAttr(conv, "use_addto"))
        continue;
      const auto* act_attr = FindAttr(conv, "fuse_activation");
      if (act_attr != nullptr && !act_attr->s().empty()) continue;
      const std::string* c = Single(conv, false, "Output");
      const std::string* filter = Single(conv, true, "Filter");
      if (c == nullptr || filter == nullptr || du.Readers(*c).size() != 1) continue;
      const int j = du.Readers(*c)[0];
      const pb::OpDesc& add = ops[j];
      if (add.type() != "elementwise_add" || j <= i || !private_to(*c, j)) continue;
      const std::string* ax = Single(add, true, "X");
      const std::string* bias = Single(add, true, "Y");
      const std::string* sum = Single(add, false, "Out");
      if (ax == nullptr || *ax != *c || bias == nullptr || sum == nullptr || IntAttr(add, "axis", -1) != 1) continue;
      const pb::VarDesc* bv = block.FindVar(*bias);
      const pb::VarDesc* fv = block.FindVar(*filter);
      if (bv == nullptr || !bv->persistable() || fv == nullptr) continue;
      auto bd = ir::VarDims(*bv), fd = ir::VarDims(*fv);
      if (!bd.ok() || !fd.ok() || bd->rank() != 1 || fd->rank() != 4 || (*bd)[0] != (*fd)[0]) continue;

      std::string out = *sum, activation;
      int k = -1;
      if (du.Readers(*sum).size() == 1) {
        const int r = du.Readers(*sum)[0];
        const std::string* rin = Single(ops[r], true, "X");
        if (ops[r].type() == "relu" && r > j && rin != nullptr && *rin == *sum && private_to(*sum, r)) {
          k = r;
          activation = "relu";
          out = *Single(ops[r], false, "Out");
        }
      }
      // The fused op reads its inputs where the chain's last op was: nothing in between may write them.
      bool overwritten = false;
      const int last = k >= 0 ? k : j;
      for (const auto& s : conv.inputs())
        for (const auto& a : s.arguments())
          for (int w : du.Writers(a)) overwritten |= w > i && w < last;
      for (int w : du.Writers(*bias)) overwritten |= w > i && w < last;
      if (overwritten) continue;

      pb::OpDesc fused;
      fused.set_type("fused_conv2d_bn_act");
      for (const auto& s : conv.inputs())
        if (s.parameter() == "Input" || s.parameter() == "Filter") *fused.add_inputs() = s;
      auto* b = fused.add_inputs();
      b->set_parameter("Bias");
      b->add_arguments(*bias);
      auto* o = fused.add_outputs();
      o->set_parameter("Output");
      o->add_arguments(out);
      for (const char* name : {"strides", "paddings", "padding_algorithm", "dilations", "groups", "data_format",
                               "op_role", "op_namescope"})
        if (const auto* a = FindAttr(conv, name)) *fused.add_attrs() = *a;
      *fused.add_attrs() = ops::MakeAttr("activation", activation);
      replaced.emplace_back(i, std::move(fused));
      removed.insert(j);
      if (k >= 0) removed.insert(k);
    }
    if (replaced.empty()) return false;
    auto* block_ops = block.desc().mutable_ops();
    for (auto& [i, op] : replaced) *block_ops->Mutable(i) = std::move(op);
    for (auto it = removed.rbegin(); it != removed.rend(); ++it) block.RemoveOp(*it);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseConvBiasActPass() { return std::make_unique<FuseConvBiasActPass>(); }

}  // namespace paddlec::passes
