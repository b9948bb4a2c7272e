// The control-flow kernels: conditional blocks and while loops with their gradients (see
// control_kernels.h for the scopes they keep).
#include "control/control_kernels.h"

#include <algorithm>
#include <cstring>

#include "paddlec/core/dtype.h"
#include "paddlec/ir/program.h"
#include "paddlec/runtime/allocator.h"

namespace paddlec::ops::control {

std::vector<std::string> SlotArgs(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& slots,
                                  std::string_view slot) {
  for (const auto& s : slots)
    if (s.parameter() == slot) return {s.arguments().begin(), s.arguments().end()};
  return {};
}

StatusOr<Tensor> DeepCopy(runtime::DeviceContext& device, const Tensor& t) {
  if (t.place().is_cpu() && device.place().is_cpu()) {
    Tensor out;
    PC_RETURN_IF_ERROR(device.CopyFromHost(t, out));  // a deep copy on the CPU
    return out;
  }
  auto host_alloc = runtime::CpuCachingAllocator::Create();
  Tensor host, out;
  PC_RETURN_IF_ERROR(device.CopyToHost(t, host, *host_alloc));
  PC_RETURN_IF_ERROR(device.CopyFromHost(host, out));
  return out;
}

StatusOr<Tensor> ZerosLike(runtime::DeviceContext& device, const Tensor& like) {
  auto host_alloc = runtime::CpuCachingAllocator::Create();
  Tensor host(like.dtype(), like.dims()), out;
  PC_RETURN_IF_ERROR(host.Allocate(*host_alloc));
  if (host.nbytes() > 0) std::memset(host.raw_data(), 0, host.nbytes());
  PC_RETURN_IF_ERROR(device.CopyFromHost(host, out));
  return out;
}

Status AddTo(runtime::DeviceContext& device, Tensor& acc, const Tensor& x) {
  if (acc.dtype() != x.dtype() || !(acc.dims() == x.dims()))
    return MakeError(ErrorCode::kShape, "while_grad: a step's gradient is {} {}, the sum so far {} {}",
                     DTypeName(x.dtype()), x.dims().ToString(), DTypeName(acc.dtype()), acc.dims().ToString());
  auto host_alloc = runtime::CpuCachingAllocator::Create();
  Tensor a, b;
  PC_RETURN_IF_ERROR(device.CopyToHost(acc, a, *host_alloc));
  PC_RETURN_IF_ERROR(device.CopyToHost(x, b, *host_alloc));
  if (!IsFloating(a.dtype()))
    return MakeError(ErrorCode::kUnimplemented, "while_grad adds up floating-point gradients only, not {}",
                     DTypeName(a.dtype()));
  PC_RETURN_IF_ERROR(VisitDType(a.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      T* pa = a.data<T>();
      const T* pb = b.data<T>();
      for (int64_t i = 0; i < a.numel(); ++i) pa[i] += pb[i];
    }
  }));
  return device.CopyFromHost(a, acc);
}

StatusOr<bool> ReadCondition(runtime::DeviceContext& device, const Tensor& c, std::string_view op) {
  if (c.numel() != 1 || c.dtype() != DType::kBool)
    return MakeError(ErrorCode::kRuntime, "{}: Condition must be one bool, got {} {}", op, DTypeName(c.dtype()),
                     c.dims().ToString());
  if (c.place().is_cpu()) return c.data<bool>()[0];
  // A GPU condition: the host must know it to decide what to queue next (one byte, one wait).
  auto host_alloc = runtime::CpuCachingAllocator::Create();
  Tensor host;
  PC_RETURN_IF_ERROR(device.CopyToHost(c, host, *host_alloc));
  return host.data<bool>()[0];
}

namespace {

// The gradients a gradient block writes, per input of its op: input@GRAD where the op's gradient
// output is not @EMPTY@, else empty. (The op's own output may be a renamed partial of input@GRAD.)
std::vector<std::string> BlockGradNames(const std::vector<std::string>& inputs,
                                        const std::vector<std::string>& input_grads) {
  std::vector<std::string> out(input_grads.size());
  for (size_t i = 0; i < input_grads.size() && i < inputs.size(); ++i)
    if (input_grads[i] != ir::kEmptyVarName) out[i] = ir::GradVarName(inputs[i]);
  return out;
}

}  // namespace

