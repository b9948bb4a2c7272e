// pad3d and pad3d_grad on the GPU: pad.cc's geometry (pad::Pad3dShapeOf on the attributes decoded
// once) and pad_index.h's per-element bodies, launched by pad.cu. A bound Paddings tensor is copied to
// the host every run (its values size the output), so those instances are not replayable.
#include "nn/nn_cuda.h"
#include "nn/nn_cuda_host.h"
#include "nn/pad_slots.h"

namespace paddlec::ops::nn {
namespace {

using namespace pad;  // NOLINT: the op's shared slots and attributes
using runtime::cuda::CudaContext;

bool BindsPaddings(const KernelInit& init) {
  for (const auto& slot : init.attrs.op().inputs())
    if (slot.parameter() == kPaddings.name && slot.arguments_size() > 0) return true;
  return false;
}

/// The geometry of a run: the Paddings tensor's values (copied to the host) when bound, else the attribute.
StatusOr<Pad3dShape> RunShape(KernelContext& ctx, const Pad3dAttrs& a) {
  std::vector<int64_t> values;
  if (const Tensor* t = ctx.InOpt(kPaddings)) {
    PC_ASSIGN_OR_RETURN(values, cuda::DeviceValues<int64_t>(cuda::Cuda(ctx), *t, "Paddings"));
    if (values.size() != 6)
      return MakeError(ErrorCode::kShape, "Paddings has {} values but pad3d needs 6", values.size());
  }
  Pad3dShape p;
  PC_RETURN_IF_ERROR(Pad3dShapeOf(ctx.In(kX).dims(), a, values, p));
  return p;
}

template <class T>
class Pad3dKernel final : public OpKernel {
 public:
  explicit Pad3dKernel(const KernelInit& init) : attrs_(Pad3dAttrs::Decode(init.attrs)), values_(BindsPaddings(init)) {}
  bool Replayable() const override { return !values_; }

  Status Run(KernelContext& ctx) override {
    PC_ASSIGN_OR_RETURN(Pad3dShape p, RunShape(ctx, attrs_));
    const Tensor& x = ctx.In(kX);
    PC_RETURN_IF_ERROR(ctx.ResizeOut(kOut, Pad3dOutDims(p), x.dtype()));
    Tensor& out = ctx.Out(kOut);
    return cuda::Launched(cuda::PadForward<T>(p, x.data<T>(), out.data<T>(), out.numel(), cuda::Stream(ctx)), "pad3d");
  }

 private:
  Pad3dAttrs attrs_;
  bool values_;  // the Paddings tensor is bound
};

template <class T>
class Pad3dGradKernel final : public OpKernel {
 public:
  explicit Pad3dGradKernel(const KernelInit& init)
      : attrs_(Pad3dAttrs::Decode(init.attrs)), values_(BindsPaddings(init)) {}
  bool Replayable() const override { return !values_; }

  Status Run(KernelContext& ctx) override {
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    PC_ASSIGN_OR_RETURN(Pad3dShape p, RunShape(ctx, attrs_));
    const Tensor& dy = ctx.In(kDOut);
    if (!(dy.dims() == Pad3dOutDims(p)))
      return MakeError(ErrorCode::kShape, "Out@GRAD has shape {} but pad3d of X {} produces {}", dy.dims().ToString(),
                       ctx.In(kX).dims().ToString(), Pad3dOutDims(p).ToString());
    return cuda::Launched(cuda::PadBackward<T>(p, dy.data<T>(), dx->data<T>(), dx->numel(), cuda::Stream(ctx)),
                          "pad3d_grad");
  }

 private:
  Pad3dAttrs attrs_;
  bool values_;
};

template <class T>
KernelFactory Pad3dFactory() {
  return MakeKernelClass<Pad3dKernel<T>>();
}
template <class T>
KernelFactory Pad3dGradFactory() {
  return MakeKernelClass<Pad3dGradKernel<T>>();
}

}  // namespace

Status RegisterPadCudaKernels(OpRegistry& r) {
  PC_CUDA_FLOAT_KERNELS(r, "pad3d", Pad3dFactory);
  PC_RETURN_IF_ERROR(r.AddKernel("pad3d", DeviceType::kCUDA, DType::kInt32, Pad3dFactory<int32_t>()));
  PC_RETURN_IF_ERROR(r.AddKernel("pad3d", DeviceType::kCUDA, DType::kInt64, Pad3dFactory<int64_t>()));
  PC_CUDA_FLOAT_KERNELS(r, "pad3d_grad", Pad3dGradFactory);
  return Status::OK();
}

}  // namespace paddlec::ops::nn
