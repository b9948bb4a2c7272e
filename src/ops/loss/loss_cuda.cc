// The loss family's CUDA kernels as paddlec kernels: cross_entropy, softmax_with_cross_entropy,
// accuracy, squared_l2_norm and their gradients. Built into libpaddlec_cuda.so only.
//
// Labels outside the classes. The CPU kernels scan the labels and fail before computing. A GPU kernel
// cannot fail that way without the host reading device memory, which would stall the stream every
// step. Instead:
//  * a bad label is never used as an index: its loss and gradient entries are NaN, so the problem is
//    visible in the loss itself;
//  * a one-block kernel finds the first bad label and writes it into a small buffer of mapped
//    (pinned) host memory; an event is recorded after it;
//  * the first Run of every kernel waits for that event (warm-up, like the first step's allocations)
//    and fails exactly as the CPU does, so single runs and tests report the CPU's error;
//  * later Runs only poll the event of the previous Run (cudaEventQuery, which never waits) before
//    queuing their own work, and fail with the CPU's message when it reported a bad label: the error
//    surfaces one step late, without any synchronization in the steady state. The report is sticky
//    (the kernel never clears it), so a poll that finds the event still pending loses nothing.
#include "loss/loss_cuda.h"

#include <functional>
#include <memory>

#include "common/cuda_host.h"

namespace paddlec::ops {
namespace {

/// The deferred label check described above; one per kernel object.
class LabelCheck {
 public:
  /// Makes the error for a bad label `value` at index `index`.
  using Describe = std::function<Error(int64_t index, int64_t value)>;

  LabelCheck() = default;
  LabelCheck(const LabelCheck&) = delete;
  LabelCheck& operator=(const LabelCheck&) = delete;
  ~LabelCheck() {
    if (event_ != nullptr) {
      cudaEventSynchronize(event_);  // a queued check may still write the report
      cudaEventDestroy(event_);
    }
    if (report_ != nullptr) cudaFreeHost(report_);
  }

  /// Called first in every Run: the error a finished earlier check found (never waits).
  Status Poll() {
    if (!armed_) return Status::OK();
    cudaError_t e = cudaEventQuery(event_);
    if (e == cudaErrorNotReady) return Status::OK();
    PC_RETURN_IF_ERROR(cuda::Launched(e, "label check event"));
    return Reported();
  }

  /// The device address of the report for the kernels of this Run (allocated on first use).
  StatusOr<int64_t*> device_report() {
    if (report_ == nullptr) {
      void* p = nullptr;
      PC_CUDA_RETURN_IF_ERROR(cudaHostAlloc(&p, 2 * sizeof(int64_t), cudaHostAllocMapped));
      report_ = static_cast<int64_t*>(p);
      report_[0] = -1;
      report_[1] = 0;
      PC_CUDA_RETURN_IF_ERROR(cudaHostGetDevicePointer(&p, report_, 0));
      device_report_ = static_cast<int64_t*>(p);
      PC_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    }
    return device_report_;
  }

  /// Called last in every Run, after the kernels that write the report: records the event; the
  /// first time, waits for it and reports at once.
  Status Arm(KernelContext& ctx, Describe describe) {
    describe_ = std::move(describe);
    PC_RETURN_IF_ERROR(cuda::Launched(cudaEventRecord(event_, cuda::Stream(ctx)), "label check event"));
    armed_ = true;
    if (!waited_) {
      waited_ = true;  // warm-up only: the steady state never waits
      PC_RETURN_IF_ERROR(cuda::Launched(cudaEventSynchronize(event_), "label check"));
      return Reported();
    }
    return Status::OK();
  }

 private:
  Status Reported() const {
    const volatile int64_t* r = report_;
    if (r[0] < 0) return Status::OK();
    Error e = describe_(r[0], r[1]);
    return e;
  }

