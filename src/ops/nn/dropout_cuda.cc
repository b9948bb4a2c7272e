// dropout and dropout_grad on the GPU with dropout.cc's semantics and random stream: the same
// (seed, step, i) -> keep bit, so a GPU run drops exactly the elements a CPU run drops. The seed
// choice (Seed input, then the seed attribute when fixed, then the op instance's seed) and the step
// counter (training runs of this kernel object; 0 with a Seed input) are dropout.cc's. A Seed input
// is read by the kernel on the device, never copied to the host.
#include <string>

#include "nn/dropout_slots.h"
#include "nn/nn_cuda.h"
#include "nn/nn_cuda_host.h"

namespace paddlec::ops::nn {
namespace {

using namespace dropout;  // NOLINT: the op's shared slots and attributes
using runtime::cuda::CudaContext;

template <class T>
class DropoutKernel final : public OpKernel {
 public:
  explicit DropoutKernel(const KernelInit& init)
      : attrs_(DropoutAttrs::Decode(init.attrs)),
        seed_(attrs_.StreamSeed(init.seed)),
        step_(init.start_step) {}

  // Each run draws a new mask (its step is a launch argument): a replay would repeat one mask.
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& xt = ctx.In(kX);
    const T* x = xt.data<T>();
    T* y = ctx.Out(kOut).data<T>();
    Tensor* mask_t = ctx.OutOpt(kMask);
    uint8_t* mask = mask_t ? mask_t->data<uint8_t>() : nullptr;
    const int64_t n = xt.numel();

    if (attrs_.is_test) {
      if (mask && n > 0) PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(mask, 1, static_cast<size_t>(n), cc.stream()));
      return cuda::Launched(cuda::Scale<T>(x, y, n, static_cast<double>(attrs_.test_scale<T>()), cc.stream()),
                            "dropout (inference)");
    }
    PC_ASSIGN_OR_RETURN(const Tensor* seed_t, SeedInput(ctx));
    const uint64_t step = seed_t ? 0 : step_++;
    if (attrs_.p >= 1.0f) {  // everything dropped (the upscale factor would be infinite)
      if (n > 0) {
        PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(y, 0, static_cast<size_t>(n) * sizeof(T), cc.stream()));
        if (mask) PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(mask, 0, static_cast<size_t>(n), cc.stream()));
      }
      return Status::OK();
    }
    const int32_t* seed_i32 = nullptr;
    const int64_t* seed_i64 = nullptr;
    if (seed_t) {
      if (seed_t->dtype() == DType::kInt64)
        seed_i64 = seed_t->data<int64_t>();
      else
        seed_i32 = seed_t->data<int32_t>();
    }
    return cuda::Launched(cuda::DropoutTrain<T>(x, y, mask, n, seed_, seed_i32, seed_i64, step, attrs_.p,
                                                static_cast<double>(attrs_.train_scale<T>()), cc.stream()),
                          "dropout");
  }

 private:
  DropoutAttrs attrs_;
  uint64_t seed_;
  uint64_t step_;  // draw number of the next mask, as dropout.cc counts it
};

template <class T>
Status DropoutGradGpu(KernelContext& ctx, const DropoutAttrs& attrs) {
  Tensor* dx = ctx.OutOpt(kGDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& dout = ctx.In(kGDOut);
  if (attrs.is_test)
    return cuda::Launched(cuda::Scale<T>(dout.data<T>(), dx->data<T>(), dout.numel(),
                                         static_cast<double>(attrs.test_scale<T>()), cuda::Stream(ctx)),
                          "dropout_grad (inference)");
  const Tensor* mask = ctx.InOpt(kGMask);
  if (mask == nullptr)
    return MakeError(ErrorCode::kRuntime, "dropout_grad in training mode needs the forward op's Mask, which is absent");
  const T s = attrs.p >= 1.0f ? T(0) : attrs.train_scale<T>();
  return cuda::Launched(cuda::DropoutBackward<T>(mask->data<uint8_t>(), dout.data<T>(), dx->data<T>(), dout.numel(),
                                                 static_cast<double>(s), cuda::Stream(ctx)),
                        "dropout_grad");
}

template <class T>
KernelFactory DropoutFactory() {
  return MakeKernelClass<DropoutKernel<T>>();
}
template <class T>
KernelFactory DropoutGradFactory() {
  return MakeKernel(DropoutGradGpu<T>);
}

}  // namespace

Status RegisterDropoutCudaKernels(OpRegistry& r) {
  PC_CUDA_FLOAT_KERNELS(r, "dropout", DropoutFactory);
  PC_CUDA_FLOAT_KERNELS(r, "dropout_grad", DropoutGradFactory);
  return Status::OK();
}

}  // namespace paddlec::ops::nn
