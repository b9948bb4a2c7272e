// cos_sim and its gradient on the GPU: one warp per row for the forward, element-wise gradients,
// and a deterministic column reduction for the gradient of a broadcast Y (math.cu). Built into
// libpaddlec_cuda.so only.
#include "math/cos_sim_slots.h"
#include "math/math_cuda_host.h"

namespace paddlec::ops {
namespace {

using namespace cos_sim;  // NOLINT: the op's shared slots

/// Rows and features of X [N, ...]; Y is one row broadcast to all when its first dim is 1 and N is not.
struct RowView {
  int64_t n, d;
  bool bcast;
};
RowView ViewOf(const Tensor& x, const Tensor& y) {
  const int64_t n = x.dims()[0];
  return {n, n == 0 ? 0 : x.numel() / n, y.dims()[0] == 1 && n != 1};
}

template <class T>
Status CosSimCuda(KernelContext& ctx) {
  const Tensor& x = ctx.In(kX);
  const Tensor& y = ctx.In(kY);
  const RowView v = ViewOf(x, y);
  // XNorm and YNorm are intermediate outputs: an inference program may leave them out.
  Tensor* xn = ctx.OutOpt(kXNorm);
  Tensor* yn = ctx.OutOpt(kYNorm);
  cudaStream_t s = cuda::Stream(ctx);
  if (v.n == 0 && v.bcast && yn != nullptr)  // no rows: the CPU still writes Y's norm, of zero features
    PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(yn->data<T>(), 0, sizeof(T), s));
  return cuda::Launched(
      cuda::CosSimForward<T>(x.data<T>(), y.data<T>(), ctx.Out(kOut).data<T>(), xn ? xn->data<T>() : nullptr,
                             yn ? yn->data<T>() : nullptr, v.n, v.d, v.bcast, s),
      "cos_sim forward");
}

template <class T>
class CosSimGradCuda final : public OpKernel {
 public:
  explicit CosSimGradCuda(const KernelInit&) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kGradX);
    const Tensor& y = ctx.In(kGradY);
    const RowView v = ViewOf(x, y);
    Tensor* dx = ctx.OutOpt(kDX);
    Tensor* dy = ctx.OutOpt(kDY);
    const cuda::CosSimGradInputs<T> in{x.data<T>(),
                                       y.data<T>(),
                                       ctx.In(kGradOut).data<T>(),
                                       ctx.In(kGradXNorm).data<T>(),
                                       ctx.In(kGradYNorm).data<T>(),
                                       ctx.In(kGradDOut).data<T>(),
                                       v.n,
                                       v.d,
                                       v.bcast};
    void* scratch = nullptr;
    if (dy != nullptr) {
      const int64_t elems = cuda::CosSimGradScratchElems(v.n, v.d, v.bcast);
      PC_ASSIGN_OR_RETURN(scratch, scratch_.Get(ctx.device().allocator(), static_cast<size_t>(elems) * 8));
    }
    return cuda::Launched(
        cuda::CosSimGrad<T>(in, dx ? dx->data<T>() : nullptr, dy ? dy->data<T>() : nullptr, scratch, cuda::Stream(ctx)),
        "cos_sim gradient");
  }

 private:
  DeviceScratch scratch_;  // the broadcast Y's gradient: sum(dOut * Out) and the column partials
};

}  // namespace

Status RegisterCosSimCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(r.AddKernel("cos_sim", DeviceType::kCUDA, DType::kFloat32, MakeKernel(CosSimCuda<float>)));
  PC_RETURN_IF_ERROR(r.AddKernel("cos_sim", DeviceType::kCUDA, DType::kFloat64, MakeKernel(CosSimCuda<double>)));
  PC_RETURN_IF_ERROR(
      r.AddKernel("cos_sim_grad", DeviceType::kCUDA, DType::kFloat32, MakeKernelClass<CosSimGradCuda<float>>()));
  return r.AddKernel("cos_sim_grad", DeviceType::kCUDA, DType::kFloat64, MakeKernelClass<CosSimGradCuda<double>>());
}

}  // namespace paddlec::ops
