// Reductions: mean (of all elements), reduce_sum, reduce_mean and their gradients.
//
// A reduction is a StridedLoop over X whose second operand, the output, is broadcast along the
// reduced axes; ReduceSpans accumulates each innermost run either element-wise (reducing leading
// axes, e.g. the first) or into one value (reducing trailing axes, e.g. the last), in parallel for
// large inputs. Gradients are the reverse: Out@GRAD read in place with stride 0 along the reduced axes.
#include <cmath>
#include <string>
#include <tuple>
#include <type_traits>

#include "math/broadcast.h"
#include "math/reduce_spec.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using namespace reduce;  // NOLINT: the family's shared slots and axis rules

using math::StridedLoop;

/// reduce_sum may sum into int32/int64/float32/float64; reduce_mean only into the float types.
StatusOr<DType> ReduceOutDType(std::string_view op_type, int out_dtype, DType x) {
  if (out_dtype == -1) return x;
  const bool mean = op_type == "reduce_mean";
  auto t = DTypeFromProto(out_dtype);
  const bool is_float = t.ok() && (*t == DType::kFloat32 || *t == DType::kFloat64);
  const bool is_int = t.ok() && (*t == DType::kInt32 || *t == DType::kInt64);
  if (!is_float && !(is_int && !mean))
    return MakeError(ErrorCode::kShape,
                     "out_dtype {} is not supported by {}: use -1 (X's dtype){}, 5 (float32) or 6 (float64)", out_dtype,
                     op_type, mean ? "" : ", 2 (int32), 3 (int64)");
  return *t;
}

Status InferReduce(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(kX);
  const ReduceSpec spec = ReduceSpec::Decode(ctx.attrs());
  PC_ASSIGN_OR_RETURN(uint32_t mask, spec.Mask(x));
  PC_ASSIGN_OR_RETURN(DType dtype, ReduceOutDType(ctx.op_type(), spec.out_dtype, ctx.InputDType(kX)));
  Dims out;
  for (int i = 0; i < x.rank(); ++i) {
    if (!(mask & (uint32_t{1} << i)))
      out.push_back(x[i]);
    else if (spec.keep_dim)
      out.push_back(1);
  }
  ctx.SetOutput(kOut, out, dtype);
  return Status::OK();
}

Status InferMean(InferShapeContext& ctx) {
  ctx.SetOutput(kOut, Dims{}, ctx.InputDType(kX));
  return Status::OK();
}

Status InferDXLikeX(InferShapeContext& ctx) {
  if (ctx.HasOutput(kDX)) ctx.SetOutput(kDX, ctx.InputDims(kGradX), ctx.InputDType(kGradX));
  return Status::OK();
}

// ---- Forward ---------------------------------------------------------------------------------

/// Sums (kMean: averages) X over the reduced axes into Out, whose dtype may differ (out_dtype):
/// elements are converted to Out's type before they are added, as PaddlePaddle casts then reduces.
template <class TIn, bool kMean>
class ReduceKernel final : public OpKernel {
 public:
  explicit ReduceKernel(const KernelInit& init, bool all = false)
      : spec_(all ? ReduceSpec::All() : ReduceSpec::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    Tensor& out = ctx.Out(kOut);
    if (!(x.dims() == x_dims_)) {
      PC_ASSIGN_OR_RETURN(uint32_t mask, spec_.Mask(x.dims()));
      const Dims kept = ReduceSpec::Kept(x.dims(), mask);
      loop_ = math::MakeLoop<2>(x.dims(), {x.dims(), kept});
      count_ = kept.Numel() == 0 ? 0 : x.numel() / kept.Numel();
      x_dims_ = x.dims();
    }
    switch (out.dtype()) {
      case DType::kFloat32:
        return Impl<float>(x, out);
      case DType::kFloat64:
        return Impl<double>(x, out);
      case DType::kInt32:
        return Impl<int32_t>(x, out);
      case DType::kInt64:
        return Impl<int64_t>(x, out);
      default:
        return MakeError(ErrorCode::kUnimplemented, "cannot reduce into dtype {}", DTypeName(out.dtype()));
    }
  }

