// Pass "fuse-fc": mul + elementwise_add of a bias (+ relu) becomes one fc op.
//
// Requires: validate, infer-shape.
// Guarantees: each chain mul(X, W) -> elementwise_add(., Bias) (-> relu) where W is a persistable
// 2-D weight, Bias a persistable vector of W's width added along the last axis, and the
// intermediate results are read by nothing else (no other op, no gradient op, not persistable) is
// replaced by one fc op writing the chain's last output: one GEMM whose bias and relu run as oneDNN
// post-ops, so the output is written once instead of two or three times. Training programs fuse too:
// their gradient ops read the chain's inputs and outputs, never its intermediates' values, or the
// chain is left alone. The one intermediate a gradient reads is mul's product, as the X of the bias's
// elementwise_add_grad, which needs only its dims (the gradient of a sum is Out@GRAD and its sum over
// the rows, whatever the operands hold): that X becomes the fc's output, of the same declared dims.
// The intermediates stay declared but are no longer computed. fc is also PaddlePaddle's op of the
// same name and meaning.
#include <set>
#include <tuple>

#include "op_pattern.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

using namespace pattern;  // NOLINT

class FuseFcPass final : public Pass {
 public:
  std::string_view Name() const override { return "fuse-fc"; }
  std::string_view Summary() const override { return "fuse mul + elementwise_add bias (+ relu) into fc"; }

  StatusOr<bool> Run(ir::Module& module, PassContext&) override {
    bool changed = false;
    for (int b = 0; b < module.main().num_blocks(); ++b) changed |= FuseBlock(module.main().block(b));
    return changed;
  }

 private:
  static bool IsPersistable(const ir::Block& block, const std::string& name) {
    const pb::VarDesc* v = block.FindVar(name);
    return v != nullptr && v->persistable();
  }

  /// Whether two variables are declared with one dtype and the same known dims.
  static bool SameDecl(const ir::Block& block, const std::string& a, const std::string& b) {
    const pb::VarDesc *va = block.FindVar(a), *vb = block.FindVar(b);
    if (va == nullptr || vb == nullptr || ir::VarDType(*va) != ir::VarDType(*vb)) return false;
    auto da = ir::VarDims(*va), db = ir::VarDims(*vb);
    return da.ok() && db.ok() && *da == *db;
  }

