// Pass "validate": checks every op against its OpProto and fills in attribute defaults.
//
// Requires: nothing (runs on freshly parsed input).
// Guarantees: every op type is registered; every slot is known, present unless dispensable and
// bound to the right number of variables; every input variable is declared (in its block or an
// enclosing one) and every output variable is declared (implicitly declared ones are added);
// every attribute is known, well-typed, in range and allowed, and omitted ones hold their
// defaults; sub-block references exist; variable declarations are unique with sane dims.
// All problems are reported at once.
#include "paddlec/ops/op_checker.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

class ValidatePass final : public Pass {
 public:
  std::string_view Name() const override { return "validate"; }
  std::string_view Summary() const override {
    return "check every op against its OpProto and fill in attribute defaults";
  }

  StatusOr<bool> Run(ir::Module& module, PassContext& ctx) override {
    std::vector<Error> errors;
    size_t attrs_before = CountAttrs(module);
    ops::CheckOptions options{.fix = true};
    for (ir::Program* p : {&module.startup(), &module.main()}) {
      for (int b = 0; b < p->num_blocks(); ++b) {
        ir::Block& block = p->block(b);
        ops::CheckVars(block, errors);
        for (int i = 0; i < block.num_ops() && static_cast<int>(errors.size()) < options.max_errors; ++i)
          ops::CheckOp(block.op(i), ctx.registry, options, errors);
      }
    }
    PC_RETURN_IF_ERROR(ops::ToStatus(std::move(errors)));
    return CountAttrs(module) != attrs_before;
  }

 private:
  static size_t CountAttrs(ir::Module& m) {
    size_t n = 0;
    for (ir::Program* p : {&m.startup(), &m.main()})
      for (const auto& b : p->desc().blocks()) {
        n += b.vars_size();  // outputs declared implicitly
        for (const auto& op : b.ops()) n += op.attrs_size() + op.outputs_size();
      }
    return n;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateValidatePass() { return std::make_unique<ValidatePass>(); }

}  // namespace paddlec::passes