 private:
  template <class TOut>
  Status Impl(const Tensor& x, Tensor& out) {
    const TIn* xp = x.data<TIn>();
    TOut* op = out.data<TOut>();
    const bool contiguous_out = loop_.inner_stride(1) != 0;
    auto& scratch = std::get<std::vector<TOut>>(scratch_);
    math::ReduceSpans(loop_, 1, op, out.numel(), scratch, [&](const int64_t* off, int64_t len, TOut* base) {
      const TIn* a = xp + off[0];
      TOut* t = base + off[1];
      if (contiguous_out) {  // reducing a leading axis: add the run element-wise
        for (int64_t j = 0; j < len; ++j) t[j] += static_cast<TOut>(a[j]);
      } else {  // reducing a trailing axis: the run collapses to one value
        t[0] += math::SumRun<TOut>(len, [&](int64_t j) { return static_cast<TOut>(a[j]); });
      }
    });
    if constexpr (kMean && std::is_floating_point_v<TOut>) {
      // An empty reduction averages to NaN (0 / 0), as in NumPy and PaddlePaddle.
      const TOut inv = count_ == 0 ? TOut(NAN) : TOut(1) / static_cast<TOut>(count_);
      const bool empty = count_ == 0;
      ParallelChunks(out.numel(), [&](int64_t b, int64_t n) {
        for (int64_t i = b; i < b + n; ++i) op[i] = empty ? inv : op[i] * inv;
      });
    }
    return Status::OK();
  }

  ReduceSpec spec_;
  Dims x_dims_{-2};
  StridedLoop<2> loop_;
  int64_t count_ = 0;  // elements reduced into each output element
  std::tuple<std::vector<float>, std::vector<double>, std::vector<int32_t>, std::vector<int64_t>> scratch_;
};

/// `mean`: the ReduceKernel over every axis.
template <class T>
class MeanKernel final : public OpKernel {
 public:
  explicit MeanKernel(const KernelInit& init) : impl_(init, /*all=*/true) {}
  Status Run(KernelContext& ctx) override { return impl_.Run(ctx); }

 private:
  ReduceKernel<T, true> impl_;
};

// ---- Backward --------------------------------------------------------------------------------

/// X@GRAD = Out@GRAD broadcast back over the reduced axes (times 1/count for the means).
template <class TX, bool kMean>
class ReduceGradKernel final : public OpKernel {
 public:
  explicit ReduceGradKernel(const KernelInit& init, bool all = false)
      : spec_(all ? ReduceSpec::All() : ReduceSpec::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    const Tensor& x = ctx.In(kGradX);
    const Tensor& dout = ctx.In(kGradDOut);
    if (!(x.dims() == x_dims_)) {
      PC_ASSIGN_OR_RETURN(uint32_t mask, spec_.Mask(x.dims()));
      const Dims kept = ReduceSpec::Kept(x.dims(), mask);
      if (kept.Numel() != dout.numel())
        return MakeError(ErrorCode::kShape, "Out@GRAD has shape {} but reducing X of shape {} gives {} elements",
                         dout.dims().ToString(), x.dims().ToString(), kept.Numel());
      loop_ = math::MakeLoop<2>(x.dims(), {x.dims(), kept});
      count_ = kept.Numel() == 0 ? 0 : x.numel() / kept.Numel();
      x_dims_ = x.dims();
    }
    switch (dout.dtype()) {
      case DType::kFloat32:
        return Impl<float>(dout, *dx);
      case DType::kFloat64:
        return Impl<double>(dout, *dx);
      default:
        return MakeError(ErrorCode::kUnimplemented, "Out@GRAD of dtype {} is not supported", DTypeName(dout.dtype()));
    }
  }

