// The math family's entry point, and its small element-wise ops: scale, sum (add_n) and square.
//
// The larger concepts live beside this file: elementwise.cc (broadcasting binary ops), matmul.cc
// (mul, matmul_v2 on oneDNN), reduce.cc (mean, reduce_sum, reduce_mean), cos_sim.cc, expand.cc
// (expand_v2, tile), cumsum.cc and compare.cc (the comparison ops, where).
#include <algorithm>

#include "common/cpu_kernels.h"
#include "math/math_slots.h"
#include "paddlec/ir/program.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterElementwiseOps(OpRegistry& r);
void RegisterMatmulOps(OpRegistry& r);
void RegisterReduceOps(OpRegistry& r);
void RegisterCosSimOps(OpRegistry& r);
void RegisterExpandOps(OpRegistry& r);
void RegisterCumsumOps(OpRegistry& r);
void RegisterCompareOps(OpRegistry& r);
void RegisterFcOps(OpRegistry& r);
void RegisterFusedElementwiseOps(OpRegistry& r);

namespace {

using namespace math_ops;  // NOLINT: the family's shared slots and attributes

/// Replaces (or adds) an attribute of an OpDesc.
template <class T>
void SetAttr(pb::OpDesc& op, const std::string& name, const T& value) {
  for (auto& a : *op.mutable_attrs())
    if (a.name() == name) {
      a = MakeAttr(name, value);
      return;
    }
  *op.add_attrs() = MakeAttr(name, value);
}

// ---- scale ------------------------------------------------------------------------------------

Status InferScale(InferShapeContext& ctx) {
  if (ctx.HasInput(kBiasTensor))
    return ctx.Fail("a bound BiasTensor is not supported: paddlec takes the bias from the `bias` attribute")
        .Note("PaddlePaddle writes this slot empty; set the bias attribute instead");
  if (ctx.HasInput(kScaleTensor)) {
    const Dims s = ctx.InputDims(kScaleTensor);
    if (s.Numel() >= 0 && s.Numel() != 1)
      return ctx.Fail("ScaleTensor has shape {} but must hold exactly one element", s.ToString());
  }
  ctx.ShareDims(kX, kOut);
  return Status::OK();
}

template <class T>
void ScaleRun(const T* x, T* y, int64_t n, T s, T b, bool after) {
  if (after) {
    for (int64_t j = 0; j < n; ++j) y[j] = s * x[j] + b;
  } else {
    for (int64_t j = 0; j < n; ++j) y[j] = s * (x[j] + b);
  }
}

/// Out = scale * X + bias, or scale * (X + bias). As in PaddlePaddle, integer kernels cast scale and
/// bias to the integer type first (scale 0.5 on int64 is 0).
template <class T>
Status ScaleCpu(KernelContext& ctx, const ScaleAttrs& a) {
  const Tensor& x = ctx.In(kX);
  T* y = ctx.Out(kOut).data<T>();
  T s = static_cast<T>(a.scale);
  if (const Tensor* st = ctx.InOpt(kScaleTensor)) {
    if (st->numel() != 1)
      return MakeError(ErrorCode::kRuntime, "ScaleTensor has shape {} but must hold exactly one element",
                       st->dims().ToString());
    PC_RETURN_IF_ERROR(VisitDType(st->dtype(), [&]<class S>() { s = static_cast<T>(st->data<S>()[0]); }));
  }
  const T b = static_cast<T>(a.bias);
  const T* xp = x.data<T>();
  const int64_t n = x.numel();
  if (n < 2 * kElementwiseGrain) {  // the common small case: no parallel region, no lambda
    ScaleRun(xp, y, n, s, b, a.bias_after_scale);
    return Status::OK();
  }
  ParallelChunks(n,
                 [&](int64_t begin, int64_t len) { ScaleRun(xp + begin, y + begin, len, s, b, a.bias_after_scale); });
  return Status::OK();
}

/// d(scale * X + bias)/dX = scale, so X@GRAD = scale(Out@GRAD, scale, bias 0) (PaddlePaddle's maker).
Status ScaleGradMaker(GradMakerContext& ctx) {
  std::vector<std::string> dx = ctx.InputGrad("X");
  if (dx.empty() || dx[0] == ir::kEmptyVarName) return Status::OK();
  pb::OpDesc op = ctx.NewOp("scale");
  AddInput(op, "X", ctx.OutputGrad("Out"));
  if (std::vector<std::string> s = ctx.Input("ScaleTensor"); !s.empty()) AddInput(op, "ScaleTensor", s);
  AddOutput(op, "Out", dx);
  SetAttr(op, "bias", 0.0f);
  SetAttr(op, "bias_after_scale", true);
  ctx.Emit(std::move(op));
  return Status::OK();
}

// ---- sum (add_n) ------------------------------------------------------------------------------

bool IsEmptyInput(const InferShapeContext& ctx, int i) {
  return ctx.InputName(kX, i) == ir::kEmptyVarName || ctx.InputDType(kX, i) == DType::kUndefined;
}

Status InferSum(InferShapeContext& ctx) {
  int first = -1;
  Dims dims;
  DType dtype = DType::kUndefined;
  for (int i = 0; i < ctx.NumInputs(kX); ++i) {
    if (IsEmptyInput(ctx, i)) continue;
    const Dims d = ctx.InputDims(kX, i);
    const DType t = ctx.InputDType(kX, i);
    if (first < 0) {
      first = i;
      dims = d;
      dtype = t;
      continue;
    }
    if (!DimsMatch(d, dims))
      return ctx.Fail("X[{}] has shape {} but X[{}] has shape {}: sum adds tensors of one shape", i, d.ToString(),
                      first, dims.ToString());
    if (t != dtype)
      return ctx.Fail("X[{}] has dtype {} but X[{}] has dtype {}: sum adds tensors of one dtype", i, DTypeName(t),
                      first, DTypeName(dtype));
    for (int k = 0; k < d.rank(); ++k) dims[k] = DimMerge(dims[k], d[k]);
  }
  if (first < 0) return ctx.Fail("sum has no inputs: every entry of X is @EMPTY@");
  ctx.SetOutput(kOut, dims, dtype);
  return Status::OK();
}

/// Out = X[0] + X[1] + ...; @EMPTY@ entries (nullptr) are skipped. Works through a small stack block
/// so Out may alias any input (the backward pass accumulates in place).
template <class T>
class SumKernel final : public OpKernel {
 public:
  explicit SumKernel(const KernelInit&) {}

