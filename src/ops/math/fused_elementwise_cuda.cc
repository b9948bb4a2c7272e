// fused_elemwise_activation on the GPU: fused_elementwise.cc's twin, one pass of
// fused_elementwise.cu's kernel. Built into libpaddlec_cuda.so only.
#include "math/fused_elementwise_slots.h"
#include "math/math_cuda_host.h"

namespace paddlec::ops {
namespace {

using namespace fused_elementwise;  // NOLINT: the op's shared slots and functors

template <class T>
class FusedElementwiseCuda final : public OpKernel {
 public:
  explicit FusedElementwiseCuda(const FusedFunctors& f) : f_(f) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    Tensor* mid = ctx.OutOpt(kIntermediateOut);
    T* m = mid != nullptr && mid->numel() > 0 ? mid->data<T>() : nullptr;
    return cuda::Launched(cuda::FusedElementwise<T>(f_, x.data<T>(), ctx.In(kY).data<T>(), ctx.Out(kOut).data<T>(), m,
                                                    x.numel(), cuda::Stream(ctx)),
                          "fused_elemwise_activation");
  }

 private:
  FusedFunctors f_;
};

/// DecodeFunctors's error at kernel creation (validate reports it first).
template <class T>
StatusOr<std::unique_ptr<OpKernel>> MakeFusedElementwiseCuda(const KernelInit& init) {
  PC_ASSIGN_OR_RETURN(FusedFunctors f, DecodeFunctors(init.attrs));
  return std::unique_ptr<OpKernel>(new FusedElementwiseCuda<T>(f));
}

}  // namespace

Status RegisterFusedElementwiseCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(
      r.AddKernel("fused_elemwise_activation", DeviceType::kCUDA, DType::kFloat32, MakeFusedElementwiseCuda<float>));
  return r.AddKernel("fused_elemwise_activation", DeviceType::kCUDA, DType::kFloat64, MakeFusedElementwiseCuda<double>);
}

}  // namespace paddlec::ops