 private:
  template <class TG>
  Status Impl(const Tensor& dout, Tensor& dx) {
    const TG* d = dout.data<TG>();
    TX* g = dx.data<TX>();
    const TX s = kMean ? TX(1) / static_cast<TX>(std::max<int64_t>(count_, 1)) : TX(1);
    const bool contiguous = loop_.inner_stride(1) != 0;
    math::ParallelSpans(loop_, [&](const int64_t* off, int64_t len) {
      TX* t = g + off[0];
      const TG* src = d + off[1];
      if (contiguous) {
        for (int64_t j = 0; j < len; ++j) t[j] = s * static_cast<TX>(src[j]);
      } else {
        std::fill(t, t + len, s * static_cast<TX>(src[0]));
      }
    });
    return Status::OK();
  }

  ReduceSpec spec_;
  Dims x_dims_{-2};
  StridedLoop<2> loop_;
  int64_t count_ = 0;
};

template <class T>
class MeanGradKernel final : public OpKernel {
 public:
  explicit MeanGradKernel(const KernelInit& init) : impl_(init, /*all=*/true) {}
  Status Run(KernelContext& ctx) override { return impl_.Run(ctx); }

 private:
  ReduceGradKernel<T, true> impl_;
};

// ---- Registration ---------------------------------------------------------------------------

template <bool kMean>
void RegisterReduce(OpRegistry& r, const std::string& type, const std::string& what) {
  OpBuilder b = r.Add(type);
  b.Doc(fmt::format("The {} of X over the axes in `dim` (every axis with reduce_all); reduced axes are removed "
                    "unless keep_dim, so reducing everything gives a 0-D tensor.",
                    what))
      .Input(kX, "Input tensor of any shape.")
      .Output(kOut, "The reduced tensor.")
      .Attr("dim", std::vector<int>{0}, "Axes to reduce; negative values count from the end.")
      .Attr("keep_dim", false, "Keep reduced axes as size-1 dims.")
      .Attr("reduce_all", false, "Reduce over every axis, ignoring `dim`.")
      .Attr("in_dtype", -1, "Set only by PaddlePaddle internally; ignored.")
      .ExtraAttr()
      .Attr("out_dtype", -1,
            kMean ? "Output dtype as a VarType.Type (5 float32, 6 float64); -1: X's dtype."
                  : "Output dtype as a VarType.Type (2 int32, 3 int64, 5 float32, 6 float64); -1: X's dtype.")
      .InferShape(InferReduce)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<ReduceKernel<float, kMean>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<ReduceKernel<double, kMean>>());
  if constexpr (!kMean) {  // integer sums (ids, counts); averages stay floating point
    b.Kernel(DeviceType::kCPU, DType::kInt32, MakeKernelClass<ReduceKernel<int32_t, false>>())
        .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernelClass<ReduceKernel<int64_t, false>>());
  }
  r.Add(type + "_grad")
      .GradOf(type)
      .Doc(fmt::format("Gradient of {}: Out@GRAD broadcast back to X's shape{}.", type,
                       kMean ? ", divided by the number of elements averaged" : ""))
      .Input(kGradX, "The forward input (its shape).")
      .Input(kGradDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferDXLikeX)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<ReduceGradKernel<float, kMean>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<ReduceGradKernel<double, kMean>>());
}

}  // namespace

void RegisterReduceOps(OpRegistry& r) {
  RegisterReduce<false>(r, "reduce_sum", "sum");
  RegisterReduce<true>(r, "reduce_mean", "mean");

  r.Add("mean")
      .Doc("Mean of all elements of X (PaddlePaddle's mean_all); Out is 0-D.")
      .Input(kX, "Input tensor of any shape.")
      .Output(kOut, "The mean, a 0-D tensor.")
      .InferShape(InferMean)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<MeanKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<MeanKernel<double>>());
  r.Add("mean_grad")
      .GradOf("mean")
      .Doc("Gradient of mean: X@GRAD = Out@GRAD / numel(X) everywhere.")
      .Input(kGradX, "The forward input (its shape).")
      .Input(kGradDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferDXLikeX)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<MeanGradKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<MeanGradKernel<double>>());
}

}  // namespace paddlec::ops
