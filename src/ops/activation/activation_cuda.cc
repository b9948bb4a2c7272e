// The activation family's CUDA kernels as paddlec kernels: tensor plumbing and registration around
// the launchers of activation.cu, for every op of kActivations (attributes decoded by the shared
// DecodeActivation) and softmax / log_softmax. Built into libpaddlec_cuda.so only.
#include "activation/activation_cuda.h"

#include "activation/activation_slots.h"
#include "common/cuda_host.h"

namespace paddlec::ops {
namespace {

using namespace activation;  // NOLINT: the family's shared slots and decoding

/// One element-wise activation or its gradient.
template <class T>
class ActivationKernel final : public OpKernel {
 public:
  ActivationKernel(const KernelInit& init, const ActivationOp& op, bool grad)
      : call_(DecodeActivation(op.kind, init.attrs)), dout_(DOutSlot(op.reads)), grad_(grad) {}
  Status Run(KernelContext& ctx) override {
    if (!grad_) {
      const Tensor& x = ctx.In(kX);
      return cuda::Launched(cuda::ActivationForward<T>(call_.kind, call_.p, x.data<T>(), ctx.Out(kOut).data<T>(),
                                                       x.numel(), cuda::Stream(ctx)),
                            "activation forward");
    }
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    return cuda::Launched(
        cuda::ActivationBackward<T>(call_.kind, call_.p, ctx.In(kGradA).data<T>(), ctx.In(dout_).data<T>(),
                                    dx->data<T>(), dx->numel(), cuda::Stream(ctx)),
        "activation backward");
  }

 private:
  ActivationCall call_;
  InSlot dout_;
  bool grad_;
};

template <class T>
Status SoftmaxCuda(KernelContext& ctx, const SoftmaxAttrs& a) {
  const Tensor& x = ctx.In(kX);
  const AxisView v = ViewAround(x.dims(), a.axis);
  return cuda::Launched(
      cuda::SoftmaxForward<T>(x.data<T>(), ctx.Out(kOut).data<T>(), v.outer, v.n, v.inner, false, cuda::Stream(ctx)),
      "softmax forward");
}

template <class T>
Status LogSoftmaxCuda(KernelContext& ctx, const SoftmaxAttrs& a) {
  const Tensor& x = ctx.In(kX);
  const AxisView v = ViewAround(x.dims(), a.axis);
  return cuda::Launched(
      cuda::SoftmaxForward<T>(x.data<T>(), ctx.Out(kOut).data<T>(), v.outer, v.n, v.inner, true, cuda::Stream(ctx)),
      "log_softmax forward");
}

template <class T, bool kLog>
Status SoftmaxGradCuda(KernelContext& ctx, const SoftmaxAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const AxisView v = ViewAround(dx->dims(), a.axis);
  return cuda::Launched(cuda::SoftmaxBackward<T>(ctx.In(kSoftmaxOut).data<T>(), ctx.In(kSoftmaxDOut).data<T>(),
                                                 dx->data<T>(), v.outer, v.n, v.inner, kLog, cuda::Stream(ctx)),
                        "softmax backward");
}

template <class T>
KernelFactory ActivationFactory(const ActivationOp& op, bool grad) {
  return [op, grad](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new ActivationKernel<T>(init, op, grad));
  };
}

template <class T>
Status RegisterFor(OpRegistry& r, DType dt) {
  for (const ActivationOp& op : kActivations) {
    PC_RETURN_IF_ERROR(r.AddKernel(op.type, DeviceType::kCUDA, dt, ActivationFactory<T>(op, false)));
    PC_RETURN_IF_ERROR(
        r.AddKernel(std::string(op.type) + "_grad", DeviceType::kCUDA, dt, ActivationFactory<T>(op, true)));
  }
  PC_RETURN_IF_ERROR(r.AddKernel("softmax", DeviceType::kCUDA, dt, MakeKernel(SoftmaxCuda<T>)));
  PC_RETURN_IF_ERROR(r.AddKernel("log_softmax", DeviceType::kCUDA, dt, MakeKernel(LogSoftmaxCuda<T>)));
  PC_RETURN_IF_ERROR(r.AddKernel("softmax_grad", DeviceType::kCUDA, dt, MakeKernel(SoftmaxGradCuda<T, false>)));
  return r.AddKernel("log_softmax_grad", DeviceType::kCUDA, dt, MakeKernel(SoftmaxGradCuda<T, true>));
}

}  // namespace

Status RegisterActivationCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(RegisterFor<float>(r, DType::kFloat32));
  return RegisterFor<double>(r, DType::kFloat64);
}

}  // namespace paddlec::ops
