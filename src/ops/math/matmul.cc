// Matrix products: mul (2-D after flattening) and matmul_v2 (NumPy matmul with transposes), and
// their gradients, all on math::Gemm (oneDNN for float32, Eigen for float64).
//
// Gradients are products with transposed operands expressed as strides (no explicit transposes).
// When matmul_v2 broadcasts an operand over batch dims, its gradient is computed per batch into
// kernel-owned scratch and summed over the broadcast dims; the common case of a weight without
// batch dims (Y [K, N] against X [B..., M, K]) instead folds the batch into M, so the forward and
// both gradients are single GEMMs and the batch sum happens inside the contraction.
#include "common/cpu_kernels.h"
#include "math/broadcast.h"
#include "math/gemm.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using math::Gemm;
using math::GemmShape;

constexpr InSlot kX{0, "X"};
constexpr InSlot kY{1, "Y"};
constexpr OutSlot kOut{0, "Out"};
// Gradient ops: (X, Y, Out@GRAD) -> (X@GRAD, Y@GRAD).
constexpr InSlot kGradX{0, "X"};
constexpr InSlot kGradY{1, "Y"};
constexpr InSlot kGradDOut{2, "Out@GRAD"};
constexpr OutSlot kDX{0, "X@GRAD"};
constexpr OutSlot kDY{1, "Y@GRAD"};

std::string_view BoolName(bool b) { return b ? "true" : "false"; }

runtime::CpuContext& Cpu(KernelContext& ctx) { return ctx.device_as<runtime::CpuContext>(); }

// ---- mul --------------------------------------------------------------------------------------

/// mul's 2-D view: X flattened to [M, K] at x_num_col_dims, Y to [K, N] at y_num_col_dims.
struct MulDims {
  int64_t m, k, n;
  Dims out;
};

StatusOr<MulDims> AnalyzeMul(const Dims& x, const Dims& y, int xn, int yn) {
  if (xn >= x.rank())
    return MakeError(ErrorCode::kShape,
                     "X has shape {} (rank {}) but x_num_col_dims is {}: it must be less than X's rank", x.ToString(),
                     x.rank(), xn);
  if (yn >= y.rank())
    return MakeError(ErrorCode::kShape,
                     "Y has shape {} (rank {}) but y_num_col_dims is {}: it must be less than Y's rank", y.ToString(),
                     y.rank(), yn);
  MulDims d{x.Product(0, xn), x.Product(xn, x.rank()), y.Product(yn, y.rank()), {}};
  const int64_t ky = y.Product(0, yn);
  if (!DimMatch(d.k, ky))
    return MakeError(ErrorCode::kShape,
                     "X has shape {} and Y has shape {}: flattened at x_num_col_dims {} and y_num_col_dims {} they are "
                     "[{}, {}] and [{}, {}], so X's width {} must equal Y's height {}",
                     x.ToString(), y.ToString(), xn, yn, d.m, d.k, ky, d.n, d.k, ky);
  if (xn + y.rank() - yn > kMaxRank)
    return MakeError(ErrorCode::kShape, "X of shape {} and Y of shape {} would give an output of rank {} (at most {})",
                     x.ToString(), y.ToString(), xn + y.rank() - yn, kMaxRank);
  for (int i = 0; i < xn; ++i) d.out.push_back(x[i]);
  for (int i = yn; i < y.rank(); ++i) d.out.push_back(y[i]);
  return d;
}

Status CheckSameDType(InferShapeContext& ctx) {
  if (ctx.InputDType(kX) != ctx.InputDType(kY))
    return ctx.Fail("X has dtype {} but Y has dtype {}: the product needs operands of one dtype",
                    DTypeName(ctx.InputDType(kX)), DTypeName(ctx.InputDType(kY)));
  return Status::OK();
}

Status InferMul(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(CheckSameDType(ctx));
  PC_ASSIGN_OR_RETURN(MulDims d, AnalyzeMul(ctx.InputDims(kX), ctx.InputDims(kY), ctx.Attr<int>("x_num_col_dims"),
                                            ctx.Attr<int>("y_num_col_dims")));
  ctx.SetOutput(kOut, d.out, ctx.InputDType(kX));
  return Status::OK();
}

struct MulAttrs {
  int xn, yn;
  explicit MulAttrs(const AttrReader& a) : xn(a.Get<int>("x_num_col_dims")), yn(a.Get<int>("y_num_col_dims")) {}
};

template <class T>
class MulKernel final : public OpKernel {
 public:
  explicit MulKernel(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(MulDims d, AnalyzeMul(x.dims(), y.dims(), attrs_.xn, attrs_.yn));
      shape_ = GemmShape{{}, {}, {}, d.m, d.k, d.n, false, false};
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    return gemm_.Run(Cpu(ctx), shape_, x.data<T>(), y.data<T>(), ctx.Out(kOut).data<T>());
  }