  bool FuseBlock(ir::Block& block) {
    ir::DefUse du(block);
    auto ops = block.desc().ops();  // a copy to read while the block is rebuilt
    std::set<int> removed;
    std::vector<std::pair<int, pb::OpDesc>> replaced;
    // `var` is an intermediate of the chain: written once, read only by op `reader`, not persistable.
    auto private_to = [&](const std::string& var, int reader) {
      auto readers = du.Readers(var);
      return readers.size() == 1 && readers[0] == reader && du.Writers(var).size() == 1 && !IsPersistable(block, var);
    };
    // Op `r` reads `var` only as the X of elementwise_add_grad, which uses X's dims and not its values.
    auto reads_dims_only = [&](const std::string& var, int r) {
      const pb::OpDesc& op = ops[r];
      if (op.type() != "elementwise_add_grad") return false;
      for (const auto* slots : {&op.inputs(), &op.outputs()})
        for (const auto& sl : *slots)
          for (const auto& a : sl.arguments())
            if (a == var && !(slots == &op.inputs() && sl.parameter() == "X")) return false;
      return true;
    };
    std::vector<std::tuple<int, std::string, std::string>> redirected;  // (op, old X, new X)
    for (int i = 0; i < ops.size(); ++i) {
      const pb::OpDesc& mul = ops[i];
      if (mul.type() != "mul" || removed.count(i) || IntAttr(mul, "y_num_col_dims", 1) != 1) continue;
      const std::string* x = Single(mul, true, "X");
      const std::string* w = Single(mul, true, "Y");
      const std::string* m = Single(mul, false, "Out");
      if (x == nullptr || w == nullptr || m == nullptr || !IsPersistable(block, *w)) continue;
      const pb::VarDesc* wv = block.FindVar(*w);
      auto wdims = ir::VarDims(*wv);
      if (!wdims.ok() || wdims->rank() != 2 || du.Readers(*m).empty()) continue;
      const int j = du.Readers(*m)[0];
      const pb::OpDesc& add = ops[j];
      std::vector<int> dims_readers;  // gradient ops that read the product for its dims
      for (int r : du.Readers(*m).subspan(1))
        if (r > j && reads_dims_only(*m, r)) dims_readers.push_back(r);
      if (add.type() != "elementwise_add" || j <= i || dims_readers.size() + 1 != du.Readers(*m).size() ||
          du.Writers(*m).size() != 1 || IsPersistable(block, *m))
        continue;
      const std::string* ax = Single(add, true, "X");
      const std::string* bias = Single(add, true, "Y");
      const std::string* sum = Single(add, false, "Out");
      if (ax == nullptr || *ax != *m || bias == nullptr || sum == nullptr || !IsPersistable(block, *bias)) continue;
      // The bias must be one value per output column, broadcast along the last axis.
      auto bdims = ir::VarDims(*block.FindVar(*bias));
      const int64_t xn = IntAttr(mul, "x_num_col_dims", 1), axis = IntAttr(add, "axis", -1);
      if (!bdims.ok() || bdims->Numel() != (*wdims)[1] || (bdims->rank() != 1 && bdims->rank() != 2)) continue;
      if (bdims->rank() == 2 && (*bdims)[0] != 1) continue;
      if (bdims->rank() == 1 && axis != -1 && axis != xn) continue;
      if (bdims->rank() == 2 && axis != -1 && axis != xn - 1) continue;

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
      // fc reads X and W where the chain's last op was: nothing in between may write them.
      const int last = k >= 0 ? k : j;
      bool overwritten = false;
      for (const std::string* in : {x, w, bias})
        for (int wi : du.Writers(*in)) overwritten |= wi > i && wi < last;
      if (overwritten) continue;
      if (!dims_readers.empty()) {
        if (!SameDecl(block, *m, out)) continue;
        for (int r : dims_readers) redirected.emplace_back(r, *m, out);
      }
      pb::OpDesc fc;
      fc.set_type("fc");
      for (auto [slot, var] : {std::pair{"Input", x}, std::pair{"W", w}, std::pair{"Bias", bias}}) {
        auto* s = fc.add_inputs();
        s->set_parameter(slot);
        s->add_arguments(*var);
      }
      auto* o = fc.add_outputs();
      o->set_parameter("Out");
      o->add_arguments(out);
      *fc.add_attrs() = ops::MakeAttr("in_num_col_dims", static_cast<int>(xn));
      *fc.add_attrs() = ops::MakeAttr("activation_type", activation);
      *fc.add_attrs() = ops::MakeAttr("padding_weights", false);
      for (const char* name : {"op_role", "op_namescope"})
        if (const auto* a = FindAttr(mul, name)) *fc.add_attrs() = *a;
      replaced.emplace_back(i, std::move(fc));
      removed.insert(j);
      if (k >= 0) removed.insert(k);
    }
    if (replaced.empty()) return false;
    auto* block_ops = block.desc().mutable_ops();
    for (auto& [i, op] : replaced) *block_ops->Mutable(i) = std::move(op);
    for (const auto& [r, from, to] : redirected)
      for (auto& sl : *block_ops->Mutable(r)->mutable_inputs())
        if (sl.parameter() == "X")
          for (auto& a : *sl.mutable_arguments())
            if (a == from) a = to;
    for (auto it = removed.rbegin(); it != removed.rend(); ++it) block.RemoveOp(*it);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseFcPass() { return std::make_unique<FuseFcPass>(); }

}  // namespace paddlec::passes
