// elementwise_{add,sub,mul,div,max,min} and their gradients on the GPU: the CPU kernels' shape
// analysis (math::BroadcastElementwise) made once per shape into the plain index descriptions the
// launchers of elementwise.cu take. Built into libpaddlec_cuda.so only.
#include <type_traits>

#include "math/elementwise_slots.h"
#include "math/math_cuda_host.h"

namespace paddlec::ops {
namespace {

using namespace elementwise;  // NOLINT: the family's shared slots

using cuda::BinaryOp;

/// Which forward values each op's gradient reads (elementwise.cc's kUsesX / kUsesY / kUsesOut).
struct Uses {
  bool x, y, out;
};
constexpr Uses UsesOf(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub:
      return {false, false, false};
    case BinaryOp::kMul:
    case BinaryOp::kMax:
    case BinaryOp::kMin:
      return {true, true, false};
    case BinaryOp::kDiv:
      return {false, true, true};
  }
  return {true, true, true};
}

template <class T>
class ElementwiseCuda final : public OpKernel {
 public:
  ElementwiseCuda(const KernelInit& init, BinaryOp op) : op_(op), axis_(init.attrs.Get<int>("axis")) {}

  // Integer division waits for the device to check for zero divisors.
  bool Replayable() const override { return !(std::is_integral_v<T> && op_ == BinaryOp::kDiv); }
  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    Tensor& out = ctx.Out(kOut);
    cudaStream_t s = cuda::Stream(ctx);
    if constexpr (std::is_integral_v<T>) {
      if (op_ == BinaryOp::kDiv) PC_RETURN_IF_ERROR(CheckNoZero(ctx, y));
    }
    const cuda::StridedIndex<2>* bcast = nullptr;
    if (!(x.dims() == y.dims())) {
      if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
        PC_ASSIGN_OR_RETURN(math::ElementwiseShapes sh, math::BroadcastElementwise(x.dims(), y.dims(), axis_));
        index_ = cuda::BinaryIndex(sh);
        x_dims_ = x.dims();
        y_dims_ = y.dims();
      }
      bcast = &index_;
    }
    return cuda::Launched(cuda::BinaryForward<T>(op_, x.data<T>(), y.data<T>(), out.data<T>(), out.numel(), bcast, s),
                          "elementwise forward");
  }

 private:
  /// Integer division by zero is an error on the CPU; so it is here. Reporting it forces the one
  /// host synchronization of this family: the flag computed on the device is read back before the
  /// division is queued. Only integer elementwise_div pays it.
  Status CheckNoZero(KernelContext& ctx, const Tensor& y) {
    if (y.numel() == 0) return Status::OK();
    cudaStream_t s = cuda::Stream(ctx);
    PC_ASSIGN_OR_RETURN(void* flag, flag_.Get(ctx.device().allocator(), sizeof(int)));
    PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(flag, 0, sizeof(int), s));
    PC_RETURN_IF_ERROR(
        cuda::Launched(cuda::AnyZero<T>(y.data<T>(), y.numel(), static_cast<int*>(flag), s), "any zero"));
    int host = 0;
    PC_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&host, flag, sizeof(int), cudaMemcpyDeviceToHost, s));
    PC_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    if (host != 0)
      return MakeError(ErrorCode::kRuntime, "integer division by zero: Y of shape {} holds a 0", y.dims().ToString());
    return Status::OK();
  }

  BinaryOp op_;
  int axis_;
  Dims x_dims_{-2}, y_dims_{-2};  // shapes index_ was built for (-2: none yet)
  cuda::StridedIndex<2> index_;
  DeviceScratch flag_;
};

/// X@GRAD and Y@GRAD: written at Out's index where the operand has Out's shape, otherwise summed
/// onto the operand by a deterministic reduction.
template <class T>
class ElementwiseGradCuda final : public OpKernel {
 public:
  ElementwiseGradCuda(const KernelInit& init, BinaryOp op) : op_(op), axis_(init.attrs.Get<int>("axis")) {}

