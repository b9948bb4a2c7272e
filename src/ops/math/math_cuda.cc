// The math family's CUDA kernels: registration of the whole family, and the small ops scale, sum
// (add_n) and square (math.cc's twins; launchers in math.cu). The larger concepts have their own
// files beside this one: elementwise_cuda.cc, matmul_cuda.cc (with fc), fused_elementwise_cuda.cc,
// reduce_cuda.cc, cos_sim_cuda.cc, expand_cuda.cc, cumsum_cuda.cc, compare_cuda.cc.
// Built into libpaddlec_cuda.so only.
#include <type_traits>
#include <vector>

#include "math/math_cuda_host.h"
#include "math/math_slots.h"

namespace paddlec::ops {
namespace {

using namespace math_ops;  // NOLINT: the family's shared slots and attributes

// ---- scale -------------------------------------------------------------------------------------

StatusOr<cuda::ScalarType> ScalarTypeOf(DType t) {
  switch (t) {
    case DType::kBool:
      return cuda::ScalarType::kBool;
    case DType::kInt8:
      return cuda::ScalarType::kInt8;
    case DType::kUInt8:
      return cuda::ScalarType::kUInt8;
    case DType::kInt16:
      return cuda::ScalarType::kInt16;
    case DType::kInt32:
      return cuda::ScalarType::kInt32;
    case DType::kInt64:
      return cuda::ScalarType::kInt64;
    case DType::kFloat32:
      return cuda::ScalarType::kFloat32;
    case DType::kFloat64:
      return cuda::ScalarType::kFloat64;
    default:
      return MakeError(ErrorCode::kUnimplemented, "data type {} is not supported here", DTypeName(t));
  }
}

/// Out = scale * X + bias, or scale * (X + bias). As on the CPU, integer kernels cast scale and bias
/// to the integer type first. A ScaleTensor on the device is read by the kernel itself (no host
/// round trip); one on the host is read here.
template <class T>
Status ScaleCuda(KernelContext& ctx, const ScaleAttrs& a) {
  const Tensor& x = ctx.In(kX);
  T s = static_cast<T>(a.scale);
  const void* scale_ptr = nullptr;
  cuda::ScalarType scale_type = cuda::ScalarType::kNone;
  if (const Tensor* st = ctx.InOpt(kScaleTensor)) {
    if (st->numel() != 1)
      return MakeError(ErrorCode::kRuntime, "ScaleTensor has shape {} but must hold exactly one element",
                       st->dims().ToString());
    if (st->place().is_cpu()) {
      PC_RETURN_IF_ERROR(VisitDType(st->dtype(), [&]<class S>() { s = static_cast<T>(st->data<S>()[0]); }));
    } else {
      PC_ASSIGN_OR_RETURN(scale_type, ScalarTypeOf(st->dtype()));
      scale_ptr = st->raw_data();
    }
  }
  return cuda::Launched(cuda::Scale<T>(x.data<T>(), ctx.Out(kOut).data<T>(), x.numel(), s, static_cast<T>(a.bias),
                                       a.bias_after_scale, scale_ptr, scale_type, cuda::Stream(ctx)),
                        "scale");
}

// ---- sum (add_n) -------------------------------------------------------------------------------

/// Out = X[0] + X[1] + ... in order; @EMPTY@ entries (nullptr) are skipped; Out may alias any input.
template <class T>
class SumCuda final : public OpKernel {
 public:
  explicit SumCuda(const KernelInit&) {}

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
    T* scratch = nullptr;
    if (static_cast<int>(inputs_.size()) > cuda::kSumMaxInputs) {
      PC_ASSIGN_OR_RETURN(void* p, scratch_.Get(ctx.device().allocator(), static_cast<size_t>(n) * sizeof(T)));
      scratch = static_cast<T*>(p);
    }
    return cuda::Launched(
        cuda::Sum<T>(inputs_.data(), static_cast<int>(inputs_.size()), out.data<T>(), n, scratch, cuda::Stream(ctx)),
        "sum");
  }

 private:
  std::vector<const T*> inputs_;
  DeviceScratch scratch_;  // the running sum between passes (more than kSumMaxInputs inputs)
};

// ---- square ------------------------------------------------------------------------------------

template <class T>
Status SquareCuda(KernelContext& ctx) {
  const Tensor& x = ctx.In(kX);
  return cuda::Launched(cuda::Square<T>(x.data<T>(), ctx.Out(kOut).data<T>(), x.numel(), cuda::Stream(ctx)), "square");
}

template <class T>
Status SquareGradCuda(KernelContext& ctx) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  return cuda::Launched(cuda::SquareGrad<T>(ctx.In(kGradX).data<T>(), ctx.In(kGradDOut).data<T>(), dx->data<T>(),
                                            dx->numel(), cuda::Stream(ctx)),
                        "square gradient");
}

template <class T>
Status RegisterFor(OpRegistry& r, DType t) {
  PC_RETURN_IF_ERROR(r.AddKernel("scale", DeviceType::kCUDA, t, MakeKernel(ScaleCuda<T>)));
  PC_RETURN_IF_ERROR(r.AddKernel("sum", DeviceType::kCUDA, t, MakeKernelClass<SumCuda<T>>()));
  PC_RETURN_IF_ERROR(r.AddKernel("square", DeviceType::kCUDA, t, MakeKernel(SquareCuda<T>)));
  if constexpr (std::is_floating_point_v<T>)
    PC_RETURN_IF_ERROR(r.AddKernel("square_grad", DeviceType::kCUDA, t, MakeKernel(SquareGradCuda<T>)));
  return Status::OK();
}

}  // namespace

Status RegisterMathCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(RegisterFor<float>(r, DType::kFloat32));
  PC_RETURN_IF_ERROR(RegisterFor<double>(r, DType::kFloat64));
  PC_RETURN_IF_ERROR(RegisterFor<int32_t>(r, DType::kInt32));
  PC_RETURN_IF_ERROR(RegisterFor<int64_t>(r, DType::kInt64));
  PC_RETURN_IF_ERROR(RegisterElementwiseCudaKernels(r));
  PC_RETURN_IF_ERROR(RegisterMatmulCudaKernels(r));
  PC_RETURN_IF_ERROR(RegisterFusedElementwiseCudaKernels(r));
  PC_RETURN_IF_ERROR(RegisterReduceCudaKernels(r));
  PC_RETURN_IF_ERROR(RegisterCosSimCudaKernels(r));
  PC_RETURN_IF_ERROR(RegisterExpandCudaKernels(r));
  PC_RETURN_IF_ERROR(RegisterCumsumCudaKernels(r));
  return RegisterCompareCudaKernels(r);
}

}  // namespace paddlec::ops
