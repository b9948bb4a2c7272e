// Pass "fuse-elementwise": a binary element-wise op followed by an activation becomes one
// fused_elemwise_activation op (PaddlePaddle's op of that name), one pass over the data.
//
// Requires: validate, infer-shape.
// Guarantees: each elementwise_{add,sub,mul} of two operands with one declared shape whose output
// is read only by a relu, tanh, sigmoid or bias-free scale (and is not persistable) is replaced by
// fused_elemwise_activation with functor_list [activation, binary], writing the activation's output.
// ResNet's residual add + relu is the case that matters. Training programs fuse too: gradient ops
// read the binary op's inputs and the activation's output, never the intermediate, or nothing is
// fused. The intermediate stays declared but is no longer computed.
#include <set>

#include "op_pattern.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

using namespace pattern;  // NOLINT

bool IsBinary(const std::string& t) {
  return t == "elementwise_add" || t == "elementwise_sub" || t == "elementwise_mul";
}
bool IsUnary(const pb::OpDesc& op) {
  const std::string& t = op.type();
  if (t == "relu" || t == "tanh" || t == "sigmoid") return true;
  if (t != "scale") return false;
  const auto* bias = FindAttr(op, "bias");
  return bias == nullptr || bias->f() == 0.0f;
}

class FuseElementwisePass final : public Pass {
 public:
  std::string_view Name() const override { return "fuse-elementwise"; }
  std::string_view Summary() const override {
    return "fuse a binary element-wise op and the activation after it into fused_elemwise_activation";
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
    for (int i = 0; i < ops.size(); ++i) {
      const pb::OpDesc& bin = ops[i];
      if (!IsBinary(bin.type()) || removed.count(i)) continue;
      const std::string* x = Single(bin, true, "X");
      const std::string* y = Single(bin, true, "Y");
      const std::string* mid = Single(bin, false, "Out");
      if (x == nullptr || y == nullptr || mid == nullptr) continue;
      const pb::VarDesc *xv = block.FindVar(*x), *yv = block.FindVar(*y), *mv = block.FindVar(*mid);
      if (xv == nullptr || yv == nullptr || mv == nullptr || mv->persistable()) continue;
      auto xd = ir::VarDims(*xv), yd = ir::VarDims(*yv);
      if (!xd.ok() || !yd.ok() || !(*xd == *yd) || ir::VarDType(*xv) != ir::VarDType(*yv)) continue;
      if (du.Readers(*mid).size() != 1 || du.Writers(*mid).size() != 1) continue;
      const int j = du.Readers(*mid)[0];
      const pb::OpDesc& act = ops[j];
      const std::string* ax = Single(act, true, "X");
      const std::string* out = Single(act, false, "Out");
      if (j <= i || !IsUnary(act) || ax == nullptr || *ax != *mid || out == nullptr) continue;
      // The fused op reads X and Y where the activation was: nothing in between may write them.
      bool overwritten = false;
      for (const std::string* in : {x, y})
        for (int w : du.Writers(*in)) overwritten |= w > i && w < j;
      if (overwritten) continue;
      pb::OpDesc fused;
      fused.set_type("fused_elemwise_activation");
      for (auto [slot, var] : {std::pair{"X", x}, std::pair{"Y", y}}) {
        auto* s = fused.add_inputs();
        s->set_parameter(slot);
        s->add_arguments(*var);
      }
      auto* o = fused.add_outputs();
      o->set_parameter("Out");
      o->add_arguments(*out);
      *fused.add_attrs() = ops::MakeAttr("functor_list", std::vector<std::string>{act.type(), bin.type()});
      if (act.type() == "scale") *fused.add_attrs() = *FindAttr(act, "scale");
      for (const char* name : {"op_role", "op_namescope"})
        if (const auto* a = FindAttr(bin, name)) *fused.add_attrs() = *a;
      replaced.emplace_back(i, std::move(fused));
      removed.insert(j);
    }
    if (replaced.empty()) return false;
    auto* block_ops = block.desc().mutable_ops();
    for (auto& [i, op] : replaced) *block_ops->Mutable(i) = std::move(op);
    for (auto it = removed.rbegin(); it != removed.rend(); ++it) block.RemoveOp(*it);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseElementwisePass() { return std::make_unique<FuseElementwisePass>(); }

}  // namespace paddlec::passes