  int64_t* report_ = nullptr;  // mapped host memory: {first bad index or -1, its label}
  int64_t* device_report_ = nullptr;
  cudaEvent_t event_ = nullptr;
  bool armed_ = false, waited_ = false;
  Describe describe_;
};

/// The CPU's message for a label outside the classes (loss::CheckHardLabels).
LabelCheck::Describe ClassesMessage(int64_t classes, int64_t ignore_index, std::string slot, int axis) {
  return [=](int64_t index, int64_t value) {
    return MakeError(
        ErrorCode::kRuntime,
        "Label holds {} at index {}, outside the {} classes [0, {}) along axis {} of {} (ignore_index is {})", value,
        index, classes, classes, axis, slot, ignore_index);
  };
}

/// Queues the label check of hard labels `label` (int32 or int64).
Status QueueLabelCheck(KernelContext& ctx, LabelCheck& check, const Tensor& label, int64_t count, int64_t classes,
                       int64_t ignore_index) {
  PC_ASSIGN_OR_RETURN(int64_t * report, check.device_report());
  cudaError_t e =
      label.dtype() == DType::kInt32
          ? cuda::FindBadLabel(label.data<int32_t>(), count, classes, ignore_index, report, cuda::Stream(ctx))
          : cuda::FindBadLabel(label.data<int64_t>(), count, classes, ignore_index, report, cuda::Stream(ctx));
  return cuda::Launched(e, "label check");
}

/// [outer, n, inner] around a (normalized) axis.
struct View {
  int64_t outer, n, inner;
  int64_t lines() const { return outer * inner; }
};
View ViewAround(const Dims& d, int axis) { return {d.Product(0, axis), d[axis], d.Product(axis + 1, d.rank())}; }

/// Calls the launcher `f` with the label pointer typed by the label's dtype (int32, int64) or, for
/// soft labels, as T.
template <class T, class F>
cudaError_t WithLabels(const Tensor& label, bool soft, F&& f) {
  if (soft) return f(label.data<T>());
  if (label.dtype() == DType::kInt32) return f(label.data<int32_t>());
  return f(label.data<int64_t>());
}

// ---- cross_entropy ---------------------------------------------------------------------------

namespace ce {
constexpr InSlot kX{0, "X"};
constexpr InSlot kLabel{1, "Label"};
constexpr OutSlot kY{0, "Y"};
constexpr InSlot kDY{2, "Y@GRAD"};
constexpr OutSlot kDX{0, "X@GRAD"};

/// cross_entropy and its gradient: softmax_with_cross_entropy's kernels without the softmax, over the
/// rows of X's last axis.
template <class T>
class Kernel final : public OpKernel {
 public:
  Kernel(const KernelInit& init, bool grad)
      : soft_(init.attrs.Get<bool>("soft_label")), ignore_(init.attrs.Get<int>("ignore_index")), grad_(grad) {}

  // Hard labels are checked through an event the host polls: not something a graph can replay.
  bool Replayable() const override { return soft_; }
  Status Run(KernelContext& ctx) override {
    PC_RETURN_IF_ERROR(check_.Poll());
    Tensor* dx = grad_ ? ctx.OutOpt(kDX) : nullptr;
    if (grad_ && dx == nullptr) return Status::OK();
    const Tensor& x = ctx.In(kX);
    const Tensor& label = ctx.In(kLabel);
    const int axis = x.dims().rank() - 1;
    const View v = ViewAround(x.dims(), axis);
    const cudaStream_t s = cuda::Stream(ctx);
    if (!soft_) PC_RETURN_IF_ERROR(QueueLabelCheck(ctx, check_, label, v.lines(), v.n, ignore_));
    cudaError_t e = WithLabels<T>(label, soft_, [&](const auto* lp) {
      if (grad_)
        return cuda::SoftmaxCrossEntropyGrad<T>(x.data<T>(), lp, ctx.In(kDY).data<T>(), dx->data<T>(), v.outer, v.n,
                                                v.inner, ignore_, false, s);
      return cuda::SoftmaxCrossEntropy<T>(x.data<T>(), lp, nullptr, ctx.Out(kY).data<T>(), v.outer, v.n, v.inner,
                                          ignore_, false, s);
    });
    PC_RETURN_IF_ERROR(cuda::Launched(e, grad_ ? "cross_entropy_grad" : "cross_entropy"));
    if (soft_) return Status::OK();
    return check_.Arm(ctx, ClassesMessage(v.n, ignore_, "X", axis));
  }

