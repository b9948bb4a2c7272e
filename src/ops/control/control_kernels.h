// The kernels of the control-flow ops, shared by the CPU registration (control.cc) and the CUDA one
// (control_cuda.cc): while / while_grad, and what conditional_block and conditional_block_grad do once
// their condition is known. The kernels move no numbers themselves: the body and its gradient run as
// plans of their own on the op's device, and the few tensors the loop keeps or adds up per step go
// through the DeviceContext (host copies), so one kernel class serves every place.
//
// Forward (`while`, is_test false): every iteration runs the body in a new step scope, a child of the
// plan's scope. Body-local variables stay in that step scope; variables of enclosing blocks resolve to
// the enclosing scopes and are updated there. A loop-carried variable (in both X and Out) is
// overwritten by each step, so the step scope also keeps its value from before the step under the same
// name: the gradient of step t then reads the values step t read. (So the body writes a loop-carried
// variable once, after its last read, by an assign from a body variable: `h_new = f(h); h = h_new`;
// the gradients of the ops making h_new read h_new, kept in the step scope.) The StepScopes variable
// hands the scopes to while_grad. With is_test the body runs in one reused scope.
//
// Gradient (`while_grad`): its sub_block is the body's gradient block (made by the backward pass,
// src/passes/backward.cc). It runs once per step, last step first, in a child of that step's scope.
// For each Out variable o with gradient o@GRAD, the gradient arriving at the end of the step is put in
// that child scope as o@GRAD: the outer o@GRAD for the last step, then what the previous run of the
// gradient block left as o@GRAD when o is loop-carried (its X@GRAD and Out@GRAD are one variable), or
// zeros when it is not. The other X gradients (parameters, read-only inputs) are added up over the
// steps. The gradient block writes every X@GRAD it is asked for (the backward pass guarantees it).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "paddlec/ops/kernel.h"
#include "paddlec/ops/slots.h"

namespace paddlec::ops::control {

namespace while_op {
constexpr InSlot kX{0, "X"};
constexpr InSlot kCondition{1, "Condition"};
constexpr OutSlot kOut{0, "Out"};
constexpr OutSlot kStepScopes{1, "StepScopes"};
}  // namespace while_op

namespace while_grad {
constexpr InSlot kX{0, "X"};
constexpr InSlot kOut{1, "Out"};
constexpr InSlot kOutGrad{2, "Out@GRAD"};
constexpr InSlot kStepScopes{3, "StepScopes"};
constexpr OutSlot kXGrad{0, "X@GRAD"};
}  // namespace while_grad

namespace cond_grad {
constexpr InSlot kCond{0, "Cond"};
constexpr InSlot kInput{1, "Input"};
constexpr InSlot kOut{2, "Out"};
constexpr InSlot kOutGrad{3, "Out@GRAD"};
constexpr InSlot kScope{4, "Scope"};
constexpr OutSlot kInputGrad{0, "Input@GRAD"};
}  // namespace cond_grad

/// The arguments of one slot of an OpDesc (empty when absent).
std::vector<std::string> SlotArgs(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& slots,
                                  std::string_view slot);

/// A copy of `t` with its own memory, on the same device.
StatusOr<Tensor> DeepCopy(runtime::DeviceContext& device, const Tensor& t);
/// Zeros shaped and typed like `like`, on `device`.
StatusOr<Tensor> ZerosLike(runtime::DeviceContext& device, const Tensor& like);
/// acc += x (floating-point tensors of one shape), on acc's device.
Status AddTo(runtime::DeviceContext& device, Tensor& acc, const Tensor& x);
/// The value of a one-element bool tensor on any device.
StatusOr<bool> ReadCondition(runtime::DeviceContext& device, const Tensor& c, std::string_view op);

/// conditional_block once its condition is known: runs the sub-block in a child scope of the plan's
/// scope that persists between runs, and records in the op's Scope variable (when bound) whether it
/// ran this time: that scope, or nothing. conditional_block_grad reads it.
class ConditionalBlockRun {
 public:
  explicit ConditionalBlockRun(const KernelInit& init);
  ~ConditionalBlockRun();
  Status Run(KernelContext& ctx, bool run, OutSlot scope_slot);

 private:
  int block_;
  runtime::Scope* scope_;
  const ScopedSubBlockFactory* factory_;
  runtime::Scope* child_ = nullptr;
  std::unique_ptr<SubBlockRunner> runner_;
};

/// conditional_block_grad: when the forward block ran, runs the gradient block in a child of the
/// forward's scope (which keeps the values the block computed) and copies out the gradients of
/// Input; when it did not run, they are zeros. The gradients of Out come from the enclosing scope.
class ConditionalBlockGradKernel final : public OpKernel {
 public:
  explicit ConditionalBlockGradKernel(const KernelInit& init);
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override;

 private:
  int block_;
  runtime::DeviceContext* device_;
  const ScopedSubBlockFactory* factory_;
  // Per Input: the gradient the block writes (input@GRAD), or empty where none is asked for. The op's
  // Input@GRAD argument may be another name: the backward pass renames a gradient with several writers.
  std::vector<std::string> block_grad_;
};

class WhileKernel final : public OpKernel {
 public:
  explicit WhileKernel(const KernelInit& init);
  ~WhileKernel() override;
  // Reads its condition on the host to decide whether to run another step.
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override;

 private:
  void DropSteps();
  int block_;
  bool is_test_;
  runtime::DeviceContext* device_;
  runtime::Scope* scope_;
  const ScopedSubBlockFactory* factory_;
  std::vector<std::string> carried_;      // in both X and Out
  std::vector<runtime::Scope*> steps_;    // the last run's step scopes, children of scope_
  runtime::Scope* test_scope_ = nullptr;  // is_test: the one reused scope
  std::unique_ptr<SubBlockRunner> test_runner_;
};

class WhileGradKernel final : public OpKernel {
 public:
  explicit WhileGradKernel(const KernelInit& init);
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override;

 private:
  int block_;
  runtime::DeviceContext* device_;
  const ScopedSubBlockFactory* factory_;
  std::vector<std::string> x_, x_grad_, out_, out_grad_;
  std::vector<std::string> block_x_grad_;  // as ConditionalBlockGradKernel::block_grad_, per X
};

}  // namespace paddlec::ops::control