// ---- conditional_block ---------------------------------------------------------------------------

ConditionalBlockRun::ConditionalBlockRun(const KernelInit& init)
    : block_(init.attrs.Get<int>("sub_block")), scope_(init.scope), factory_(init.scoped_sub_blocks) {}

ConditionalBlockRun::~ConditionalBlockRun() {
  runner_.reset();
  if (child_ != nullptr) scope_->DeleteChild(child_);
}

Status ConditionalBlockRun::Run(KernelContext& ctx, bool run, OutSlot scope_slot) {
  runtime::Variable* holder = ctx.OutVar(scope_slot);
  if (holder != nullptr) holder->step_scopes().clear();
  if (!run) return Status::OK();
  if (!runner_) {
    if (scope_ == nullptr || factory_ == nullptr)
      return MakeError(ErrorCode::kInternal, "conditional_block needs the runtime's scope and sub-block runner");
    child_ = &scope_->NewChild();
    PC_ASSIGN_OR_RETURN(runner_, (*factory_)(block_, *child_));
  }
  PC_RETURN_IF_ERROR(runner_->Run());
  if (holder != nullptr) holder->step_scopes() = {child_};
  return Status::OK();
}

ConditionalBlockGradKernel::ConditionalBlockGradKernel(const KernelInit& init)
    : block_(init.attrs.Get<int>("sub_block")),
      device_(init.device),
      factory_(init.scoped_sub_blocks),
      block_grad_(BlockGradNames(SlotArgs(init.attrs.op().inputs(), "Input"),
                                 SlotArgs(init.attrs.op().outputs(), "Input@GRAD"))) {}

Status ConditionalBlockGradKernel::Run(KernelContext& ctx) {
  if (factory_ == nullptr)
    return MakeError(ErrorCode::kInternal, "conditional_block_grad needs the runtime's sub-block runner");
  runtime::Variable* holder = ctx.InVar(cond_grad::kScope);
  runtime::Scope* forward = holder != nullptr && !holder->step_scopes().empty() ? holder->step_scopes()[0] : nullptr;
  const int n = ctx.NumOut(cond_grad::kInputGrad);
  if (forward == nullptr) {
    // The block did not run: its inputs did not affect anything.
    for (int i = 0; i < n; ++i)
      if (Tensor* out = ctx.OutOpt(cond_grad::kInputGrad, i)) {
        PC_ASSIGN_OR_RETURN(*out, ZerosLike(*device_, ctx.In(cond_grad::kInput, i)));
      }
    return Status::OK();
  }
  runtime::Scope& g = forward->NewChild();
  struct Drop {
    runtime::Scope* parent;
    runtime::Scope* child;
    ~Drop() { parent->DeleteChild(child); }
  } drop{forward, &g};
  // Local, so the gradient block writes them here (the enclosing scope may hold variables of the name).
  for (int i = 0; i < n && i < static_cast<int>(block_grad_.size()); ++i)
    if (!block_grad_[i].empty()) g.Var(block_grad_[i]);
  {
    PC_ASSIGN_OR_RETURN(auto runner, (*factory_)(block_, g));
    PC_RETURN_IF_ERROR(runner->Run());
  }
  for (int i = 0; i < n && i < static_cast<int>(block_grad_.size()); ++i) {
    Tensor* out = ctx.OutOpt(cond_grad::kInputGrad, i);
    if (out == nullptr || block_grad_[i].empty()) continue;
    runtime::Variable* v = g.FindLocal(block_grad_[i]);
    if (v != nullptr && v->tensor().initialized()) {
      PC_ASSIGN_OR_RETURN(*out, DeepCopy(*device_, v->tensor()));
    } else {
      PC_ASSIGN_OR_RETURN(*out, ZerosLike(*device_, ctx.In(cond_grad::kInput, i)));
    }
  }
  return Status::OK();
}