 private:
  bool soft_;
  int64_t ignore_;
  bool grad_;
  LabelCheck check_;
};
}  // namespace ce

// ---- softmax_with_cross_entropy --------------------------------------------------------------

namespace swce {
constexpr InSlot kLogits{0, "Logits"};
constexpr InSlot kLabel{1, "Label"};
constexpr OutSlot kSoftmax{0, "Softmax"};
constexpr OutSlot kLoss{1, "Loss"};
constexpr InSlot kGLabel{0, "Label"};
constexpr InSlot kGSoftmax{1, "Softmax"};
constexpr InSlot kGDLoss{2, "Loss@GRAD"};
constexpr OutSlot kDLogits{0, "Logits@GRAD"};

template <class T>
class Kernel final : public OpKernel {
 public:
  Kernel(const KernelInit& init, bool grad)
      : soft_(init.attrs.Get<bool>("soft_label")),
        ignore_(init.attrs.Get<int>("ignore_index")),
        use_softmax_(init.attrs.Get<bool>("use_softmax")),
        axis_(init.attrs.Get<int>("axis")),
        grad_(grad) {}

  // Hard labels are checked through an event the host polls: not something a graph can replay.
  bool Replayable() const override { return soft_; }
  Status Run(KernelContext& ctx) override {
    PC_RETURN_IF_ERROR(check_.Poll());
    Tensor* dx = grad_ ? ctx.OutOpt(kDLogits) : nullptr;
    if (grad_ && dx == nullptr) return Status::OK();
    const Tensor& x = grad_ ? ctx.In(kGSoftmax) : ctx.In(kLogits);
    const Tensor& label = grad_ ? ctx.In(kGLabel) : ctx.In(kLabel);
    const int axis = NormalizeAxis(axis_, x.dims().rank());
    const View v = ViewAround(x.dims(), axis);
    const cudaStream_t s = cuda::Stream(ctx);
    if (!soft_) PC_RETURN_IF_ERROR(QueueLabelCheck(ctx, check_, label, v.lines(), v.n, ignore_));
    cudaError_t e = WithLabels<T>(label, soft_, [&](const auto* lp) {
      if (grad_)
        return cuda::SoftmaxCrossEntropyGrad<T>(x.data<T>(), lp, ctx.In(kGDLoss).data<T>(), dx->data<T>(), v.outer, v.n,
                                                v.inner, ignore_, use_softmax_, s);
      Tensor* sm = ctx.OutOpt(kSoftmax);  // intermediate: a program without a backward may leave it out
      return cuda::SoftmaxCrossEntropy<T>(x.data<T>(), lp, sm ? sm->data<T>() : nullptr, ctx.Out(kLoss).data<T>(),
                                          v.outer, v.n, v.inner, ignore_, use_softmax_, s);
    });
    PC_RETURN_IF_ERROR(cuda::Launched(e, grad_ ? "softmax_with_cross_entropy_grad" : "softmax_with_cross_entropy"));
    if (soft_) return Status::OK();
    return check_.Arm(ctx, ClassesMessage(v.n, ignore_, "Logits", axis));
  }

 private:
  bool soft_;
  int64_t ignore_;
  bool use_softmax_;
  int axis_;
  bool grad_;
  LabelCheck check_;
};
}  // namespace swce

// ---- accuracy --------------------------------------------------------------------------------

namespace acc {
constexpr InSlot kIndices{1, "Indices"};
constexpr InSlot kLabel{2, "Label"};
constexpr OutSlot kAccuracy{0, "Accuracy"};
constexpr OutSlot kCorrect{1, "Correct"};
constexpr OutSlot kTotal{2, "Total"};

/// Out's values are not read (its dtype only selects the kernel): the indices decide.
class Kernel final : public OpKernel {
 public:
  explicit Kernel(const KernelInit&) {}
  Status Run(KernelContext& ctx) override {
    PC_RETURN_IF_ERROR(check_.Poll());
    const Tensor& idx = ctx.In(kIndices);
    const Tensor& label = ctx.In(kLabel);
    const int64_t n = idx.dims()[0], k = idx.dims()[1];
    PC_ASSIGN_OR_RETURN(int64_t * report, check_.device_report());
    float* a = ctx.Out(kAccuracy).data<float>();
    int32_t* correct = ctx.Out(kCorrect).data<int32_t>();
    int32_t* total = ctx.Out(kTotal).data<int32_t>();
    const cudaStream_t s = cuda::Stream(ctx);
    const bool idx64 = idx.dtype() == DType::kInt64, label64 = label.dtype() == DType::kInt64;
    cudaError_t e =
        idx64
            ? (label64 ? cuda::Accuracy(idx.data<int64_t>(), label.data<int64_t>(), n, k, a, correct, total, report, s)
                       : cuda::Accuracy(idx.data<int64_t>(), label.data<int32_t>(), n, k, a, correct, total, report, s))
            : (label64
                   ? cuda::Accuracy(idx.data<int32_t>(), label.data<int64_t>(), n, k, a, correct, total, report, s)
                   : cuda::Accuracy(idx.data<int32_t>(), label.data<int32_t>(), n, k, a, correct, total, report, s));
    PC_RETURN_IF_ERROR(cuda::Launched(e, "accuracy"));
    return check_.Arm(ctx, [](int64_t row, int64_t value) {
      return MakeError(ErrorCode::kRuntime, "Label holds {} at row {}: class indices must be >= 0", value, row);
    });
  }

