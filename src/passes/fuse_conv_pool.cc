// Pass "fuse-conv-pool": the pooling after a fused convolution joins it, so the pair runs on
// oneDNN's blocked layout with reorders only at the region's edges.
//
// Requires: validate, infer-shape, and fuse-conv-bn-act or fuse-conv-bias-act before it.
// Guarantees: a fused_conv2d_bn_act whose output (not persistable) is read only by a pool2d with
// explicit paddings, no ceil_mode, no global or adaptive pooling and NCHW data takes the pooling's
// window as attributes and writes the pooling's output: oneDNN pools the convolution's result in
// the blocked layout (nChw16c) the convolution wrote it in, and only the pooled result, a quarter
// of the size for LeNet's 2x2 windows, is reordered to NCHW. Without it the whole result is
// reordered to NCHW and read back by the pooling. This is layout propagation within a
// convolution-pooling region; tensors between ops stay NCHW.
#include <set>

#include "op_pattern.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

using namespace pattern;  // NOLINT

std::vector<int> Ints(const pb::OpDesc& op, std::string_view name, std::vector<int> fallback) {
  const auto* a = FindAttr(op, name);
  if (a == nullptr) return fallback;
  return std::vector<int>(a->ints().begin(), a->ints().end());
}

class FuseConvPoolPass final : public Pass {
 public:
  std::string_view Name() const override { return "fuse-conv-pool"; }
  std::string_view Summary() const override {
    return "pool a fused convolution's result in oneDNN's blocked layout (pool2d joins fused_conv2d_bn_act)";
  }

  StatusOr<bool> Run(ir::Module& module, PassContext&) override {
    bool changed = false;
    for (int b = 0; b < module.main().num_blocks(); ++b) changed |= FuseBlock(module.main().block(b));
    return changed;
  }

 private:
  bool FuseBlock(ir::Block& block) {
    ir::DefUse du(block);
    auto& ops = *block.desc().mutable_ops();
    std::set<int> removed;
    for (int i = 0; i < ops.size(); ++i) {
      pb::OpDesc& conv = ops[i];
      if (conv.type() != "fused_conv2d_bn_act" || removed.count(i)) continue;
      if (const auto* t = FindAttr(conv, "pooling_type"); t != nullptr && !t->s().empty()) continue;
      const std::string* c = Single(conv, false, "Output");
      if (c == nullptr || du.Readers(*c).size() != 1 || du.Writers(*c).size() != 1) continue;
      const pb::VarDesc* cv = block.FindVar(*c);
      if (cv == nullptr || cv->persistable()) continue;
      const int j = du.Readers(*c)[0];
      const pb::OpDesc& pool = ops[j];
      const std::string* px = Single(pool, true, "X");
      const std::string* out = Single(pool, false, "Out");
      if (pool.type() != "pool2d" || j <= i || px == nullptr || *px != *c || out == nullptr) continue;
      if (BoolAttr(pool, "global_pooling") || BoolAttr(pool, "adaptive") || BoolAttr(pool, "ceil_mode")) continue;
      const auto* alg = FindAttr(pool, "padding_algorithm");
      const auto* layout = FindAttr(pool, "data_format");
      const auto* type = FindAttr(pool, "pooling_type");
      if ((alg != nullptr && alg->s() != "EXPLICIT") || (layout != nullptr && layout->s() == "NHWC")) continue;
      const std::vector<int> ksize = Ints(pool, "ksize", {}), strides = Ints(pool, "strides", {1, 1}),
                             paddings = Ints(pool, "paddings", {0, 0});
      if (ksize.size() != 2 || strides.size() != 2 || (paddings.size() != 2 && paddings.size() != 4)) continue;
      // The convolution's inputs are read where the pooling was: nothing in between may write them.
      bool overwritten = false;
      for (const auto& s : conv.inputs())
        for (const auto& a : s.arguments())
          for (int w : du.Writers(a)) overwritten |= w > i && w < j;
      if (overwritten) continue;
      conv.mutable_outputs(0)->set_arguments(0, *out);
      auto set = [&](pb::OpDesc::Attr a) {
        for (auto& have : *conv.mutable_attrs())
          if (have.name() == a.name()) {
            have = std::move(a);
            return;
          }
        *conv.add_attrs() = std::move(a);
      };
      set(ops::MakeAttr("pooling_type", type != nullptr ? type->s() : std::string("max")));
      set(ops::MakeAttr("pool_ksize", ksize));
      set(ops::MakeAttr("pool_strides", strides));
      set(ops::MakeAttr("pool_paddings", paddings));
      set(ops::MakeAttr("pool_exclusive", FindAttr(pool, "exclusive") == nullptr || BoolAttr(pool, "exclusive")));
      removed.insert(j);
    }
    if (removed.empty()) return false;
    for (auto it = removed.rbegin(); it != removed.rend(); ++it) block.RemoveOp(*it);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseConvPoolPass() { return std::make_unique<FuseConvPoolPass>(); }

}  // namespace paddlec::passes
