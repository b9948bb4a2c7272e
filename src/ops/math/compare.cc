// The comparison ops (equal, not_equal, less_than, less_equal, greater_than, greater_equal: bool
// outputs, PaddlePaddle's broadcasting, no gradient) and where (Out = Condition ? X : Y, NumPy
// broadcasting) with its gradient.
//
// Like the arithmetic elementwise ops they walk Out once with a coalesced StridedLoop
// (math/broadcast.h), reading broadcast operands in place; equal shapes take a flat path. where's
// gradients sum onto broadcast operands with ReduceSpans (parallel, deterministic).
#include "math/broadcast.h"
#include "math/compare_slots.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using namespace compare;  // NOLINT: the concept's shared slots and shape rules

// ---- Comparisons ------------------------------------------------------------------------------

Status InferCompare(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(kX), y = ctx.InputDims(kY);
  const DType xt = ctx.InputDType(kX), yt = ctx.InputDType(kY);
  if (xt != yt)
    return ctx.Fail("X has dtype {} but Y has dtype {}: comparisons need operands of one dtype", DTypeName(xt),
                    DTypeName(yt));
  PC_ASSIGN_OR_RETURN(math::ElementwiseShapes s, math::BroadcastElementwise(x, y, ctx.Attr<int>("axis")));
  ctx.SetOutput(kOut, s.out, DType::kBool);
  return Status::OK();
}

template <Compare K, class T>
class CompareKernel final : public OpKernel {
 public:
  explicit CompareKernel(const KernelInit& init) : attrs_(CompareAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    bool* op = ctx.Out(kOut).data<bool>();
    if (x.dims() == y.dims()) {
      ParallelChunks(x.numel(), [&](int64_t b, int64_t n) {
        for (int64_t j = b; j < b + n; ++j) op[j] = Relate<K>(xp[j], yp[j]);
      });
      return Status::OK();
    }
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(math::ElementwiseShapes s, math::BroadcastElementwise(x.dims(), y.dims(), attrs_.axis));
      loop_ = math::MakeLoop<3>(s.out, {s.out, s.x, s.y});
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    const bool xc = loop_.inner_stride(1) != 0, yc = loop_.inner_stride(2) != 0;
    math::ParallelSpans(loop_, [&](const int64_t* off, int64_t len) {
      const T* a = xp + off[1];
      const T* b = yp + off[2];
      bool* o = op + off[0];
      if (xc && yc) {
        for (int64_t j = 0; j < len; ++j) o[j] = Relate<K>(a[j], b[j]);
      } else if (xc) {
        for (int64_t j = 0; j < len; ++j) o[j] = Relate<K>(a[j], b[0]);
      } else if (yc) {
        for (int64_t j = 0; j < len; ++j) o[j] = Relate<K>(a[0], b[j]);
      } else {
        std::fill(o, o + len, Relate<K>(a[0], b[0]));
      }
    });
    return Status::OK();
  }

 private:
  CompareAttrs attrs_;
  Dims x_dims_{-2}, y_dims_{-2};  // shapes loop_ was built for (-2: none yet)
  math::StridedLoop<3> loop_;
};

template <Compare K>
void RegisterCompare(OpRegistry& r, const CompareOp& c) {
  OpBuilder op = r.Add(c.type);
  op.Doc(fmt::format("Element-wise comparison Out = {} (bool), with PaddlePaddle broadcasting as in the "
                     "elementwise ops; NaN compares unequal to everything.",
                     c.formula))
      .Input(kX, "The left operand.")
      .Input(kY, "The right operand, broadcast onto X (or X onto it when its rank is higher).")
      .Output(kOut, "The bool result, shaped as X and Y broadcast together.")
      .Attr("axis", -1, "First dim of the higher-rank operand that the other aligns with; -1 aligns trailing dims.")
      .Min(-1)
      .Attr("force_cpu", false, "PaddlePaddle placement hint (compute on the CPU); ignored.")
      .ExtraAttr()
      .InferShape(InferCompare)
      .NoGradient()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<CompareKernel<K, float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<CompareKernel<K, double>>())
      .Kernel(DeviceType::kCPU, DType::kInt32, MakeKernelClass<CompareKernel<K, int32_t>>())
      .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernelClass<CompareKernel<K, int64_t>>())
      .Kernel(DeviceType::kCPU, DType::kBool, MakeKernelClass<CompareKernel<K, bool>>());
}

