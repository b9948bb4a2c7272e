// Control-flow ops: conditional_block runs a sub-block when its condition holds; while runs one as
// long as its condition holds, and while_grad runs the gradient of its body back over the steps
// (control/control_kernels.h).
//
// The sub-block is executed through a SubBlockRunner the runtime provides (a plan over a child
// scope, built on first use and kept), so the ops layer needs no knowledge of plans. The op has no
// shape function of its own: its outputs are whatever the sub-block writes. Shapes of the
// sub-block's outputs are inferred at compile time by the infer-shape pass, which visits a
// sub-block right after the op that runs it; at run time the plan re-prepares the ops after a
// conditional_block whenever the sub-block produced new shapes.
#include "control/control_kernels.h"
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
      : scalar_(init.attrs.Get<bool>("is_scalar_condition")), run_(init) {}

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
    return run_.Run(ctx, run, kScope);
  }

 private:
  bool scalar_;
  control::ConditionalBlockRun run_;
};

Status GradFromBackwardPass(GradMakerContext& ctx) {
  return MakeError(ErrorCode::kInternal,
                   "{}'s gradient block is made by the backward pass (src/passes/backward.cc), not by a grad maker",
                   ctx.forward().type());
}

// X@GRAD is shaped and typed like X.
Status InferWhileGrad(InferShapeContext& ctx) {
  for (int i = 0; i < ctx.NumInputs(control::while_grad::kX) && i < ctx.NumOutputs(control::while_grad::kXGrad); ++i)
    ctx.SetOutput(control::while_grad::kXGrad, i, ctx.InputDims(control::while_grad::kX, i),
                  ctx.InputDType(control::while_grad::kX, i));
  return Status::OK();
}

// Input@GRAD is shaped and typed like Input.
Status InferConditionalBlockGrad(InferShapeContext& ctx) {
  for (int i = 0; i < ctx.NumInputs(control::cond_grad::kInput) && i < ctx.NumOutputs(control::cond_grad::kInputGrad);
       ++i)
    ctx.SetOutput(control::cond_grad::kInputGrad, i, ctx.InputDims(control::cond_grad::kInput, i),
                  ctx.InputDType(control::cond_grad::kInput, i));
  return Status::OK();
}

void RegisterWhileOps(OpRegistry& r) {
  namespace w = control::while_op;
  namespace g = control::while_grad;
  r.Add("while")
      .Doc(
          "Runs the ops of `sub_block` again and again while Condition holds; every step in a scope of its own "
          "(kept for the gradient) unless is_test.")
      .Input(w::kX, "Variables of enclosing blocks the body reads; those also in Out are loop-carried.",
             kDuplicable | kDispensable)
      .Input(w::kCondition, "One bool, rewritten by the body: the loop stops when it is false.")
      .Output(w::kOut, "Variables of enclosing blocks the body writes.", kDuplicable | kDispensable)
      .Output(w::kStepScopes, "The scopes of the steps (a STEP_SCOPES variable), for while_grad.", kDispensable)
      .BlockAttr("sub_block", "The loop body; its parent must be the op's block.")
      .Attr("is_test", false, "Inference: one scope reused by every step, nothing kept for a gradient.")
      .Attr("skip_eager_deletion_vars", std::vector<std::string>{}, "PaddlePaddle memory hint; ignored.")
      .ExtraAttr()
      .Grad(GradFromBackwardPass)
      .KernelDTypeFixed(DType::kFloat32)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<control::WhileKernel>());

  r.Add("while_grad")
      .Doc(
          "The gradient of a while loop: runs `sub_block` (the body's gradient) once per forward step, last "
          "first, in that step's scope; adds up the gradients of X over the steps.")
      .Input(g::kX, "The forward op's X.", kDuplicable | kDispensable)
      .Input(g::kOut, "The forward op's Out.", kDuplicable | kDispensable)
      .Input(g::kOutGrad, "Gradients of Out (@EMPTY@ for non-float ones).", kDuplicable | kDispensable)
      .Input(g::kStepScopes, "The forward op's StepScopes (none when the loop ran no step).", kDispensable)
      .Output(g::kXGrad, "Gradients of X (@EMPTY@ where none is needed).", kDuplicable | kDispensable)
      .BlockAttr("sub_block", "The body's gradient block, made by the backward pass.")
      .Attr("is_test", false, "Copied from the forward op; must be false.")
      .Attr("skip_eager_deletion_vars", std::vector<std::string>{}, "PaddlePaddle memory hint; ignored.")
      .ExtraAttr()
      .InferShape(InferWhileGrad)
      .NoGradient()
      .KernelDTypeFixed(DType::kFloat32)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<control::WhileGradKernel>());
}

}  // namespace

void RegisterControlOps(OpRegistry& r) {
  RegisterWhileOps(r);
  r.Add("conditional_block")
      .Doc("Runs the ops of `sub_block` (in a child scope) when the condition holds; otherwise does nothing.")
      .Input(kCond, "The condition: one bool when is_scalar_condition, else tensors that must all be non-empty.",
             kDuplicable)
      .Input(kInput, "Variables the sub-block reads (declares the data dependence).", kDuplicable | kDispensable)
      .Output(kOut, "Variables the sub-block writes, declared in an enclosing block.", kDuplicable | kDispensable)
      .Output(kScope, "The STEP_SCOPES variable holding the block's scope when it ran, for the gradient.",
              kDispensable)
      .BlockAttr("sub_block", "The block to run; its parent must be the op's block.")
      .Attr("is_scalar_condition", false, "Cond is a single bool rather than a list of tensors to check.")
      .Attr("skip_eager_deletion_vars", std::vector<std::string>{}, "PaddlePaddle memory hint; ignored.")
      .ExtraAttr()
      .Grad(GradFromBackwardPass)
      .KernelDTypeFixed(DType::kFloat32)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<ConditionalBlockKernel>());

  namespace g = control::cond_grad;
  r.Add("conditional_block_grad")
      .Doc("The gradient of a conditional_block: runs `sub_block` (the block's gradient) in the forward block's "
           "scope when the forward block ran; otherwise the gradients of Input are zeros.")
      .Input(g::kCond, "The forward op's Cond.", kDuplicable)
      .Input(g::kInput, "The forward op's Input.", kDuplicable | kDispensable)
      .Input(g::kOut, "The forward op's Out.", kDuplicable | kDispensable)
      .Input(g::kOutGrad, "Gradients of Out (@EMPTY@ for non-float ones).", kDuplicable | kDispensable)
      .Input(g::kScope, "The forward op's Scope (empty when the block did not run).", kDispensable)
      .Output(g::kInputGrad, "Gradients of Input (@EMPTY@ where none is needed).", kDuplicable | kDispensable)
      .BlockAttr("sub_block", "The block's gradient block, made by the backward pass.")
      .Attr("is_scalar_condition", false, "Copied from the forward op.")
      .Attr("skip_eager_deletion_vars", std::vector<std::string>{}, "PaddlePaddle memory hint; ignored.")
      .ExtraAttr()
      .InferShape(InferConditionalBlockGrad)
      .NoGradient()
      .KernelDTypeFixed(DType::kFloat32)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<control::ConditionalBlockGradKernel>());
}

}  // namespace paddlec::ops