 private:
  MulAttrs attrs_;
  Dims x_dims_{-2}, y_dims_{-2};
  GemmShape shape_;
  Gemm<T> gemm_;
};

/// dX [M, K] = dOut [M, N] * Y^T;  dY [K, N] = X^T * dOut.
template <class T>
class MulGradKernel final : public OpKernel {
 public:
  explicit MulGradKernel(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kGradX);
    const Tensor& y = ctx.In(kGradY);
    const T* dout = ctx.In(kGradDOut).data<T>();
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(MulDims d, AnalyzeMul(x.dims(), y.dims(), attrs_.xn, attrs_.yn));
      dx_shape_ = GemmShape{{}, {}, {}, d.m, d.n, d.k, false, true};
      dy_shape_ = GemmShape{{}, {}, {}, d.k, d.m, d.n, true, false};
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    if (Tensor* dx = ctx.OutOpt(kDX))
      PC_RETURN_IF_ERROR(gemm_dx_.Run(Cpu(ctx), dx_shape_, dout, y.data<T>(), dx->data<T>()));
    if (Tensor* dy = ctx.OutOpt(kDY))
      PC_RETURN_IF_ERROR(gemm_dy_.Run(Cpu(ctx), dy_shape_, x.data<T>(), dout, dy->data<T>()));
    return Status::OK();
  }

 private:
  MulAttrs attrs_;
  Dims x_dims_{-2}, y_dims_{-2};
  GemmShape dx_shape_, dy_shape_;
  Gemm<T> gemm_dx_, gemm_dy_;
};

// ---- matmul_v2 ----------------------------------------------------------------------------------

/// matmul_v2's problem in NumPy terms. A 1-D X is a row [1, K] and a 1-D Y a column [K, 1] (their
/// transposes ignored, the extra dim dropped from Out); batch dims broadcast.
struct MatmulDims {
  Dims x_batch, y_batch, out_batch;  // aligned to one rank (left-padded with 1s)
  int64_t m = 0, k = 0, n = 0;
  bool trans_x = false, trans_y = false;  // effective: false for 1-D operands
  Dims out;
  /// Y has no batch to broadcast and X is not transposed: X's batch folds into M.
  bool FoldsBatch() const {
    return !trans_x && std::all_of(y_batch.begin(), y_batch.end(), [](int64_t d) { return d == 1; });
  }
};

StatusOr<MatmulDims> AnalyzeMatmul(const Dims& x, const Dims& y, bool trans_x, bool trans_y) {
  auto context = [&] {
    return fmt::format("X has shape {} and Y has shape {} (trans_x {}, trans_y {})", x.ToString(), y.ToString(),
                       BoolName(trans_x), BoolName(trans_y));
  };
  if (x.rank() == 0 || y.rank() == 0)
    return MakeError(ErrorCode::kShape, "{}: matmul_v2 needs operands of rank >= 1", context());
  MatmulDims d;
  const bool x_vec = x.rank() == 1, y_vec = y.rank() == 1;
  d.trans_x = trans_x && !x_vec;
  d.trans_y = trans_y && !y_vec;
  const int64_t xr = x_vec ? 1 : x[x.rank() - 2], xc = x.back();
  const int64_t yr = y_vec ? y[0] : y[y.rank() - 2], yc = y_vec ? 1 : y.back();
  d.m = d.trans_x ? xc : xr;
  d.k = d.trans_x ? xr : xc;
  const int64_t ky = d.trans_y ? yc : yr;
  d.n = d.trans_y ? yr : yc;
  if (!DimMatch(d.k, ky))
    return MakeError(ErrorCode::kShape, "{}: the contracted dims differ (X gives {}, Y gives {})", context(), d.k, ky);
  d.k = DimMerge(d.k, ky);
  const int xb = std::max(0, x.rank() - 2), yb = std::max(0, y.rank() - 2), rb = std::max(xb, yb);
  for (int i = 0; i < rb; ++i) {
    const int64_t a = i < rb - xb ? 1 : x[i - (rb - xb)];
    const int64_t b = i < rb - yb ? 1 : y[i - (rb - yb)];
    int64_t o;
    if (a == b || b == 1)
      o = a;
    else if (a == 1)
      o = b;
    else if (a < 0 || b < 0)
      o = std::max(a, b);
    else
      return MakeError(ErrorCode::kShape, "{}: batch dim {} differs ({} vs {}) and neither is 1", context(), i, a, b);
    d.x_batch.push_back(a);
    d.y_batch.push_back(b);
    d.out_batch.push_back(o);
  }
  d.out = d.out_batch;
  if (!x_vec) d.out.push_back(d.m);
  if (!y_vec) d.out.push_back(d.n);
  return d;
}