// ---- where ----------------------------------------------------------------------------------------

Status InferWhere(InferShapeContext& ctx) {
  if (ctx.InputDType(kCondition) != DType::kBool)
    return ctx.Fail("Condition has dtype {}: where needs a bool condition", DTypeName(ctx.InputDType(kCondition)));
  const DType xt = ctx.InputDType(kWhereX), yt = ctx.InputDType(kWhereY);
  if (xt != yt)
    return ctx.Fail("X has dtype {} but Y has dtype {}: where needs one dtype", DTypeName(xt), DTypeName(yt));
  auto s = BroadcastWhere(ctx.InputDims(kCondition), ctx.InputDims(kWhereX), ctx.InputDims(kWhereY));
  if (!s.ok()) return ctx.Fail("{}", s.error().message());
  ctx.SetOutput(kOut, s->out, xt);
  return Status::OK();
}

Status InferWhereGrad(InferShapeContext& ctx) {
  auto s = BroadcastWhere(ctx.InputDims(kCondition), ctx.InputDims(kWhereX), ctx.InputDims(kWhereY));
  if (!s.ok()) return ctx.Fail("{}", s.error().message());
  const Dims dout = ctx.InputDims(kWhereDOut);
  if (!DimsMatch(dout, s->out))  // the kernels walk Out@GRAD as Out
    return ctx.Fail("Out@GRAD has shape {} but Out has shape {}: they must match", dout.ToString(), s->out.ToString());
  if (ctx.HasOutput(kDX)) ctx.SetOutput(kDX, ctx.InputDims(kWhereX), ctx.InputDType(kWhereDOut));
  if (ctx.HasOutput(kDY)) ctx.SetOutput(kDY, ctx.InputDims(kWhereY), ctx.InputDType(kWhereDOut));
  return Status::OK();
}

template <class T>
class WhereKernel final : public OpKernel {
 public:
  explicit WhereKernel(const KernelInit&) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& c = ctx.In(kCondition);
    const Tensor& x = ctx.In(kWhereX);
    const Tensor& y = ctx.In(kWhereY);
    const bool* cp = c.data<bool>();
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = ctx.Out(kOut).data<T>();
    if (c.dims() == x.dims() && x.dims() == y.dims()) {
      ParallelChunks(x.numel(), [&](int64_t b, int64_t n) {
        for (int64_t j = b; j < b + n; ++j) op[j] = cp[j] ? xp[j] : yp[j];
      });
      return Status::OK();
    }
    if (!(c.dims() == dims_[0] && x.dims() == dims_[1] && y.dims() == dims_[2])) {
      PC_ASSIGN_OR_RETURN(WhereShapes s, BroadcastWhere(c.dims(), x.dims(), y.dims()));
      loop_ = math::MakeLoop<4>(s.out, {s.out, s.aligned[0], s.aligned[1], s.aligned[2]});
      dims_ = {c.dims(), x.dims(), y.dims()};
    }
    // Strides along the innermost run: 1, or 0 for an operand broadcast there.
    const int64_t sc = loop_.inner_stride(1), sx = loop_.inner_stride(2), sy = loop_.inner_stride(3);
    math::ParallelSpans(loop_, [&](const int64_t* off, int64_t len) {
      const bool* cc = cp + off[1];
      const T* a = xp + off[2];
      const T* b = yp + off[3];
      T* o = op + off[0];
      for (int64_t j = 0; j < len; ++j) o[j] = cc[j * sc] ? a[j * sx] : b[j * sy];
    });
    return Status::OK();
  }

 private:
  std::array<Dims, 3> dims_{Dims{-2}, Dims{-2}, Dims{-2}};
  math::StridedLoop<4> loop_;
};

