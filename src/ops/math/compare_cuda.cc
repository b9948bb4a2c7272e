// The comparison ops, where and where_grad on the GPU: compare.cc's shape rules made once per shape
// into the index descriptions compare.cu's launchers take. Built into libpaddlec_cuda.so only.
#include "math/compare_slots.h"
#include "math/math_cuda_host.h"

namespace paddlec::ops {
namespace {

using namespace compare;  // NOLINT: the concept's shared slots and shape rules

template <class T>
class CompareCuda final : public OpKernel {
 public:
  CompareCuda(const KernelInit& init, Compare kind) : kind_(kind), attrs_(CompareAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    Tensor& out = ctx.Out(kOut);
    const cuda::StridedIndex<2>* bcast = nullptr;
    if (!(x.dims() == y.dims())) {
      if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
        PC_ASSIGN_OR_RETURN(math::ElementwiseShapes sh, math::BroadcastElementwise(x.dims(), y.dims(), attrs_.axis));
        index_ = cuda::BinaryIndex(sh);
        x_dims_ = x.dims();
        y_dims_ = y.dims();
      }
      bcast = &index_;
    }
    return cuda::Launched(cuda::CompareForward<T>(kind_, x.data<T>(), y.data<T>(), out.data<bool>(), out.numel(), bcast,
                                                  cuda::Stream(ctx)),
                          "compare");
  }

 private:
  Compare kind_;
  CompareAttrs attrs_;
  Dims x_dims_{-2}, y_dims_{-2};
  cuda::StridedIndex<2> index_;
};

/// Out's index and each operand's offsets for broadcast where operands (Condition, X, Y).
cuda::StridedIndex<3> WhereIndex(const WhereShapes& s) {
  const cuda::StridedIndex<4> full =
      cuda::ToIndex(math::MakeLoop<4>(s.out, {s.out, s.aligned[0], s.aligned[1], s.aligned[2]}));
  cuda::StridedIndex<3> idx;
  idx.rank = full.rank;
  for (int d = 0; d < full.rank; ++d) {
    idx.dims[d] = full.dims[d];
    for (int k = 0; k < 3; ++k) idx.strides[k][d] = full.strides[k + 1][d];
  }
  return idx;
}

template <class T>
class WhereCuda final : public OpKernel {
 public:
  explicit WhereCuda(const KernelInit&) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& c = ctx.In(kCondition);
    const Tensor& x = ctx.In(kWhereX);
    const Tensor& y = ctx.In(kWhereY);
    Tensor& out = ctx.Out(kOut);
    const cuda::StridedIndex<3>* bcast = nullptr;
    if (!(c.dims() == x.dims() && x.dims() == y.dims())) {
      if (!(c.dims() == dims_[0] && x.dims() == dims_[1] && y.dims() == dims_[2])) {
        PC_ASSIGN_OR_RETURN(WhereShapes s, BroadcastWhere(c.dims(), x.dims(), y.dims()));
        index_ = WhereIndex(s);
        dims_ = {c.dims(), x.dims(), y.dims()};
      }
      bcast = &index_;
    }
    return cuda::Launched(cuda::WhereForward<T>(c.data<bool>(), x.data<T>(), y.data<T>(), out.data<T>(), out.numel(),
                                                bcast, cuda::Stream(ctx)),
                          "where");
  }

 private:
  std::array<Dims, 3> dims_{Dims{-2}, Dims{-2}, Dims{-2}};
  cuda::StridedIndex<3> index_;
};

template <class T>
class WhereGradCuda final : public OpKernel {
 public:
  explicit WhereGradCuda(const KernelInit&) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& c = ctx.In(kCondition);
    const Tensor& x = ctx.In(kWhereX);
    const Tensor& y = ctx.In(kWhereY);
    if (!(c.dims() == dims_[0] && x.dims() == dims_[1] && y.dims() == dims_[2])) {
      PC_ASSIGN_OR_RETURN(WhereShapes s, BroadcastWhere(c.dims(), x.dims(), y.dims()));
      // Operands: Out@GRAD (Out's shape), Condition, the gradient's target.
      for (int t = 0; t < 2; ++t) {
        index_[t] =
            cuda::SplitReduce(cuda::ToIndex(math::MakeLoop<3>(s.out, {s.out, s.aligned[0], s.aligned[1 + t]})), 2);
        plan_[t] = cuda::PlanReduce(index_[t].m, index_[t].r, index_[t].inner_reduced);
      }
      dims_ = {c.dims(), x.dims(), y.dims()};
    }
    const T* dout = ctx.In(kWhereDOut).data<T>();
    for (int t = 0; t < 2; ++t) {
      Tensor* g = ctx.OutOpt(t == 0 ? kDX : kDY);
      if (g == nullptr) continue;
      PC_ASSIGN_OR_RETURN(void* scratch, scratch_[t].Get(ctx.device().allocator(), PartialBytes(plan_[t])));
      PC_RETURN_IF_ERROR(cuda::Launched(cuda::WhereGrad<T>(c.data<bool>(), dout, g->data<T>(), t == 0, index_[t],
                                                           plan_[t], scratch, cuda::Stream(ctx)),
                                        "where_grad"));
    }
    return Status::OK();
  }

 private:
  std::array<Dims, 3> dims_{Dims{-2}, Dims{-2}, Dims{-2}};
  cuda::ReduceIndex<3> index_[2];
  cuda::ReducePlan plan_[2];
  DeviceScratch scratch_[2];
};

template <class T>
KernelFactory CompareFactory(Compare kind) {
  return [kind](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new CompareCuda<T>(init, kind));
  };
}

template <class T>
Status RegisterFor(OpRegistry& r) {
  const DType t = DTypeOf<T>();
  for (const CompareOp& c : kCompareOps)
    PC_RETURN_IF_ERROR(r.AddKernel(c.type, DeviceType::kCUDA, t, CompareFactory<T>(c.kind)));
  PC_RETURN_IF_ERROR(r.AddKernel("where", DeviceType::kCUDA, t, MakeKernelClass<WhereCuda<T>>()));
  if constexpr (std::is_floating_point_v<T>)
    PC_RETURN_IF_ERROR(r.AddKernel("where_grad", DeviceType::kCUDA, t, MakeKernelClass<WhereGradCuda<T>>()));
  return Status::OK();
}

}  // namespace

Status RegisterCompareCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(RegisterFor<float>(r));
  PC_RETURN_IF_ERROR(RegisterFor<double>(r));
  PC_RETURN_IF_ERROR(RegisterFor<int32_t>(r));
  PC_RETURN_IF_ERROR(RegisterFor<int64_t>(r));
  return RegisterFor<bool>(r);
}

}  // namespace paddlec::ops
