// Matrix products: mul (2-D after flattening) and matmul_v2 (NumPy matmul with transposes), and
// their gradients, all on math::Gemm (oneDNN for float32, Eigen for float64), planned by
// matmul_shape.h. A gradient of a batch-broadcast operand is summed into it from kernel-owned
// scratch.
#include "common/cpu_kernels.h"
#include "math/broadcast.h"
#include "math/gemm.h"
#include "math/matmul_shape.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using math::Gemm;
using math::GemmShape;
using namespace matmul;  // NOLINT: the family's shared slots and shape logic


runtime::CpuContext& Cpu(KernelContext& ctx) { return ctx.device_as<runtime::CpuContext>(); }

// ---- mul --------------------------------------------------------------------------------------

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

template <class T>
class MulKernel final : public OpKernel {
 public:
  explicit MulKernel(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(MulDims d, AnalyzeMul(x.dims(), y.dims(), attrs_.xn, attrs_.yn));
      shape_ = d.Forward();
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    return gemm_.Run(Cpu(ctx), shape_, x.data<T>(), y.data<T>(), ctx.Out(kOut).data<T>(), y.stamp());
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
      dx_shape_ = d.GradX();
      dy_shape_ = d.GradY();
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

Status InferMatmulV2(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(CheckSameDType(ctx));
  PC_ASSIGN_OR_RETURN(MatmulDims d, AnalyzeMatmul(ctx.InputDims(kX), ctx.InputDims(kY), ctx.Attr<bool>("trans_x"),
                                                  ctx.Attr<bool>("trans_y")));
  ctx.SetOutput(kOut, d.out, ctx.InputDType(kX));
  return Status::OK();
}

template <class T>
class MatmulV2Kernel final : public OpKernel {
 public:
  explicit MatmulV2Kernel(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(MatmulDims d, AnalyzeMatmul(x.dims(), y.dims(), attrs_.trans_x, attrs_.trans_y));
      shape_ = d.Forward();
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    return gemm_.Run(Cpu(ctx), shape_, x.data<T>(), y.data<T>(), ctx.Out(kOut).data<T>(), y.stamp());
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

  void Plan(const GradGemm& g) {
    shape = g.shape;
    a_is_dout = g.dout_first;
    reduce = g.reduces();
    if (reduce) reduce_loop = math::MakeLoop<2>(g.ProductDims(), {g.ProductDims(), g.GradDims()});
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

/// X@GRAD and Y@GRAD as MatmulDims::GradX and GradY plan them.
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
    dx_.Plan(d.GradX());
    dy_.Plan(d.GradY());
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