  Status Run(KernelContext& ctx) override {
    const Uses uses = UsesOf(op_);
    const Tensor& x = ctx.In(kGradX);
    const Tensor& y = ctx.In(kGradY);
    const Tensor& dout = ctx.In(uses.out ? kGradDOutAfterOut : kGradDOut);
    Tensor* dx = ctx.OutOpt(kDX);
    Tensor* dy = ctx.OutOpt(kDY);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(math::ElementwiseShapes sh, math::BroadcastElementwise(x.dims(), y.dims(), axis_));
      if (!(sh.out == dout.dims()))
        return MakeError(ErrorCode::kShape, "Out@GRAD has shape {} but X {} and Y {} broadcast to {}",
                         dout.dims().ToString(), x.dims().ToString(), y.dims().ToString(), sh.out.ToString());
      flat_ = x.dims() == y.dims();
      index_ = cuda::BinaryIndex(sh);
      dx_reduces_ = !(sh.x == sh.out);
      dy_reduces_ = !(sh.y == sh.out);
      if (dx_reduces_) {
        dx_index_ = cuda::BinaryGradIndex(sh, cuda::kGradOpX);
        dx_plan_ = cuda::PlanReduce(dx_index_.m, dx_index_.r, dx_index_.inner_reduced);
      }
      if (dy_reduces_) {
        dy_index_ = cuda::BinaryGradIndex(sh, cuda::kGradOpY);
        dy_plan_ = cuda::PlanReduce(dy_index_.m, dy_index_.r, dy_index_.inner_reduced);
      }
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    const cuda::BinaryGradInputs<T> in{dout.data<T>(), uses.x ? x.data<T>() : nullptr, uses.y ? y.data<T>() : nullptr,
                                       uses.out ? ctx.In(kGradOut).data<T>() : nullptr};
    if (dx != nullptr) PC_RETURN_IF_ERROR(Compute(ctx, in, true, *dx));
    if (dy != nullptr) PC_RETURN_IF_ERROR(Compute(ctx, in, false, *dy));
    return Status::OK();
  }

 private:
  Status Compute(KernelContext& ctx, const cuda::BinaryGradInputs<T>& in, bool is_dx, Tensor& grad) {
    cudaStream_t s = cuda::Stream(ctx);
    if (!(is_dx ? dx_reduces_ : dy_reduces_))
      return cuda::Launched(
          cuda::BinaryGradDirect<T>(op_, is_dx, in, grad.data<T>(), grad.numel(), flat_ ? nullptr : &index_, s),
          "elementwise gradient");
    const cuda::ReducePlan& plan = is_dx ? dx_plan_ : dy_plan_;
    PC_ASSIGN_OR_RETURN(void* scratch, scratch_.Get(ctx.device().allocator(), PartialBytes(plan)));
    return cuda::Launched(
        cuda::BinaryGradReduce<T>(op_, is_dx, in, grad.data<T>(), is_dx ? dx_index_ : dy_index_, plan, scratch, s),
        "elementwise gradient reduction");
  }

  BinaryOp op_;
  int axis_;
  Dims x_dims_{-2}, y_dims_{-2};
  bool flat_ = false;
  cuda::StridedIndex<2> index_;  // X and Y over Out, for a gradient shaped like Out
  bool dx_reduces_ = false, dy_reduces_ = false;
  cuda::ReduceIndex<3> dx_index_, dy_index_;
  cuda::ReducePlan dx_plan_, dy_plan_;
  // dX's and dY's reductions run one after the other on the stream: one scratch serves both.
  DeviceScratch scratch_;
};

template <template <class> class K, class T>
KernelFactory Factory(BinaryOp op) {
  return [op](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new K<T>(init, op));
  };
}

}  // namespace

Status RegisterElementwiseCudaKernels(OpRegistry& r) {
  const std::pair<const char*, BinaryOp> kOps[] = {
      {"elementwise_add", BinaryOp::kAdd}, {"elementwise_sub", BinaryOp::kSub}, {"elementwise_mul", BinaryOp::kMul},
      {"elementwise_div", BinaryOp::kDiv}, {"elementwise_max", BinaryOp::kMax}, {"elementwise_min", BinaryOp::kMin}};
  for (auto [type, op] : kOps) {
    const std::string grad = std::string(type) + "_grad";
    PC_RETURN_IF_ERROR(r.AddKernel(type, DeviceType::kCUDA, DType::kFloat32, Factory<ElementwiseCuda, float>(op)));
    PC_RETURN_IF_ERROR(r.AddKernel(type, DeviceType::kCUDA, DType::kFloat64, Factory<ElementwiseCuda, double>(op)));
    PC_RETURN_IF_ERROR(r.AddKernel(type, DeviceType::kCUDA, DType::kInt32, Factory<ElementwiseCuda, int32_t>(op)));
    PC_RETURN_IF_ERROR(r.AddKernel(type, DeviceType::kCUDA, DType::kInt64, Factory<ElementwiseCuda, int64_t>(op)));
    PC_RETURN_IF_ERROR(r.AddKernel(grad, DeviceType::kCUDA, DType::kFloat32, Factory<ElementwiseGradCuda, float>(op)));
    PC_RETURN_IF_ERROR(r.AddKernel(grad, DeviceType::kCUDA, DType::kFloat64, Factory<ElementwiseGradCuda, double>(op)));
  }
  return Status::OK();
}

}  // namespace paddlec::ops
