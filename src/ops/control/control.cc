// Control-flow ops: conditional_block runs a sub-block when its condition holds.
//
// The sub-block is executed through a SubBlockRunner the runtime provides (a plan over a child
// scope, built on first use and kept), so the ops layer needs no knowledge of plans. The op has no
// shape function of its own: its outputs are whatever the sub-block writes. Shapes of the
// sub-block's outputs are inferred at compile time by the infer-shape pass, which visits a
// sub-block right after the op that runs it; at run time the plan re-prepares the ops after a
// conditional_block whenever the sub-block produced new shapes.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

constexpr InSlot kCond{0, "Cond"};
constexpr InSlot kInput{1, "Input"};
constexpr OutSlot kOut{0, "Out"};
constexpr OutSlot kScope{1, "Scope"};

class ConditionalBlockKernel final : public OpKernel {
 public:
  explicit ConditionalBlockKernel(const KernelInit& init)
      : block_(init.attrs.Get<int>("sub_block")),
        scalar_(init.attrs.Get<bool>("is_scalar_condition")),
        factory_(init.sub_blocks) {}

  Status Run(KernelContext& ctx) override {
    bool run = true;
    if (scalar_) {
      const Tensor& c = ctx.In(kCond);
      if (c.numel() != 1 || c.dtype() != DType::kBool || !c.place().is_cpu())
        return MakeError(ErrorCode::kRuntime, "Cond must be one host bool when is_scalar_condition is set, got {} {}",
                         DTypeName(c.dtype()), c.dims().ToString());
      run = c.data<bool>()[0];
    } else {
      // PaddlePaddle's rule for tensor conditions: run when every Cond tensor is non-empty.
      for (int i = 0; i < ctx.NumIn(kCond); ++i)
        if (const Tensor* c = ctx.InOpt(kCond, i); c == nullptr || c->numel() == 0) run = false;
    }
    if (!run) return Status::OK();
    if (!runner_) {
      if (factory_ == nullptr)
        return MakeError(ErrorCode::kInternal, "conditional_block needs the runtime's sub-block runner");
      PC_ASSIGN_OR_RETURN(runner_, (*factory_)(block_));
    }
    return runner_->Run();
  }

 private:
  int block_;
  bool scalar_;
  const SubBlockFactory* factory_;
  std::unique_ptr<SubBlockRunner> runner_;
};

Status NoBackwardThroughSubBlocks(GradMakerContext& ctx) {
  return MakeError(ErrorCode::kUnimplemented,
                   "backward through sub-blocks ({}) is not supported yet: mark its inputs stop_gradient or keep "
                   "the control flow out of the differentiated part",
                   ctx.forward().type());
}

}  // namespace

void RegisterControlOps(OpRegistry& r) {
  r.Add("conditional_block")
      .Doc("Runs the ops of `sub_block` (in a child scope) when the condition holds; otherwise does nothing.")
      .Input(kCond, "The condition: one bool when is_scalar_condition, else tensors that must all be non-empty.",
             kDuplicable)
      .Input(kInput, "Variables the sub-block reads (declares the data dependence).", kDuplicable | kDispensable)
      .Output(kOut, "Variables the sub-block writes, declared in an enclosing block.", kDuplicable | kDispensable)
      .Output(kScope, "PaddlePaddle's STEP_SCOPES holder; unused by paddlec.", kDispensable)
      .BlockAttr("sub_block", "The block to run; its parent must be the op's block.")
      .Attr("is_scalar_condition", false, "Cond is a single bool rather than a list of tensors to check.")
      .Attr("skip_eager_deletion_vars", std::vector<std::string>{}, "PaddlePaddle memory hint; ignored.")
      .ExtraAttr()
      .Grad(NoBackwardThroughSubBlocks)
      .KernelDTypeFixed(DType::kFloat32)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<ConditionalBlockKernel>());
}

}  // namespace paddlec::ops
