// nearest_interp_v2, bilinear_interp_v2 and their gradients on the GPU: interp.cc's geometry
// (interp::InterpShapeOf on the attributes decoded once) and interp_index.h's per-element bodies,
// launched by interp.cu. Bound size inputs (OutSize, SizeTensor, Scale) are copied to the host every
// run (their values size the output), so those instances are not replayable.
#include "nn/interp_slots.h"
#include "nn/nn_cuda.h"
#include "nn/nn_cuda_host.h"

namespace paddlec::ops::nn {
namespace {

using namespace interp;  // NOLINT: the ops' shared slots and attributes
using runtime::cuda::CudaContext;

bool BindsValues(const KernelInit& init) {
  for (const auto& slot : init.attrs.op().inputs())
    for (InSlot s : {kOutSize, kSizeTensor, kScale})
      if (slot.parameter() == s.name && slot.arguments_size() > 0) return true;
  return false;
}

/// The bound size inputs' values, copied to the host.
StatusOr<InterpValues> RunValues(KernelContext& ctx) {
  CudaContext& cc = cuda::Cuda(ctx);
  InterpValues v;
  for (int i = 0; i < ctx.NumIn(kSizeTensor); ++i) {
    const Tensor* t = ctx.InOpt(kSizeTensor, i);
    if (t == nullptr) continue;
    PC_ASSIGN_OR_RETURN(std::vector<int64_t> one, cuda::DeviceValues<int64_t>(cc, *t, "SizeTensor"));
    if (one.size() != 1)
      return MakeError(ErrorCode::kShape, "SizeTensor {} has {} values but must hold one", i, one.size());
    v.size_tensor.push_back(one[0]);
  }
  if (const Tensor* t = ctx.InOpt(kOutSize)) {
    PC_ASSIGN_OR_RETURN(v.out_size, cuda::DeviceValues<int64_t>(cc, *t, "OutSize"));
  }
  if (const Tensor* t = ctx.InOpt(kScale)) {
    PC_ASSIGN_OR_RETURN(v.scale, cuda::DeviceValues<double>(cc, *t, "Scale"));
    v.scale_bound = true;
  }
  return v;
}

template <class T>
class InterpKernel final : public OpKernel {
 public:
  explicit InterpKernel(const KernelInit& init) : attrs_(InterpAttrs::Decode(init.attrs)), values_(BindsValues(init)) {}
  bool Replayable() const override { return !values_; }

  Status Run(KernelContext& ctx) override {
    InterpValues v;
    if (values_) {
      PC_ASSIGN_OR_RETURN(v, RunValues(ctx));
    }
    const Tensor& x = ctx.In(kX);
    InterpShape s;
    PC_RETURN_IF_ERROR(InterpShapeOf(x.dims(), attrs_, v, nullptr, s));
    PC_RETURN_IF_ERROR(ctx.ResizeOut(kOut, InterpOutDims(s), x.dtype()));
    Tensor& out = ctx.Out(kOut);
    return cuda::Launched(cuda::InterpForward<T>(s, x.data<T>(), out.data<T>(), out.numel(), cuda::Stream(ctx)),
                          attrs_.op.c_str());
  }

 private:
  InterpAttrs attrs_;
  bool values_;  // a size input is bound
};

template <class T>
class InterpGradKernel final : public OpKernel {
 public:
  explicit InterpGradKernel(const KernelInit& init)
      : attrs_(InterpAttrs::Decode(init.attrs)), values_(BindsValues(init)) {}
  bool Replayable() const override { return !values_; }

  Status Run(KernelContext& ctx) override {
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    InterpValues v;
    if (values_) {
      PC_ASSIGN_OR_RETURN(v, RunValues(ctx));
    }
    const Tensor& dy = ctx.In(kDOut);
    InterpShape s;
    PC_RETURN_IF_ERROR(InterpShapeOf(ctx.In(kX).dims(), attrs_, v, &dy.dims(), s));
    if (!(dy.dims() == InterpOutDims(s)))
      return MakeError(ErrorCode::kShape, "Out@GRAD has shape {} but {} of X {} produces {}", dy.dims().ToString(),
                       attrs_.op, ctx.In(kX).dims().ToString(), InterpOutDims(s).ToString());
    return cuda::Launched(cuda::InterpBackward<T>(s, dy.data<T>(), dx->data<T>(), dx->numel(), cuda::Stream(ctx)),
                          "interpolation gradient");
  }

 private:
  InterpAttrs attrs_;
  bool values_;
};

template <class T>
KernelFactory InterpFactory() {
  return MakeKernelClass<InterpKernel<T>>();
}
template <class T>
KernelFactory InterpGradFactory() {
  return MakeKernelClass<InterpGradKernel<T>>();
}

}  // namespace

Status RegisterInterpCudaKernels(OpRegistry& r) {
  for (const char* op : {"nearest_interp_v2", "bilinear_interp_v2"}) {
    PC_CUDA_FLOAT_KERNELS(r, op, InterpFactory);
    PC_CUDA_FLOAT_KERNELS(r, std::string(op) + "_grad", InterpGradFactory);
  }
  return Status::OK();
}

}  // namespace paddlec::ops::nn
