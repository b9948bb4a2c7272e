// Pass "infer-shape": gives every variable written by an op its dims and dtype.
//
// Requires: validate (ops match their protos, variables are declared).
// Guarantees: every op output variable carries the shape its op's shape function computes from
// the inputs, with -1 where the size is only known at run time (the batch). Ops are visited in
// execution order: the ops of a sub-block right after the op that runs it (conditional_block), so
// the ops after that op see what the sub-block produced.
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
    changed_ = false;
    for (ir::Program* p : {&module.startup(), &module.main()}) {
      std::vector<bool> visited(p->num_blocks(), false);
      for (int b = 0; b < p->num_blocks(); ++b)
        if (!visited[b]) PC_RETURN_IF_ERROR(InferBlock(*p, b, visited, ctx));
    }
    return changed_;
  }

 private:
  bool changed_ = false;  // some output's declaration changed (the pass manager reports it)

  Status InferBlock(ir::Program& p, int b, std::vector<bool>& visited, PassContext& ctx) {
    visited[b] = true;
    ir::Block& block = p.block(b);
    for (int i = 0; i < block.num_ops(); ++i) {
      PC_RETURN_IF_ERROR(ops::InferShapeAtCompileTime(block.op(i), ctx.registry, &changed_));
      for (const auto& a : block.desc().ops(i).attrs()) {
        std::vector<int> subs;
        if (a.type() == ir::pb::BLOCK) subs.push_back(a.block_idx());
        if (a.type() == ir::pb::BLOCKS) subs.assign(a.blocks_idx().begin(), a.blocks_idx().end());
        for (int s : subs)
          if (s > 0 && s < p.num_blocks() && !visited[s]) PC_RETURN_IF_ERROR(InferBlock(p, s, visited, ctx));
      }
    }
    return Status::OK();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateInferShapePass() { return std::make_unique<InferShapePass>(); }

}  // namespace paddlec::passes