// ---- while -----------------------------------------------------------------------------------

WhileKernel::WhileKernel(const KernelInit& init)
    : block_(init.attrs.Get<int>("sub_block")),
      is_test_(init.attrs.Get<bool>("is_test")),
      device_(init.device),
      scope_(init.scope),
      factory_(init.scoped_sub_blocks) {
  std::vector<std::string> x = SlotArgs(init.attrs.op().inputs(), "X");
  for (const auto& o : SlotArgs(init.attrs.op().outputs(), "Out"))
    if (std::find(x.begin(), x.end(), o) != x.end()) carried_.push_back(o);
}

WhileKernel::~WhileKernel() {
  test_runner_.reset();
  DropSteps();
  if (test_scope_ != nullptr) scope_->DeleteChild(test_scope_);
}

void WhileKernel::DropSteps() {
  for (runtime::Scope* s : steps_) scope_->DeleteChild(s);
  steps_.clear();
}

Status WhileKernel::Run(KernelContext& ctx) {
  if (scope_ == nullptr || factory_ == nullptr)
    return MakeError(ErrorCode::kInternal, "while needs the runtime's scope and sub-block runner");
  const Tensor& cond = ctx.In(while_op::kCondition);
  runtime::Variable* step_scopes = ctx.OutVar(while_op::kStepScopes);
  if (step_scopes != nullptr) step_scopes->step_scopes().clear();
  DropSteps();
  if (is_test_) {
    if (!test_runner_) {
      test_scope_ = &scope_->NewChild();
      PC_ASSIGN_OR_RETURN(test_runner_, (*factory_)(block_, *test_scope_));
    }
    for (;;) {
      PC_ASSIGN_OR_RETURN(bool go, ReadCondition(*device_, cond, "while"));
      if (!go) return Status::OK();
      PC_RETURN_IF_ERROR(test_runner_->Run());
    }
  }
  for (;;) {
    PC_ASSIGN_OR_RETURN(bool go, ReadCondition(*device_, cond, "while"));
    if (!go) break;
    runtime::Scope& step = scope_->NewChild();
    steps_.push_back(&step);
    // The values the step starts from, kept for its gradient (the body overwrites them outside).
    std::vector<std::pair<std::string, Tensor>> before;
    for (const auto& name : carried_) {
      runtime::Variable* v = scope_->Find(name);
      if (v == nullptr || !v->tensor().initialized()) continue;
      PC_ASSIGN_OR_RETURN(Tensor copy, DeepCopy(*device_, v->tensor()));
      before.emplace_back(name, std::move(copy));
    }
    {
      PC_ASSIGN_OR_RETURN(auto runner, (*factory_)(block_, step));
      PC_RETURN_IF_ERROR(runner->Run());
    }
    for (auto& [name, t] : before) step.Var(name).tensor() = std::move(t);
  }
  if (step_scopes != nullptr) step_scopes->step_scopes() = steps_;
  return Status::OK();
}

// ---- while_grad ------------------------------------------------------------------------------

WhileGradKernel::WhileGradKernel(const KernelInit& init)
    : block_(init.attrs.Get<int>("sub_block")),
      device_(init.device),
      factory_(init.scoped_sub_blocks),
      x_(SlotArgs(init.attrs.op().inputs(), "X")),
      x_grad_(SlotArgs(init.attrs.op().outputs(), "X@GRAD")),
      out_(SlotArgs(init.attrs.op().inputs(), "Out")),
      out_grad_(SlotArgs(init.attrs.op().inputs(), "Out@GRAD")),
      block_x_grad_(BlockGradNames(x_, x_grad_)) {}

