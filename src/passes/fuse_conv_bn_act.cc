// Pass "fuse-conv-bn-act": conv2d -> inference batch_norm (-> relu) becomes fused_conv2d_bn_act.
//
// Requires: validate, infer-shape, and batch_norm in inference mode (is_test or use_global_stats,
// e.g. after for-test).
// Guarantees: each chain conv2d -> batch_norm (-> relu) whose intermediate results nobody else reads
// is replaced by one fused_conv2d_bn_act op writing the chain's last output; the batch-norm affine
// map is folded into the filter at run time and the relu runs inside the convolution, so the
// activations are written once instead of two or three times. Chains are left alone when an
// intermediate is persistable, read by another op, or a conv2d asks for PaddlePaddle's own fusions.
// The intermediate variables stay declared but are no longer computed, so they cannot be fetched.
#include <set>

#include "paddlec/ops/attrs.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

namespace pb = ::paddle::framework::proto;

const std::string* Single(const pb::OpDesc& op, bool input, std::string_view slot) {
  for (const auto& s : input ? op.inputs() : op.outputs())
    if (s.parameter() == slot && s.arguments_size() == 1) return &s.arguments(0);
  return nullptr;
}

const pb::OpDesc::Attr* FindAttr(const pb::OpDesc& op, std::string_view name) {
  for (const auto& a : op.attrs())
    if (a.name() == name) return &a;
  return nullptr;
}

bool BoolAttr(const pb::OpDesc& op, std::string_view name) {
  const auto* a = FindAttr(op, name);
  return a != nullptr && a->type() == pb::BOOLEAN && a->b();
}

class FuseConvBnActPass final : public Pass {
 public:
  std::string_view Name() const override { return "fuse-conv-bn-act"; }
  std::string_view Summary() const override {
    return "fuse conv2d + inference batch_norm (+ relu) into fused_conv2d_bn_act";
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
    auto only_reader = [&](const std::string& var, int reader) {
      auto readers = du.Readers(var);
      auto writers = du.Writers(var);
      const pb::VarDesc* v = block.FindVar(var);
      return readers.size() == 1 && readers[0] == reader && writers.size() == 1 && v && !v->persistable();
    };
    for (int i = 0; i < ops.size(); ++i) {
      const pb::OpDesc& conv = ops[i];
      if (conv.type() != "conv2d" || removed.count(i)) continue;
      if (BoolAttr(conv, "fuse_relu") || BoolAttr(conv, "fuse_residual_connection") || BoolAttr(conv, "use_addto"))
        continue;
      const std::string* c = Single(conv, false, "Output");
      if (c == nullptr || du.Readers(*c).size() != 1) continue;
      int j = du.Readers(*c)[0];
      const pb::OpDesc& bn = ops[j];
      if (bn.type() != "batch_norm" || j <= i || !only_reader(*c, j)) continue;
      if (!BoolAttr(bn, "is_test") && !BoolAttr(bn, "use_global_stats")) continue;
      if (BoolAttr(bn, "trainable_statistics") || BoolAttr(bn, "fuse_with_relu")) continue;
      const auto* layout = FindAttr(bn, "data_layout");
      if (layout != nullptr && layout->s() != "NCHW" && layout->s() != "AnyLayout") continue;
      if (Single(bn, true, "MomentumTensor") != nullptr) continue;
      const std::string* x = Single(bn, true, "X");
      const std::string* y = Single(bn, false, "Y");
      if (x == nullptr || *x != *c || y == nullptr) continue;
      // The statistics outputs must be the statistics themselves (unchanged in inference) and the
      // saved ones unread, or dropping batch_norm would lose something someone reads.
      bool outputs_ok = true;
      for (auto [out, in] : {std::pair{"MeanOut", "Mean"}, std::pair{"VarianceOut", "Variance"}}) {
        const std::string* o = Single(bn, false, out);
        const std::string* v = Single(bn, true, in);
        if (o != nullptr && (v == nullptr || *o != *v) && !du.Readers(*o).empty()) outputs_ok = false;
      }
      for (const char* saved : {"SavedMean", "SavedVariance", "ReserveSpace"})
        if (const std::string* s = Single(bn, false, saved); s != nullptr && !du.Readers(*s).empty()) outputs_ok = false;
      if (!outputs_ok) continue;

      std::string out = *y, activation;
      int k = -1;
      if (du.Readers(*y).size() == 1) {
        int r = du.Readers(*y)[0];
        const std::string* rin = Single(ops[r], true, "X");
        if (ops[r].type() == "relu" && r > j && rin && *rin == *y && only_reader(*y, r)) {
          k = r;
          activation = "relu";
          out = *Single(ops[r], false, "Out");
        }
      }

      pb::OpDesc fused;
      fused.set_type("fused_conv2d_bn_act");
      for (const auto& s : conv.inputs()) *fused.add_inputs() = s;
      for (const char* slot : {"Scale", "Bias", "Mean", "Variance"}) {
        auto* v = fused.add_inputs();
        v->set_parameter(slot);
        v->add_arguments(*Single(bn, true, slot));
      }
      auto* o = fused.add_outputs();
      o->set_parameter("Output");
      o->add_arguments(out);
      for (const char* name : {"strides", "paddings", "padding_algorithm", "dilations", "groups", "data_format",
                               "op_role", "op_namescope"})
        if (const auto* a = FindAttr(conv, name)) *fused.add_attrs() = *a;
      if (const auto* eps = FindAttr(bn, "epsilon")) *fused.add_attrs() = *eps;
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

std::unique_ptr<Pass> CreateFuseConvBnActPass() { return std::make_unique<FuseConvBnActPass>(); }

}  // namespace paddlec::passes
