// dropout and dropout_grad with PaddlePaddle's two implementations:
//   downgrade_in_infer: training Out = X * Mask,               inference Out = X * (1 - p);
//   upscale_in_train:   training Out = X * Mask / (1 - p),     inference Out = X.
// Mask[i] = 1 keeps element i, with probability 1 - p.
//
// Randomness: element i of run number `step` keeps iff Philox(seed)(step, i), as a 24-bit uniform in
// [0, 1), is >= p. The seed is the Seed input's value when given (the mask is then a function of that
// value alone, step fixed at 0), else the `seed` attribute when fix_seed is set or seed != 0, else the
// op instance's seed from the program seed (KernelInit::seed). `step` counts the kernel's training
// runs, so a fixed seed reproduces every step bit for bit, whatever the thread count. Unlike
// PaddlePaddle, whose fix_seed repeats one mask on every step, the mask changes from step to step.
#include <cstring>

#include "common/cpu_kernels.h"
#include "common/philox.h"
#include "nn/dropout_slots.h"
#include "nn/nn.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using namespace dropout;  // NOLINT: the op's shared slots and attributes

Status InferDropout(InferShapeContext& ctx) {
  if (ctx.HasInput(kSeed)) {
    DType t = ctx.InputDType(kSeed);
    if (t != DType::kInt32 && t != DType::kInt64 && t != DType::kUndefined)
      return ctx.Fail("Seed has dtype {} but must be int32 or int64", DTypeName(t));
    int64_t n = ctx.InputDims(kSeed).Numel();
    if (n >= 0 && n != 1) return ctx.Fail("Seed has shape {} but must hold one value", ctx.InputDims(kSeed).ToString());
  }
  ctx.ShareDims(kX, kOut);
  ctx.SetOutput(kMask, ctx.InputDims(kX), DType::kUInt8);
  return Status::OK();
}

Status InferDropoutGrad(InferShapeContext& ctx) {
  Dims dout = ctx.InputDims(kGDOut);
  if (ctx.HasInput(kGMask) && !DimsMatch(ctx.InputDims(kGMask), dout))
    return ctx.Fail("Mask has shape {} but Out@GRAD has shape {}: they must match", ctx.InputDims(kGMask).ToString(),
                    dout.ToString());
  ctx.SetOutput(kGDX, dout, ctx.InputDType(kGDOut));
  return Status::OK();
}

int64_t ReadSeed(const Tensor& t) {
  if (t.dtype() == DType::kInt64) return t.data<int64_t>()[0];
  return t.data<int32_t>()[0];
}

template <class T>
class DropoutKernel final : public OpKernel {
 public:
  explicit DropoutKernel(const KernelInit& init)
      : attrs_(DropoutAttrs::Decode(init.attrs)),
        philox_(attrs_.StreamSeed(init.seed)),
        step_(init.start_step) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& xt = ctx.In(kX);
    const T* x = xt.data<T>();
    T* y = ctx.Out(kOut).data<T>();
    Tensor* mask_t = ctx.OutOpt(kMask);
    uint8_t* mask = mask_t ? mask_t->data<uint8_t>() : nullptr;
    const int64_t n = xt.numel();

    if (attrs_.is_test) {
      const T s = attrs_.test_scale<T>();
      ParallelChunks(n, [&](int64_t b, int64_t len) { MutEigenVec<T>(y + b, len) = ConstEigenVec<T>(x + b, len) * s; });
      if (mask) std::memset(mask, 1, static_cast<size_t>(n));
      return Status::OK();
    }
    PC_ASSIGN_OR_RETURN(const Tensor* seed_t, SeedInput(ctx));
    Philox philox = seed_t ? Philox(static_cast<uint64_t>(ReadSeed(*seed_t))) : philox_;
    const uint64_t step = seed_t ? 0 : step_++;
    if (attrs_.p >= 1.0f) {  // everything dropped (the upscale factor would be infinite)
      std::memset(y, 0, static_cast<size_t>(n) * sizeof(T));
      if (mask) std::memset(mask, 0, static_cast<size_t>(n));
      return Status::OK();
    }
    const float p = attrs_.p;
    const T s = attrs_.train_scale<T>();
    // One Philox block gives the uniforms of 4 consecutive elements.
    ParallelFor((n + 3) / 4, kElementwiseGrain / 4, [&](int64_t b, int64_t e) {
      for (int64_t blk = b; blk < e; ++blk) {
        auto words = philox.Block(step, static_cast<uint64_t>(blk));
        int64_t base = blk * 4, lanes = std::min<int64_t>(4, n - base);
        for (int64_t l = 0; l < lanes; ++l) {
          bool keep = Philox::ToUnitFloat(words[l]) >= p;
          y[base + l] = keep ? x[base + l] * s : T(0);
          if (mask) mask[base + l] = keep;
        }
      }
    });
    return Status::OK();
  }

 private:
  DropoutAttrs attrs_;
  Philox philox_;
  uint64_t step_;  // draw number of the next mask: runs so far, counting those before a resume
};