  Status Run(KernelContext& ctx) override {
    Tensor& out = ctx.Out(kOut);
    const int64_t n = out.numel();
    inputs_.clear();  // keeps its capacity: no allocation after the first step
    for (int i = 0; i < ctx.NumIn(kX); ++i) {
      const Tensor* t = ctx.InOpt(kX, i);
      if (t == nullptr) continue;
      if (t->numel() != n)
        return MakeError(ErrorCode::kRuntime, "X[{}] has shape {} but Out has shape {}", i, t->dims().ToString(),
                         out.dims().ToString());
      inputs_.push_back(t->data<T>());
    }
    if (inputs_.empty()) return MakeError(ErrorCode::kRuntime, "sum has no inputs: every entry of X is @EMPTY@");
    T* y = out.data<T>();
    ParallelChunks(n, [&](int64_t begin, int64_t len) {
      constexpr int64_t kBlock = 512;
      T acc[kBlock];
      for (int64_t b = begin; b < begin + len; b += kBlock) {
        const int64_t m = std::min(kBlock, begin + len - b);
        const T* first = inputs_[0] + b;
        for (int64_t j = 0; j < m; ++j) acc[j] = first[j];
        for (size_t k = 1; k < inputs_.size(); ++k) {
          const T* p = inputs_[k] + b;
          for (int64_t j = 0; j < m; ++j) acc[j] += p[j];
        }
        std::copy(acc, acc + m, y + b);
      }
    });
    return Status::OK();
  }

 private:
  std::vector<const T*> inputs_;
};

/// Each input's gradient is Out@GRAD itself: one `scale` (scale 1) per input that needs it.
Status SumGradMaker(GradMakerContext& ctx) {
  const std::vector<std::string> xs = ctx.Input("X");
  const std::vector<std::string> dxs = ctx.InputGrad("X");
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] == ir::kEmptyVarName || dxs[i] == ir::kEmptyVarName) continue;
    pb::OpDesc op = ctx.NewOp("scale");
    AddInput(op, "X", ctx.OutputGrad("Out"));
    AddOutput(op, "Out", {dxs[i]});
    ctx.Emit(std::move(op));
  }
  return Status::OK();
}

