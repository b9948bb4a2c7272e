// reduce_sum, reduce_mean, mean and their gradients on the GPU: reduce.cc's axis rules and dtype
// handling around the deterministic reduction and the broadcast of reduce.cu. Built into
// libpaddlec_cuda.so only.
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "math/math_cuda_host.h"
#include "math/reduce_spec.h"

namespace paddlec::ops {
namespace {

using namespace reduce;  // NOLINT: the family's shared slots and axis rules

/// Sums (kMean: averages) X over the reduced axes into Out, whose dtype may differ (out_dtype):
/// elements are converted to Out's type before they are added, as on the CPU.
template <class TIn, bool kMean>
class ReduceCuda final : public OpKernel {
 public:
  explicit ReduceCuda(const KernelInit& init, bool all = false)
      : axes_(all ? ReduceSpec::All() : ReduceSpec::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    Tensor& out = ctx.Out(kOut);
    if (!(x.dims() == x_dims_)) {
      PC_ASSIGN_OR_RETURN(Dims kept, axes_.KeptDims(x.dims()));
      if (kept.Numel() != out.numel())
        return MakeError(ErrorCode::kShape, "Out has shape {} but reducing X of shape {} gives {} elements",
                         out.dims().ToString(), x.dims().ToString(), kept.Numel());
      index_ = cuda::ReduceOnto(x.dims(), kept);
      plan_ = cuda::PlanReduce(index_.m, index_.r, index_.inner_reduced);
      count_ = kept.Numel() == 0 ? 0 : x.numel() / kept.Numel();
      x_dims_ = x.dims();
    }
    PC_ASSIGN_OR_RETURN(void* scratch, scratch_.Get(ctx.device().allocator(), PartialBytes(plan_)));
    switch (out.dtype()) {
      case DType::kFloat32:
        return Impl<float>(ctx, x, out, scratch);
      case DType::kFloat64:
        return Impl<double>(ctx, x, out, scratch);
      case DType::kInt32:
        return Impl<int32_t>(ctx, x, out, scratch);
      case DType::kInt64:
        return Impl<int64_t>(ctx, x, out, scratch);
      default:
        return MakeError(ErrorCode::kUnimplemented, "cannot reduce into dtype {}", DTypeName(out.dtype()));
    }
  }

 private:
  template <class TOut>
  Status Impl(KernelContext& ctx, const Tensor& x, Tensor& out, void* scratch) {
    TOut inv = TOut(0);
    if constexpr (kMean) {
      if constexpr (!std::is_floating_point_v<TOut>) {
        return MakeError(ErrorCode::kUnimplemented, "cannot average into dtype {}", DTypeName(out.dtype()));
      } else {
        // An empty reduction averages to NaN (0 / 0), as in NumPy and PaddlePaddle.
        inv = count_ == 0 ? TOut(NAN) : TOut(1) / static_cast<TOut>(count_);
      }
    }
    return cuda::Launched(cuda::ReduceSum<TIn, TOut>(x.data<TIn>(), out.data<TOut>(), index_, plan_, kMean, inv,
                                                     scratch, cuda::Stream(ctx)),
                          "reduce");
  }

  ReduceSpec axes_;
  Dims x_dims_{-2};
  cuda::ReduceIndex<2> index_;
  cuda::ReducePlan plan_;
  int64_t count_ = 0;  // elements averaged into each output element
  DeviceScratch scratch_;
};

/// X@GRAD = Out@GRAD broadcast back over the reduced axes (times 1/count for the means); Out@GRAD
/// may be of another float type than X (out_dtype).
template <class TX, bool kMean>
class ReduceGradCuda final : public OpKernel {
 public:
  explicit ReduceGradCuda(const KernelInit& init, bool all = false)
      : axes_(all ? ReduceSpec::All() : ReduceSpec::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    const Tensor& x = ctx.In(kGradX);
    const Tensor& dout = ctx.In(kGradDOut);
    if (!(x.dims() == x_dims_)) {
      PC_ASSIGN_OR_RETURN(Dims kept, axes_.KeptDims(x.dims()));
      if (kept.Numel() != dout.numel())
        return MakeError(ErrorCode::kShape, "Out@GRAD has shape {} but reducing X of shape {} gives {} elements",
                         dout.dims().ToString(), x.dims().ToString(), kept.Numel());
      index_ = cuda::BroadcastFrom(x.dims(), kept);
      count_ = kept.Numel() == 0 ? 0 : x.numel() / kept.Numel();
      x_dims_ = x.dims();
    }
    const TX s = kMean ? TX(1) / static_cast<TX>(std::max<int64_t>(count_, 1)) : TX(1);
    cudaStream_t st = cuda::Stream(ctx);
    switch (dout.dtype()) {
      case DType::kFloat32:
        return cuda::Launched(
            cuda::BroadcastScaled<TX, float>(dout.data<float>(), dx->data<TX>(), dx->numel(), index_, s, st),
            "reduce gradient");
      case DType::kFloat64:
        return cuda::Launched(
            cuda::BroadcastScaled<TX, double>(dout.data<double>(), dx->data<TX>(), dx->numel(), index_, s, st),
            "reduce gradient");
      default:
        return MakeError(ErrorCode::kUnimplemented, "Out@GRAD of dtype {} is not supported", DTypeName(dout.dtype()));
    }
  }

 private:
  ReduceSpec axes_;
  Dims x_dims_{-2};
  cuda::StridedIndex<2> index_;
  int64_t count_ = 0;
};

template <class K>
KernelFactory AllAxes() {
  return [](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new K(init, /*all=*/true));
  };
}

template <class T>
Status RegisterFor(OpRegistry& r, DType t) {
  PC_RETURN_IF_ERROR(r.AddKernel("reduce_sum", DeviceType::kCUDA, t, MakeKernelClass<ReduceCuda<T, false>>()));
  if constexpr (std::is_floating_point_v<T>) {
    PC_RETURN_IF_ERROR(r.AddKernel("reduce_mean", DeviceType::kCUDA, t, MakeKernelClass<ReduceCuda<T, true>>()));
    PC_RETURN_IF_ERROR(
        r.AddKernel("reduce_sum_grad", DeviceType::kCUDA, t, MakeKernelClass<ReduceGradCuda<T, false>>()));
    PC_RETURN_IF_ERROR(
        r.AddKernel("reduce_mean_grad", DeviceType::kCUDA, t, MakeKernelClass<ReduceGradCuda<T, true>>()));
    PC_RETURN_IF_ERROR(r.AddKernel("mean", DeviceType::kCUDA, t, AllAxes<ReduceCuda<T, true>>()));
    PC_RETURN_IF_ERROR(r.AddKernel("mean_grad", DeviceType::kCUDA, t, AllAxes<ReduceGradCuda<T, true>>()));
  }
  return Status::OK();
}

}  // namespace

Status RegisterReduceCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(RegisterFor<float>(r, DType::kFloat32));
  PC_RETURN_IF_ERROR(RegisterFor<double>(r, DType::kFloat64));
  PC_RETURN_IF_ERROR(RegisterFor<int32_t>(r, DType::kInt32));
  return RegisterFor<int64_t>(r, DType::kInt64);
}

}  // namespace paddlec::ops
