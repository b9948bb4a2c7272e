// Pass "for-test": turns a forward program into an inference program.
//
// Requires: validate (attribute defaults are filled in, so every op that has `is_test` carries it).
// Guarantees: every op with an `is_test` attribute has it set, so batch_norm uses its running
// statistics (and leaves them unchanged) and dropout stops dropping, as PaddlePaddle's
// Program.clone(for_test=True) does. A program with backward or optimizer ops is an error: testing
// a training program means cloning its forward part (what `paddlec train` does for evaluation).
#include "paddlec/ir/op_role.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

class ForTestPass final : public Pass {
 public:
  std::string_view Name() const override { return "for-test"; }
  std::string_view Summary() const override { return "set is_test on every op that has it (inference mode)"; }

  StatusOr<bool> Run(ir::Module& module, PassContext&) override {
    bool changed = false;
    ir::Program& p = module.main();
    for (int b = 0; b < p.num_blocks(); ++b) {
      ir::Block& block = p.block(b);
      for (int i = 0; i < block.num_ops(); ++i) {
        ir::pb::OpDesc& op = block.desc().mutable_ops()->at(i);
        for (auto& a : *op.mutable_attrs()) {
          if (a.name() == "op_role" && (a.i() & ir::kOpRoleNotForward))
            return MakeError(ErrorCode::kInvalidArgument, "for-test needs a forward program, but this one has {} ops",
                             (a.i() & ir::kOpRoleOptimize) ? "optimizer" : "backward")
                .At(block.op(i).Location());
          if (a.name() == "is_test" && a.type() == ir::pb::BOOLEAN && !a.b()) {
            a.set_b(true);
            changed = true;
          }
        }
      }
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateForTestPass() { return std::make_unique<ForTestPass>(); }

}  // namespace paddlec::passes