// ---- square -----------------------------------------------------------------------------------

template <class T>
Status SquareCpu(KernelContext& ctx) {
  const T* x = ctx.In(kX).data<T>();
  T* y = ctx.Out(kOut).data<T>();
  ParallelChunks(ctx.In(kX).numel(), [&](int64_t b, int64_t n) {
    for (int64_t j = b; j < b + n; ++j) y[j] = x[j] * x[j];
  });
  return Status::OK();
}

template <class T>
Status SquareGradCpu(KernelContext& ctx) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const T* x = ctx.In(kGradX).data<T>();
  const T* d = ctx.In(kGradDOut).data<T>();
  T* g = dx->data<T>();
  ParallelChunks(dx->numel(), [&](int64_t b, int64_t n) {
    for (int64_t j = b; j < b + n; ++j) g[j] = T(2) * x[j] * d[j];
  });
  return Status::OK();
}

}  // namespace

void RegisterMathOps(OpRegistry& r) {
  r.Add("scale")
      .Doc("Affine map: Out = scale * X + bias, or scale * (X + bias) when bias_after_scale is false.")
      .Input(kX, "Input tensor of any shape.")
      .Input(kScaleTensor, "A one-element tensor that overrides the `scale` attribute.", kDispensable)
      .Input(kBiasTensor, "PaddlePaddle's bias-tensor slot, which it writes empty; binding a tensor is an error.",
             kDispensable)
      .Output(kOut, "Output tensor, shaped like X.")
      .Attr("scale", 1.0f, "The multiplier (cast to the element type for integer tensors).")
      .Attr("bias", 0.0f, "The offset (cast to the element type for integer tensors).")
      .Attr("bias_after_scale", true, "Add bias after scaling (true) or before (false).")
      .InferShape(InferScale)
      .Grad(ScaleGradMaker)
      .NoGradInput(kScaleTensor)
      .NoGradInput(kBiasTensor)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(ScaleCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(ScaleCpu<double>))
      .Kernel(DeviceType::kCPU, DType::kInt32, MakeKernel(ScaleCpu<int32_t>))
      .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernel(ScaleCpu<int64_t>));

  r.Add("sum")
      .Doc(
          "Element-wise sum of same-shaped tensors (PaddlePaddle's add_n; the backward pass accumulates "
          "gradients with it). @EMPTY@ entries are skipped.")
      .Input(kX, "The tensors to add, all of one shape and dtype.", kDuplicable)
      .Output(kOut, "Their sum, shaped like each input; may be one of the inputs.")
      .InferShape(InferSum)
      .Grad(SumGradMaker)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<SumKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<SumKernel<double>>())
      .Kernel(DeviceType::kCPU, DType::kInt32, MakeKernelClass<SumKernel<int32_t>>())
      .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernelClass<SumKernel<int64_t>>());

  r.Add("square")
      .Doc("Element-wise square: Out = X * X.")
      .Input(kX, "Input tensor of any shape.")
      .Output(kOut, "Output tensor, shaped like X.")
      .InferShape(InferSameAsX)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(SquareCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(SquareCpu<double>))
      .Kernel(DeviceType::kCPU, DType::kInt32, MakeKernel(SquareCpu<int32_t>))
      .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernel(SquareCpu<int64_t>));
  r.Add("square_grad")
      .GradOf("square")
      .Doc("Gradient of square: X@GRAD = 2 * X * Out@GRAD.")
      .Input(kGradX, "The forward input.")
      .Input(kGradDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(SquareGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(SquareGradCpu<double>));

  RegisterElementwiseOps(r);
  RegisterMatmulOps(r);
  RegisterReduceOps(r);
  RegisterCosSimOps(r);
  RegisterExpandOps(r);
  RegisterCumsumOps(r);
  RegisterCompareOps(r);
  RegisterFcOps(r);
  RegisterFusedElementwiseOps(r);
}

}  // namespace paddlec::ops