template <class T>
Status DropoutGradCpu(KernelContext& ctx, const DropoutAttrs& attrs) {
  Tensor* dx_t = ctx.OutOpt(kGDX);
  if (dx_t == nullptr) return Status::OK();
  const Tensor& dout = ctx.In(kGDOut);
  const T* dy = dout.data<T>();
  T* dx = dx_t->data<T>();
  if (attrs.is_test) {
    const T s = attrs.test_scale<T>();
    ParallelChunks(dout.numel(),
                   [&](int64_t b, int64_t n) { MutEigenVec<T>(dx + b, n) = ConstEigenVec<T>(dy + b, n) * s; });
    return Status::OK();
  }
  const Tensor* mask_t = ctx.InOpt(kGMask);
  if (mask_t == nullptr)
    return MakeError(ErrorCode::kRuntime, "dropout_grad in training mode needs the forward op's Mask, which is absent");
  const uint8_t* mask = mask_t->data<uint8_t>();
  const T s = attrs.p >= 1.0f ? T(0) : attrs.train_scale<T>();
  ParallelChunks(dout.numel(), [&](int64_t b, int64_t n) {
    for (int64_t i = b; i < b + n; ++i) dx[i] = mask[i] ? dy[i] * s : T(0);
  });
  return Status::OK();
}

}  // namespace

void RegisterDropoutOps(OpRegistry& r) {
  r.Add("dropout")
      .Doc(
          "Randomly zeroes elements with probability dropout_prob in training; see dropout_implementation for the "
          "scaling in training and inference.")
      .Input(kX, "Input tensor of any shape.")
      .Input(kSeed, "A one-value int32 tensor; when given, its value seeds the mask.", kDispensable)
      .Output(kOut, "Output, shaped like X.")
      .Output(kMask, "uint8 mask shaped like X: 1 where X was kept (all ones in inference).", kIntermediate)
      .Attr("dropout_prob", 0.5f, "Probability of dropping each element.")
      .Range(0.0, 1.0)
      .Attr("is_test", false, "Inference: no dropping, only the implementation's scaling.")
      .Attr("fix_seed", false, "Seed the mask from the seed attribute instead of the program seed.")
      .Attr("seed", 0, "The mask's seed when fix_seed is set (a nonzero seed also fixes it).")
      .Attr("dropout_implementation", "downgrade_in_infer",
            "downgrade_in_infer: train Out = X * Mask, infer Out = X * (1 - p); upscale_in_train: train Out = X * "
            "Mask / (1 - p), infer Out = X.")
      .AllowedValues({"downgrade_in_infer", "upscale_in_train"})
      .InferShape(InferDropout)
      .Grad()
      .NoGradInput(kSeed)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<DropoutKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<DropoutKernel<double>>());

  r.Add("dropout_grad")
      .GradOf("dropout")
      .Doc(
          "Gradient of dropout: X@GRAD = Out@GRAD * Mask times the training scale (the inference scale in test "
          "mode).")
      .Input(kGMask, "The forward Mask (needed in training mode).", kDispensable)
      .Input(kGDOut, "Gradient of the loss with respect to Out.")
      .Output(kGDX, "Gradient of the loss with respect to X.")
      .InferShape(InferDropoutGrad)
      .KernelDTypeFromInput(kGDOut)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(DropoutGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(DropoutGradCpu<double>));
}

}  // namespace paddlec::ops