/// X@GRAD = Condition ? Out@GRAD : 0 and Y@GRAD = Condition ? 0 : Out@GRAD, each summed onto its
/// operand's shape when it was broadcast.
template <class T>
class WhereGradKernel final : public OpKernel {
 public:
  explicit WhereGradKernel(const KernelInit&) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& c = ctx.In(kCondition);
    const Tensor& x = ctx.In(kWhereX);
    const Tensor& y = ctx.In(kWhereY);
    if (!(c.dims() == dims_[0] && x.dims() == dims_[1] && y.dims() == dims_[2])) {
      PC_ASSIGN_OR_RETURN(WhereShapes s, BroadcastWhere(c.dims(), x.dims(), y.dims()));
      // Operands: Out@GRAD (Out's shape), Condition, the gradient's target.
      loop_dx_ = math::MakeLoop<3>(s.out, {s.out, s.aligned[0], s.aligned[1]});
      loop_dy_ = math::MakeLoop<3>(s.out, {s.out, s.aligned[0], s.aligned[2]});
      dims_ = {c.dims(), x.dims(), y.dims()};
    }
    const T* d = ctx.In(kWhereDOut).data<T>();
    const bool* cp = c.data<bool>();
    if (Tensor* dx = ctx.OutOpt(kDX)) Reduce<true>(loop_dx_, d, cp, dx->data<T>(), dx->numel());
    if (Tensor* dy = ctx.OutOpt(kDY)) Reduce<false>(loop_dy_, d, cp, dy->data<T>(), dy->numel());
    return Status::OK();
  }

 private:
  template <bool kWhenTrue>
  void Reduce(const math::StridedLoop<3>& loop, const T* d, const bool* cp, T* target, int64_t numel) {
    const int64_t sc = loop.inner_stride(1);
    const bool contiguous = loop.inner_stride(2) != 0;
    math::ReduceSpans(loop, 2, target, numel, scratch_, [&](const int64_t* off, int64_t len, T* base) {
      const T* dd = d + off[0];
      const bool* cc = cp + off[1];
      T* t = base + off[2];
      auto g = [&](int64_t j) { return cc[j * sc] == kWhenTrue ? dd[j] : T(0); };
      if (contiguous) {
        for (int64_t j = 0; j < len; ++j) t[j] += g(j);
      } else {
        t[0] += math::SumRun<T>(len, g);
      }
    });
  }

  std::array<Dims, 3> dims_{Dims{-2}, Dims{-2}, Dims{-2}};
  math::StridedLoop<3> loop_dx_, loop_dy_;
  std::vector<T> scratch_;
};

void RegisterWhere(OpRegistry& r) {
  OpBuilder where = r.Add("where");
  where.Doc("Out = Condition ? X : Y element-wise; the three broadcast together (NumPy's rule).")
      .Input(kCondition, "The bool condition.")
      .Input(kWhereX, "Values where Condition is true.")
      .Input(kWhereY, "Values where Condition is false.")
      .Output(kOut, "The selected values, shaped as the three operands broadcast together.")
      .InferShape(InferWhere)
      .KernelDTypeFromInput(kWhereX)
      .NoGradInput(kCondition)
      .Grad();
  OpBuilder grad = r.Add("where_grad");
  grad.GradOf("where")
      .Doc("Gradient of where: Out@GRAD goes to X where Condition holds and to Y elsewhere.")
      .Input(kCondition, "The forward condition.")
      .Input(kWhereX, "The forward X (its shape only).")
      .Input(kWhereY, "The forward Y (its shape only).")
      .Input(kWhereDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .Output(kDY, "Gradient of the loss with respect to Y.")
      .InferShape(InferWhereGrad)
      .KernelDTypeFromInput(kWhereDOut)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<WhereGradKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<WhereGradKernel<double>>());
  where.Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<WhereKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<WhereKernel<double>>())
      .Kernel(DeviceType::kCPU, DType::kInt32, MakeKernelClass<WhereKernel<int32_t>>())
      .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernelClass<WhereKernel<int64_t>>())
      .Kernel(DeviceType::kCPU, DType::kBool, MakeKernelClass<WhereKernel<bool>>());
}

}  // namespace

void RegisterCompareOps(OpRegistry& r) {
  static_assert(kCompareOps[0].kind == Compare::kEq && kCompareOps[1].kind == Compare::kNe &&
                kCompareOps[2].kind == Compare::kLt && kCompareOps[3].kind == Compare::kLe &&
                kCompareOps[4].kind == Compare::kGt && kCompareOps[5].kind == Compare::kGe);
  RegisterCompare<Compare::kEq>(r, kCompareOps[0]);
  RegisterCompare<Compare::kNe>(r, kCompareOps[1]);
  RegisterCompare<Compare::kLt>(r, kCompareOps[2]);
  RegisterCompare<Compare::kLe>(r, kCompareOps[3]);
  RegisterCompare<Compare::kGt>(r, kCompareOps[4]);
  RegisterCompare<Compare::kGe>(r, kCompareOps[5]);
  RegisterWhere(r);
}

}  // namespace paddlec::ops