Status InferMatmulV2(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(CheckSameDType(ctx));
  PC_ASSIGN_OR_RETURN(MatmulDims d, AnalyzeMatmul(ctx.InputDims(kX), ctx.InputDims(kY), ctx.Attr<bool>("trans_x"),
                                                  ctx.Attr<bool>("trans_y")));
  ctx.SetOutput(kOut, d.out, ctx.InputDType(kX));
  return Status::OK();
}

struct MatmulAttrs {
  bool trans_x, trans_y;
  explicit MatmulAttrs(const AttrReader& a) : trans_x(a.Get<bool>("trans_x")), trans_y(a.Get<bool>("trans_y")) {}
};

template <class T>
class MatmulV2Kernel final : public OpKernel {
 public:
  explicit MatmulV2Kernel(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(MatmulDims d, AnalyzeMatmul(x.dims(), y.dims(), attrs_.trans_x, attrs_.trans_y));
      if (d.FoldsBatch())
        shape_ = GemmShape{{}, {}, {}, d.out_batch.Numel() * d.m, d.k, d.n, false, d.trans_y};
      else
        shape_ = GemmShape{d.x_batch, d.y_batch, d.out_batch, d.m, d.k, d.n, d.trans_x, d.trans_y};
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    return gemm_.Run(Cpu(ctx), shape_, x.data<T>(), y.data<T>(), ctx.Out(kOut).data<T>());
  }

 private:
  MatmulAttrs attrs_;
  Dims x_dims_{-2}, y_dims_{-2};
  GemmShape shape_;
  Gemm<T> gemm_;
};

/// One operand's gradient: a GEMM per output batch, written straight into the gradient or, when
/// the operand was broadcast over batch dims, into scratch and then summed over those dims.
template <class T>
struct GradProduct {
  GemmShape shape;
  bool a_is_dout = false;  // which GEMM operand is Out@GRAD (the other is X or Y)
  bool reduce = false;
  math::StridedLoop<2> reduce_loop;  // over [out_batch..., rows, cols] into [operand_batch..., rows, cols]
  Gemm<T> gemm;
  std::vector<T> product, partials;

  void Plan(const GemmShape& s, bool dout_first, const Dims& operand_batch) {
    shape = s;
    a_is_dout = dout_first;
    reduce = !(operand_batch == s.c_batch);
    if (!reduce) return;
    Dims full = s.c_batch, target = operand_batch;
    full.push_back(s.m);
    full.push_back(s.n);
    target.push_back(s.m);
    target.push_back(s.n);
    reduce_loop = math::MakeLoop<2>(full, {full, target});
  }

  Status Run(runtime::CpuContext& cpu, const T* dout, const T* other, Tensor& grad) {
    const T* a = a_is_dout ? dout : other;
    const T* b = a_is_dout ? other : dout;
    if (!reduce) return gemm.Run(cpu, shape, a, b, grad.data<T>());
    product.resize(reduce_loop.numel);  // grows once
    PC_RETURN_IF_ERROR(gemm.Run(cpu, shape, a, b, product.data()));
    const T* src = product.data();
    const bool tc = reduce_loop.inner_stride(1) != 0;
    math::ReduceSpans(reduce_loop, 1, grad.data<T>(), grad.numel(), partials,
                      [&](const int64_t* off, int64_t len, T* base) {
                        const T* s = src + off[0];
                        T* t = base + off[1];
                        if (tc) {
                          for (int64_t j = 0; j < len; ++j) t[j] += s[j];
                        } else {
                          t[0] += math::SumRun<T>(len, [&](int64_t j) { return s[j]; });
                        }
                      });
    return Status::OK();
  }
};