 private:
  LabelCheck check_;
};
}  // namespace acc

// ---- squared_l2_norm -------------------------------------------------------------------------

namespace norm {
constexpr InSlot kX{0, "X"};
constexpr OutSlot kOut{0, "Out"};
constexpr InSlot kDOut{1, "Out@GRAD"};
constexpr OutSlot kDX{0, "X@GRAD"};

/// Deterministic two-pass sum (loss.cu); the partials live in this kernel's scratch, allocated once.
template <class T>
class Kernel final : public OpKernel {
 public:
  explicit Kernel(const KernelInit&) {}
  Status Run(KernelContext& ctx) override {
    if (partials_ == nullptr) {
      PC_ASSIGN_OR_RETURN(partials_,
                          runtime::AllocateBuffer(ctx.device().allocator(), cuda::kNormPartials * sizeof(double)));
    }
    const Tensor& x = ctx.In(kX);
    return cuda::Launched(cuda::SquaredL2Norm<T>(x.data<T>(), x.numel(), ctx.Out(kOut).data<T>(),
                                                 static_cast<double*>(partials_->data()), cuda::Stream(ctx)),
                          "squared_l2_norm");
  }

 private:
  std::shared_ptr<runtime::Buffer> partials_;
};

template <class T>
Status Grad(KernelContext& ctx) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(kX);
  return cuda::Launched(
      cuda::SquaredL2NormGrad<T>(x.data<T>(), ctx.In(kDOut).data<T>(), dx->data<T>(), x.numel(), cuda::Stream(ctx)),
      "squared_l2_norm_grad");
}
}  // namespace norm

template <class K>
KernelFactory WithGrad(bool grad) {
  return [grad](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new K(init, grad));
  };
}

template <class T>
Status RegisterFor(OpRegistry& r, DType t) {
  constexpr DeviceType kGpu = DeviceType::kCUDA;
  PC_RETURN_IF_ERROR(r.AddKernel("cross_entropy", kGpu, t, WithGrad<ce::Kernel<T>>(false)));
  PC_RETURN_IF_ERROR(r.AddKernel("cross_entropy_grad", kGpu, t, WithGrad<ce::Kernel<T>>(true)));
  PC_RETURN_IF_ERROR(r.AddKernel("softmax_with_cross_entropy", kGpu, t, WithGrad<swce::Kernel<T>>(false)));
  PC_RETURN_IF_ERROR(r.AddKernel("softmax_with_cross_entropy_grad", kGpu, t, WithGrad<swce::Kernel<T>>(true)));
  PC_RETURN_IF_ERROR(r.AddKernel("accuracy", kGpu, t, MakeKernelClass<acc::Kernel>()));
  PC_RETURN_IF_ERROR(r.AddKernel("squared_l2_norm", kGpu, t, MakeKernelClass<norm::Kernel<T>>()));
  return r.AddKernel("squared_l2_norm_grad", kGpu, t, MakeKernel(norm::Grad<T>));
}

}  // namespace

Status RegisterLossCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(RegisterFor<float>(r, DType::kFloat32));
  return RegisterFor<double>(r, DType::kFloat64);
}

}  // namespace paddlec::ops
