// expand_v2 and tile and their gradients on the GPU: expand_slots.h's broadcast views turned once
// per shape into the index descriptions of expand.cu's copy and reduce.cu's deterministic sum.
// Built into libpaddlec_cuda.so only.
#include "common/data_dtypes.h"
#include "math/expand_slots.h"
#include "math/math_cuda_host.h"

namespace paddlec::ops {
namespace {

using namespace expand;  // NOLINT: the concept's shared slots and views

template <bool kTile>
class BroadcastCuda final : public OpKernel {
 public:
  explicit BroadcastCuda(const KernelInit& init) : attrs_(AttrsOf<kTile>::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    Tensor& out = ctx.Out(kOut);
    if (!(x.dims() == x_dims_)) {
      PC_ASSIGN_OR_RETURN(BroadcastView v, ViewOf(x.dims(), attrs_));
      index_ = cuda::BroadcastFrom(v.out_view, v.x_view);
      x_dims_ = x.dims();
    }
    return cuda::Launched(cuda::BroadcastCopy(x.raw_data(), out.raw_data(), static_cast<int>(SizeOf(x.dtype())),
                                              out.numel(), index_, cuda::Stream(ctx)),
                          kTile ? "tile" : "expand_v2");
  }

 private:
  AttrsOf<kTile> attrs_;
  Dims x_dims_{-2};
  cuda::StridedIndex<2> index_;
};

/// X@GRAD = Out@GRAD summed over the broadcast axes of the view.
template <class T, bool kTile>
class BroadcastGradCuda final : public OpKernel {
 public:
  explicit BroadcastGradCuda(const KernelInit& init) : attrs_(AttrsOf<kTile>::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    if (!(dx->dims() == x_dims_)) {
      PC_ASSIGN_OR_RETURN(BroadcastView v, ViewOf(dx->dims(), attrs_));
      index_ = cuda::ReduceOnto(v.out_view, v.x_view);
      plan_ = cuda::PlanReduce(index_.m, index_.r, index_.inner_reduced);
      x_dims_ = dx->dims();
    }
    PC_ASSIGN_OR_RETURN(void* scratch, scratch_.Get(ctx.device().allocator(), PartialBytes(plan_)));
    return cuda::Launched(cuda::ReduceSum<T, T>(ctx.In(kGradDOut).data<T>(), dx->data<T>(), index_, plan_, false, T(0),
                                                scratch, cuda::Stream(ctx)),
                          kTile ? "tile_grad" : "expand_v2_grad");
  }

 private:
  AttrsOf<kTile> attrs_;
  Dims x_dims_{-2};
  cuda::ReduceIndex<2> index_;
  cuda::ReducePlan plan_;
  DeviceScratch scratch_;
};

template <bool kTile>
Status RegisterBroadcast(OpRegistry& r) {
  const std::string type = kTile ? "tile" : "expand_v2";
  Status st;
  ForEachDType([&]<class T>() {
    if (st.ok()) st = r.AddKernel(type, DeviceType::kCUDA, DTypeOf<T>(), MakeKernelClass<BroadcastCuda<kTile>>());
  });
  PC_RETURN_IF_ERROR(st);
  PC_RETURN_IF_ERROR(r.AddKernel(type + "_grad", DeviceType::kCUDA, DType::kFloat32,
                                 MakeKernelClass<BroadcastGradCuda<float, kTile>>()));
  return r.AddKernel(type + "_grad", DeviceType::kCUDA, DType::kFloat64,
                     MakeKernelClass<BroadcastGradCuda<double, kTile>>());
}

}  // namespace

Status RegisterExpandCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(RegisterBroadcast<false>(r));
  return RegisterBroadcast<true>(r);
}

}  // namespace paddlec::ops