Status WhileGradKernel::Run(KernelContext& ctx) {
  if (factory_ == nullptr) return MakeError(ErrorCode::kInternal, "while_grad needs the runtime's sub-block runner");
  static const std::vector<runtime::Scope*> kNoSteps;
  runtime::Variable* holder = ctx.InVar(while_grad::kStepScopes);
  const std::vector<runtime::Scope*>& steps = holder != nullptr ? holder->step_scopes() : kNoSteps;
  if (out_grad_.size() != out_.size())
    return MakeError(ErrorCode::kInvalidArgument, "while_grad: Out has {} variables but Out@GRAD {}", out_.size(),
                     out_grad_.size());
  // The gradient arriving at the end of the current step, per Out variable.
  std::vector<Tensor> incoming(out_.size());
  std::vector<bool> carried(out_.size());
  for (size_t i = 0; i < out_.size(); ++i) {
    carried[i] = std::find(x_.begin(), x_.end(), out_[i]) != x_.end();
    const Tensor* g = ctx.InOpt(while_grad::kOutGrad, static_cast<int>(i));
    const Tensor& value = ctx.In(while_grad::kOut, static_cast<int>(i));
    if (g != nullptr && g->initialized()) {
      PC_ASSIGN_OR_RETURN(incoming[i], DeepCopy(*device_, *g));
    } else if (value.initialized() && IsFloating(value.dtype())) {
      PC_ASSIGN_OR_RETURN(incoming[i], ZerosLike(*device_, value));
    }
  }
  // Sums over the steps of the gradients of X variables that are not loop-carried.
  std::vector<Tensor> sums(x_.size());
  std::vector<bool> summed(x_.size(), false);
  for (size_t j = 0; j < x_.size(); ++j) {
    summed[j] = j < x_grad_.size() && x_grad_[j] != ir::kEmptyVarName &&
                std::find(out_.begin(), out_.end(), x_[j]) == out_.end();
    if (summed[j]) {
      PC_ASSIGN_OR_RETURN(sums[j], ZerosLike(*device_, ctx.In(while_grad::kX, static_cast<int>(j))));
    }
  }
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    runtime::Scope& g = (*it)->NewChild();
    struct Drop {
      runtime::Scope* parent;
      runtime::Scope* child;
      ~Drop() { parent->DeleteChild(child); }
    } drop{*it, &g};
    for (size_t i = 0; i < out_.size(); ++i) {
      if (!incoming[i].initialized()) continue;
      PC_ASSIGN_OR_RETURN(g.Var(out_grad_[i]).tensor(), DeepCopy(*device_, incoming[i]));
    }
    // Local, so the gradient block's writes stay in this step until added up.
    for (size_t j = 0; j < x_.size(); ++j)
      if (summed[j]) g.Var(block_x_grad_[j]);
    {
      PC_ASSIGN_OR_RETURN(auto runner, (*factory_)(block_, g));
      PC_RETURN_IF_ERROR(runner->Run());
    }
    for (size_t i = 0; i < out_.size(); ++i) {
      if (!incoming[i].initialized()) continue;
      if (carried[i]) {
        runtime::Variable* v = g.FindLocal(out_grad_[i]);
        PC_ASSIGN_OR_RETURN(incoming[i], DeepCopy(*device_, v->tensor()));
      } else {
        PC_ASSIGN_OR_RETURN(incoming[i], ZerosLike(*device_, incoming[i]));
      }
    }
    for (size_t j = 0; j < x_.size(); ++j) {
      if (!summed[j]) continue;
      runtime::Variable* v = g.FindLocal(block_x_grad_[j]);
      if (v != nullptr && v->tensor().initialized()) PC_RETURN_IF_ERROR(AddTo(*device_, sums[j], v->tensor()));
    }
  }
  for (size_t j = 0; j < x_.size() && j < x_grad_.size(); ++j) {
    Tensor* out = ctx.OutOpt(while_grad::kXGrad, static_cast<int>(j));
    if (out == nullptr) continue;
    if (summed[j]) {
      *out = std::move(sums[j]);
      continue;
    }
    // Loop-carried: the gradient of the value the loop started from.
    auto o = std::find(out_.begin(), out_.end(), x_[j]);
    size_t i = static_cast<size_t>(o - out_.begin());
    if (incoming[i].initialized()) *out = std::move(incoming[i]);
  }
  return Status::OK();
}

}  // namespace paddlec::ops::control
