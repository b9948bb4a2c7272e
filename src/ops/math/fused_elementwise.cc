// fused_elemwise_activation: a binary element-wise op and an activation in one loop, PaddlePaddle's
// op of the same name (written by paddlec's fuse-elementwise pass). functor_list = [unary, binary]
// computes Out = unary(binary(X, Y)); [binary, unary] computes Out = binary(X, unary(Y)). X and Y
// have one shape here (the pass fuses only those), so each element is read and written once instead
// of the intermediate being written and read back.
#include <cmath>

#include "common/cpu_kernels.h"
#include "math/fused_elementwise_slots.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using namespace fused_elementwise;  // NOLINT: the op's shared slots and functors
using Binary = FusedBinary;
using Unary = FusedUnary;

template <class T>
inline T ApplyUnary(Unary u, T v, T scale) {
  switch (u) {
    case Unary::kRelu:
      return v > T(0) ? v : T(0);
    case Unary::kTanh:
      return std::tanh(v);
    case Unary::kSigmoid:
      return T(1) / (T(1) + std::exp(-v));
    case Unary::kScale:
      return v * scale;
  }
  return v;
}
template <class T>
inline T ApplyBinary(Binary b, T x, T y) {
  switch (b) {
    case Binary::kAdd:
      return x + y;
    case Binary::kSub:
      return x - y;
    case Binary::kMul:
      return x * y;
  }
  return x;
}

/// One chunk of the op with the functors fixed at compile time: the per-element switch folds away,
/// so the loop vectorises (ResNet-20's add + relu ran ~3x slower with the switch inside).
template <class T, Unary U, Binary B, bool kOutside, bool kMid>
void FusedLoop(const T* x, const T* y, T* out, T* mid, T scale, int64_t begin, int64_t n) {
  for (int64_t i = begin; i < begin + n; ++i) {
    const T inner = kOutside ? ApplyBinary(B, x[i], y[i]) : ApplyUnary(U, y[i], scale);
    out[i] = kOutside ? ApplyUnary(U, inner, scale) : ApplyBinary(B, x[i], inner);
    if constexpr (kMid) mid[i] = inner;
  }
}

template <class T>
using FusedLoopFn = void (*)(const T*, const T*, T*, T*, T, int64_t, int64_t);

template <class T, Unary U, Binary B>
FusedLoopFn<T> PickLoop(bool outside, bool mid) {
  if (outside) return mid ? FusedLoop<T, U, B, true, true> : FusedLoop<T, U, B, true, false>;
  return mid ? FusedLoop<T, U, B, false, true> : FusedLoop<T, U, B, false, false>;
}

template <class T, Unary U>
FusedLoopFn<T> PickLoop(Binary b, bool outside, bool mid) {
  switch (b) {
    case Binary::kAdd:
      return PickLoop<T, U, Binary::kAdd>(outside, mid);
    case Binary::kSub:
      return PickLoop<T, U, Binary::kSub>(outside, mid);
    case Binary::kMul:
      break;
  }
  return PickLoop<T, U, Binary::kMul>(outside, mid);
}

template <class T>
FusedLoopFn<T> PickLoop(const FusedFunctors& f, bool mid) {
  switch (f.unary) {
    case Unary::kRelu:
      return PickLoop<T, Unary::kRelu>(f.binary, f.unary_outside, mid);
    case Unary::kTanh:
      return PickLoop<T, Unary::kTanh>(f.binary, f.unary_outside, mid);
    case Unary::kSigmoid:
      return PickLoop<T, Unary::kSigmoid>(f.binary, f.unary_outside, mid);
    case Unary::kScale:
      break;
  }
  return PickLoop<T, Unary::kScale>(f.binary, f.unary_outside, mid);
}

Status InferFusedElementwise(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(DecodeFunctors(ctx.attrs()).status());
  const Dims x = ctx.InputDims(kX), y = ctx.InputDims(kY);
  if (ctx.InputDType(kX) != ctx.InputDType(kY))
    return ctx.Fail("X has dtype {} but Y has dtype {}: the fused op needs operands of one dtype",
                    DTypeName(ctx.InputDType(kX)), DTypeName(ctx.InputDType(kY)));
  if (!DimsMatch(x, y))
    return ctx.Fail(
        "X has shape {} but Y has shape {}: paddlec's fused_elemwise_activation needs operands of one "
        "shape (keep broadcasting ops unfused)",
        x.ToString(), y.ToString());
  ctx.SetOutput(kOut, x, ctx.InputDType(kX));
  ctx.ShareDims(kX, kIntermediateOut);
  return Status::OK();
}

template <class T>
class FusedElementwiseKernel final : public OpKernel {
 public:
  explicit FusedElementwiseKernel(const KernelInit& init) : f_(DecodeFunctors(init.attrs).value()) {}

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.In(kX).data<T>();
    const T* y = ctx.In(kY).data<T>();
    T* out = ctx.Out(kOut).data<T>();
    Tensor* mid = ctx.OutOpt(kIntermediateOut);
    T* m = mid != nullptr && mid->numel() > 0 ? mid->data<T>() : nullptr;
    const T scale = static_cast<T>(f_.scale);
    const FusedLoopFn<T> loop = PickLoop<T>(f_, m != nullptr);
    ParallelChunks(ctx.In(kX).numel(), [&](int64_t b, int64_t n) { loop(x, y, out, m, scale, b, n); });
    return Status::OK();
  }

 private:
  FusedFunctors f_;
};

/// DecodeFunctors's error at kernel creation (validate reports it first).
template <class T>
StatusOr<std::unique_ptr<OpKernel>> MakeFusedElementwise(const KernelInit& init) {
  PC_RETURN_IF_ERROR(DecodeFunctors(init.attrs).status());
  return std::unique_ptr<OpKernel>(new FusedElementwiseKernel<T>(init));
}

}  // namespace

void RegisterFusedElementwiseOps(OpRegistry& r) {
  r.Add("fused_elemwise_activation")
      .Doc(
          "A binary element-wise op and an activation in one pass over the data: functor_list [unary, binary] "
          "gives Out = unary(binary(X, Y)), [binary, unary] gives Out = binary(X, unary(Y)); binary is "
          "elementwise_add, elementwise_sub or elementwise_mul, unary is relu, tanh, sigmoid or scale (by the "
          "scale attribute). X and Y have one shape. Written by the fuse-elementwise pass.")
      .Input(kX, "The binary op's X.")
      .Input(kY, "The binary op's Y, of X's shape.")
      .Output(kOut, "The result, of X's shape.")
      .Output(kIntermediateOut, "The inner function's result (written when the slot is bound).",
              kDispensable | kIntermediate)
      .RequiredAttr<std::vector<std::string>>("functor_list", "The two functions, outer first.")
      .Attr("axis", -1, "PaddlePaddle's broadcast axis; X and Y have one shape here, so it is unused.")
      .Attr("scale", 0.0f, "The factor of the scale functor.")
      .Attr("save_intermediate_out", false, "PaddlePaddle: whether IntermediateOut is kept for a gradient.")
      .InferShape(InferFusedElementwise)
      .NoGradient()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeFusedElementwise<float>)
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeFusedElementwise<double>);
}

}  // namespace paddlec::ops
