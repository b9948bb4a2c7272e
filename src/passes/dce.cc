// Pass "dce": removes ops whose results nobody uses, and variables no op names.
//
// Requires: validate.
// Guarantees: in every block, an op is removed when none of its outputs is persistable, read by an
// op of any block, the loss, a parameter's gradient, a feed or fetch target, or a program output,
// and the op has no effect besides its outputs (no sub-block, not feed/fetch/save/print/a collective).
// Program outputs are the fetch targets when the module names them; otherwise, as for `paddlec run`'s
// default fetches, every unread non-gradient variable, so only unread gradients (X@GRAD of an input
// nobody trains) and ops writing nothing that anyone reads are dead then. An output that is dead but
// whose op stays is unbound from a gradient op's dispensable X@GRAD slot, so the kernel skips
// computing it. Finally,
// non-persistable variables that no op names any more (what fusion passes leave behind) are dropped.
// Repeats until nothing changes. Removing an op shifts the indices of the ops after it, from which
// random ops derive their default seeds.
#include <set>
#include <string>

#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

namespace pb = ::paddle::framework::proto;

bool HasEffects(const pb::OpDesc& op) {
  static const std::set<std::string, std::less<>> kEffects = {"feed",
                                                              "fetch",
                                                              "save",
                                                              "save_combine",
                                                              "load",
                                                              "load_combine",
                                                              "print",
                                                              "c_allreduce_sum",
                                                              "c_broadcast",
                                                              "while",
                                                              "conditional_block",
                                                              "recurrent",
                                                              "send",
                                                              "recv"};
  if (kEffects.count(op.type())) return true;
  // Every collective: the other ranks wait for this one's call (and coalesce_tensor's outputs alias its bucket).
  if (op.type().starts_with("c_") || op.type() == "coalesce_tensor" || op.type() == "all_reduce" ||
      op.type() == "broadcast")
    return true;
  for (const auto& a : op.attrs())
    if (a.type() == pb::BLOCK || a.type() == pb::BLOCKS) return true;
  return false;
}

class DcePass final : public Pass {
 public:
  std::string_view Name() const override { return "dce"; }
  std::string_view Summary() const override { return "remove ops whose results are unused, and unused variables"; }

  StatusOr<bool> Run(ir::Module& module, PassContext& ctx) override {
    const auto& c = module.compiled();
    std::set<std::string, std::less<>> keep(c.fetch_targets().begin(), c.fetch_targets().end());
    for (const auto& f : c.feed_targets()) keep.insert(f.name());
    for (const auto& pg : c.param_grads()) keep.insert(pg.grad());
    keep.insert(c.loss());
    const bool outputs_named = c.fetch_targets_size() > 0;
    ir::Program& p = module.main();
    bool changed = false;
    for (bool again = true; again;) {
      again = false;
      std::set<std::string, std::less<>> read, named;
      for (int b = 0; b < p.num_blocks(); ++b)
        for (const auto& op : p.block(b).desc().ops()) {
          for (const auto& s : op.inputs())
            for (const auto& a : s.arguments()) read.insert(a), named.insert(a);
          for (const auto& s : op.outputs())
            for (const auto& a : s.arguments()) named.insert(a);
        }
      for (int b = 0; b < p.num_blocks(); ++b) {
        ir::Block& block = p.block(b);
        auto live = [&](const std::string& v) {
          if (v == ir::kEmptyVarName) return false;
          if (keep.count(v) || read.count(v)) return true;
          const pb::VarDesc* d = block.FindVar(v);
          if (d == nullptr || d->persistable()) return true;
          // Without named fetch targets every unread non-gradient variable is a program output.
          return !outputs_named && v.find("@GRAD") == std::string::npos;
        };
        for (int i = block.num_ops() - 1; i >= 0; --i) {
          pb::OpDesc& op = block.desc().mutable_ops()->at(i);
          if (HasEffects(op)) continue;
          bool any_live = false;
          for (const auto& s : op.outputs())
            for (const auto& a : s.arguments()) any_live |= live(a);
          if (!any_live) {
            block.RemoveOp(i);
            again = changed = true;
            continue;
          }
          const ops::OpInfo* info = ctx.registry.Find(op.type());
          if (info == nullptr) continue;
          // Gradient kernels skip an unbound X@GRAD (they read their outputs with OutOpt).
          if (!op.type().ends_with("_grad")) continue;
          for (auto& s : *op.mutable_outputs()) {
            int idx = info->OutputIndex(s.parameter());
            if (idx < 0 || !info->proto().outputs(idx).dispensable() || s.arguments_size() != 1 ||
                !s.parameter().ends_with("@GRAD"))
              continue;
            if (live(s.arguments(0)) || s.arguments(0) == ir::kEmptyVarName) continue;
            s.set_arguments(0, std::string(ir::kEmptyVarName));
            again = changed = true;
          }
        }
      }
      if (again) continue;
      // Variables no op names any more.
      for (int b = 0; b < p.num_blocks(); ++b) {
        auto* vars = p.block(b).desc().mutable_vars();
        const int before = vars->size();
        for (int i = vars->size() - 1; i >= 0; --i) {
          const pb::VarDesc& v = vars->Get(i);
          if (v.persistable() || named.count(v.name()) || keep.count(v.name())) continue;
          vars->DeleteSubrange(i, 1);
        }
        if (vars->size() != before) {
          p.block(b).RebuildIndex();  // the name index holds positions
          changed = true;
        }
      }
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateDcePass() { return std::make_unique<DcePass>(); }

}  // namespace paddlec::passes