/// With op(.) the effective transposes and Out = op(X) op(Y):
///   dX = dOut op(Y)^T (stored transposed when trans_x: op(Y) dOut^T),
///   dY = op(X)^T dOut (stored transposed when trans_y: dOut^T op(X)).
template <class T>
class MatmulV2GradKernel final : public OpKernel {
 public:
  explicit MatmulV2GradKernel(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kGradX);
    const Tensor& y = ctx.In(kGradY);
    const Tensor& dout = ctx.In(kGradDOut);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) PC_RETURN_IF_ERROR(Plan(x.dims(), y.dims()));
    if (dout.numel() != out_numel_)
      return MakeError(ErrorCode::kShape, "Out@GRAD has shape {} but X {} times Y {} gives {} elements",
                       dout.dims().ToString(), x.dims().ToString(), y.dims().ToString(), out_numel_);
    if (Tensor* dx = ctx.OutOpt(kDX)) PC_RETURN_IF_ERROR(dx_.Run(Cpu(ctx), dout.data<T>(), y.data<T>(), *dx));
    if (Tensor* dy = ctx.OutOpt(kDY)) PC_RETURN_IF_ERROR(dy_.Run(Cpu(ctx), dout.data<T>(), x.data<T>(), *dy));
    return Status::OK();
  }

 private:
  Status Plan(const Dims& xd, const Dims& yd) {
    PC_ASSIGN_OR_RETURN(MatmulDims d, AnalyzeMatmul(xd, yd, attrs_.trans_x, attrs_.trans_y));
    out_numel_ = d.out.Numel();
    const bool tx = d.trans_x, ty = d.trans_y;
    if (d.FoldsBatch()) {
      const int64_t m = d.out_batch.Numel() * d.m;
      dx_.Plan(GemmShape{{}, {}, {}, m, d.n, d.k, false, !ty}, true, {});
      dy_.Plan(ty ? GemmShape{{}, {}, {}, d.n, m, d.k, true, false} : GemmShape{{}, {}, {}, d.k, m, d.n, true, false},
               ty, {});
    } else {
      const Dims& cb = d.out_batch;
      if (!tx)
        dx_.Plan(GemmShape{cb, d.y_batch, cb, d.m, d.n, d.k, false, !ty}, true, d.x_batch);
      else
        dx_.Plan(GemmShape{d.y_batch, cb, cb, d.k, d.n, d.m, ty, true}, false, d.x_batch);
      if (!ty)
        dy_.Plan(GemmShape{d.x_batch, cb, cb, d.k, d.m, d.n, !tx, false}, false, d.y_batch);
      else
        dy_.Plan(GemmShape{cb, d.x_batch, cb, d.n, d.m, d.k, true, tx}, true, d.y_batch);
    }
    x_dims_ = xd;
    y_dims_ = yd;
    return Status::OK();
  }

  MatmulAttrs attrs_;
  Dims x_dims_{-2}, y_dims_{-2};
  int64_t out_numel_ = 0;
  GradProduct<T> dx_, dy_;
};

}  // namespace

void RegisterMatmulOps(OpRegistry& r) {
  r.Add("mul")
      .Doc(
          "Matrix product of X flattened to 2-D at x_num_col_dims and Y flattened at y_num_col_dims: "
          "Out has dims X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:].")
      .Input(kX, "The left operand, flattened to [prod(dims[:x_num_col_dims]), prod(dims[x_num_col_dims:])].")
      .Input(kY, "The right operand, flattened to [prod(dims[:y_num_col_dims]), prod(dims[y_num_col_dims:])].")
      .Output(kOut, "The product, shaped X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:].")
      .Attr("x_num_col_dims", 1, "Leading dims of X that form the rows of its 2-D view.")
      .Min(1)
      .Attr("y_num_col_dims", 1, "Leading dims of Y that form the rows of its 2-D view.")
      .Min(1)
      .InferShape(InferMul)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<MulKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<MulKernel<double>>());
  r.Add("mul_grad")
      .GradOf("mul")
      .Doc("Gradient of mul: X@GRAD = Out@GRAD * Y^T and Y@GRAD = X^T * Out@GRAD on the 2-D views.")
      .Input(kGradX, "The forward X.")
      .Input(kGradY, "The forward Y.")
      .Input(kGradDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .Output(kDY, "Gradient of the loss with respect to Y.")
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<MulGradKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<MulGradKernel<double>>());

  r.Add("matmul_v2")
      .Doc(
          "NumPy matmul of X and Y, optionally transposing the last two dims of either: a 1-D operand is a "
          "vector (its dim dropped from Out), batch dims broadcast.")
      .Input(kX, "The left operand, [..., M, K] ([..., K, M] with trans_x) or [K].")
      .Input(kY, "The right operand, [..., K, N] ([..., N, K] with trans_y) or [K].")
      .Output(kOut, "The product, [broadcast batch..., M, N] without the dims of 1-D operands.")
      .Attr("trans_x", false, "Transpose the last two dims of X (ignored when X is 1-D).")
      .Attr("trans_y", false, "Transpose the last two dims of Y (ignored when Y is 1-D).")
      .InferShape(InferMatmulV2)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<MatmulV2Kernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<MatmulV2Kernel<double>>());
  r.Add("matmul_v2_grad")
      .GradOf("matmul_v2")
      .Doc("Gradient of matmul_v2: X@GRAD and Y@GRAD, summed over the batch dims an operand was broadcast along.")
      .Input(kGradX, "The forward X.")
      .Input(kGradY, "The forward Y.")
      .Input(kGradDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .Output(kDY, "Gradient of the loss with respect to Y.")
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<MatmulV2GradKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<MatmulV2GradKernel<double>>());
}

}  // namespace paddlec::ops
