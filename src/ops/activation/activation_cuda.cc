// The activation family's CUDA kernels as paddlec kernels: attribute decoding, tensor plumbing and
// registration around the launchers of activation.cu. Built into libpaddlec_cuda.so only.
#include "activation/activation_cuda.h"

#include "common/cuda_host.h"

namespace paddlec::ops {
namespace {

using cuda::Activation;

constexpr InSlot kX{0, "X"};
constexpr OutSlot kOut{0, "Out"};
constexpr InSlot kA{0, "Out or X"};  // the grad ops' first input
constexpr InSlot kDOut{1, "Out@GRAD"};
constexpr OutSlot kDX{0, "X@GRAD"};

/// One element-wise activation and its gradient; `alpha` from leaky_relu's attribute.
template <class T>
class ActivationKernel final : public OpKernel {
 public:
  ActivationKernel(const KernelInit& init, Activation f, bool grad) : f_(f), grad_(grad) {
    if (f == Activation::kLeakyRelu) alpha_ = init.attrs.Get<float>("alpha");
    if (f == Activation::kGelu && init.attrs.Get<bool>("approximate")) f_ = Activation::kGeluTanh;
  }
  Status Run(KernelContext& ctx) override {
    if (!grad_) {
      const Tensor& x = ctx.In(kX);
      return cuda::Launched(cuda::ActivationForward<T>(f_, x.data<T>(), ctx.Out(kOut).data<T>(), x.numel(), alpha_,
                                                       cuda::Stream(ctx)),
                            "activation forward");
    }
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    return cuda::Launched(cuda::ActivationBackward<T>(f_, ctx.In(kA).data<T>(), ctx.In(kDOut).data<T>(),
                                                      dx->data<T>(), dx->numel(), alpha_, cuda::Stream(ctx)),
                          "activation backward");
  }

 private:
  Activation f_;
  bool grad_;
  float alpha_ = 0;
};

struct AxisView {
  int64_t outer, n, inner;
};

AxisView ViewAround(const Dims& d, int axis) {
  if (d.rank() == 0) return {1, 1, 1};
  int a = NormalizeAxis(axis, d.rank());
  return {d.Product(0, a), d[a], d.Product(a + 1, d.rank())};
}

template <class T>
class SoftmaxKernel final : public OpKernel {
 public:
  SoftmaxKernel(const KernelInit& init, bool log, bool grad)
      : axis_(init.attrs.Get<int>("axis")), log_(log), grad_(grad) {}
  Status Run(KernelContext& ctx) override {
    if (!grad_) {
      const Tensor& x = ctx.In(kX);
      AxisView v = ViewAround(x.dims(), axis_);
      return cuda::Launched(cuda::SoftmaxForward<T>(x.data<T>(), ctx.Out(kOut).data<T>(), v.outer, v.n, v.inner, log_,
                                                    cuda::Stream(ctx)),
                            "softmax forward");
    }
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    AxisView v = ViewAround(dx->dims(), axis_);
    return cuda::Launched(cuda::SoftmaxBackward<T>(ctx.In(kA).data<T>(), ctx.In(kDOut).data<T>(), dx->data<T>(),
                                                   v.outer, v.n, v.inner, log_, cuda::Stream(ctx)),
                          "softmax backward");
  }

 private:
  int axis_;
  bool log_, grad_;
};

template <class T>
KernelFactory ActivationFactory(Activation f, bool grad) {
  return [f, grad](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new ActivationKernel<T>(init, f, grad));
  };
}

template <class T>
KernelFactory SoftmaxFactory(bool log, bool grad) {
  return [log, grad](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new SoftmaxKernel<T>(init, log, grad));
  };
}

template <class T>
Status RegisterFor(OpRegistry& r, DType dt) {
  const std::pair<const char*, Activation> kUnary[] = {{"relu", Activation::kRelu},       {"sigmoid", Activation::kSigmoid},
                                                       {"tanh", Activation::kTanh},       {"sqrt", Activation::kSqrt},
                                                       {"gelu", Activation::kGelu},       {"leaky_relu", Activation::kLeakyRelu}};
  for (auto [op, f] : kUnary) {
    PC_RETURN_IF_ERROR(r.AddKernel(op, DeviceType::kCUDA, dt, ActivationFactory<T>(f, false)));
    PC_RETURN_IF_ERROR(r.AddKernel(std::string(op) + "_grad", DeviceType::kCUDA, dt, ActivationFactory<T>(f, true)));
  }
  for (bool log : {false, true}) {
    std::string op = log ? "log_softmax" : "softmax";
    PC_RETURN_IF_ERROR(r.AddKernel(op, DeviceType::kCUDA, dt, SoftmaxFactory<T>(log, false)));
    PC_RETURN_IF_ERROR(r.AddKernel(op + "_grad", DeviceType::kCUDA, dt, SoftmaxFactory<T>(log, true)));
  }
  return Status::OK();
}

}  // namespace

Status RegisterActivationCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(RegisterFor<float>(r, DType::kFloat32));
  return RegisterFor<double>(r, DType::kFloat64);
}

}  // namespace paddlec::ops
