// Pass "infer-shape": gives every variable written by an op its dims and dtype.
//
// Requires: validate (ops match their protos, variables are declared).
// Guarantees: every op output variable carries the shape its op's shape function computes from
// the inputs, with -1 where the size is only known at run time (the batch). Ops are visited in
// block order, so a program whose ops are in execution order is fully inferred in one sweep.
// A mismatch (incompatible inputs, or an output declared with a different known shape) is an
// error naming the op, the variables and both shapes.
#include "paddlec/ops/op_checker.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

class InferShapePass final : public Pass {
 public:
  std::string_view Name() const override { return "infer-shape"; }
  std::string_view Summary() const override { return "infer the dims and dtype of every op output"; }

  StatusOr<bool> Run(ir::Module& module, PassContext& ctx) override {
    for (ir::Program* p : {&module.startup(), &module.main()}) {
      for (int b = 0; b < p->num_blocks(); ++b) {
        ir::Block& block = p->block(b);
        for (int i = 0; i < block.num_ops(); ++i)
          PC_RETURN_IF_ERROR(ops::InferShapeAtCompileTime(block.op(i), ctx.registry));
      }
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateInferShapePass() { return std::make_unique<InferShapePass>(); }

}  // namespace paddlec::passes
