// The control-flow ops on a GPU place. Sub-blocks run through the runtime's runners (their ops get
// their own GPU kernels); only conditional_block's condition needs care here.
//
// With is_scalar_condition, Cond is one bool that a GPU op produced in device memory. Whether the
// sub-block runs decides which kernels the host queues next, so the host must know the value: the op's
// semantics force one 1-byte device-to-host copy and a wait for the stream (everything queued before
// it) per Run. That is the only synchronization in this family. (A Cond in host memory is read
// directly.) The tensor-list condition (every Cond non-empty) depends on shapes only: no copy.
// Built into libpaddlec_cuda.so only.
#include "common/cuda_host.h"
#include "control/control_kernels.h"

namespace paddlec::ops {
namespace {

constexpr InSlot kCond{0, "Cond"};
constexpr OutSlot kScope{1, "Scope"};

class ConditionalBlockGpu final : public OpKernel {
 public:
  explicit ConditionalBlockGpu(const KernelInit& init)
      : scalar_(init.attrs.Get<bool>("is_scalar_condition")), run_(init) {}

  // Reads its condition on the host to decide what to run.
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override {
    bool run = true;
    if (scalar_) {
      const Tensor& c = ctx.In(kCond);
      if (c.numel() != 1 || c.dtype() != DType::kBool)
        return MakeError(ErrorCode::kRuntime, "Cond must be one bool when is_scalar_condition is set, got {} {}",
                         DTypeName(c.dtype()), c.dims().ToString());
      if (c.place().is_cpu()) {
        run = c.data<bool>()[0];
      } else {
        // Forced by the semantics (see the file comment): the host needs the bool to choose its next work.
        bool value = false;
        const cudaStream_t s = cuda::Stream(ctx);
        PC_RETURN_IF_ERROR(cuda::Launched(
            cudaMemcpyAsync(&value, c.raw_data(), sizeof(bool), cudaMemcpyDeviceToHost, s), "conditional_block Cond"));
        PC_RETURN_IF_ERROR(cuda::Launched(cudaStreamSynchronize(s), "conditional_block Cond"));
        run = value;
      }
    } else {
      // PaddlePaddle's rule for tensor conditions: run when every Cond tensor is non-empty.
      for (int i = 0; i < ctx.NumIn(kCond); ++i)
        if (const Tensor* c = ctx.InOpt(kCond, i); c == nullptr || c->numel() == 0) run = false;
    }
    return run_.Run(ctx, run, kScope);
  }

 private:
  bool scalar_;
  control::ConditionalBlockRun run_;
};

}  // namespace

Status RegisterControlCudaKernels(OpRegistry& r) {
  // The ops' kernel dtype is fixed to float32 (control.cc): one kernel serves every Cond dtype. The
  // gradients and while run their blocks as plans on this device; their kernels are place-independent
  // (control/control_kernels.h).
  PC_RETURN_IF_ERROR(
      r.AddKernel("conditional_block", DeviceType::kCUDA, DType::kFloat32, MakeKernelClass<ConditionalBlockGpu>()));
  PC_RETURN_IF_ERROR(r.AddKernel("conditional_block_grad", DeviceType::kCUDA, DType::kFloat32,
                                 MakeKernelClass<control::ConditionalBlockGradKernel>()));
  PC_RETURN_IF_ERROR(r.AddKernel("while", DeviceType::kCUDA, DType::kFloat32, MakeKernelClass<control::WhileKernel>()));
  return r.AddKernel("while_grad", DeviceType::kCUDA, DType::kFloat32, MakeKernelClass<control::WhileGradKernel>());
}

}  // namespace paddlec::ops
