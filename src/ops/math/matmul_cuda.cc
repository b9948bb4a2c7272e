// mul and matmul_v2 and their gradients, and fc, on the GPU: cuBLAS (S/D)gemm and gemmStridedBatched on the
// context's handle (bound to its stream), planned by matmul_shape.h exactly as the CPU plans oneDNN.
//
// Row-major on column-major cuBLAS: a row-major [r, c] matrix read column-major is its transpose,
// so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with B passed first (see
// math_cuda_plan.h, ToColumnMajor, unit-tested against BLAS's definition). Batch broadcasting:
// coalesced batch dims, the innermost one a strided-batched call with stride 0 for a broadcast
// operand, outer ones enumerated by the host (PlanGemmBatches). A gradient whose operand was
// broadcast over batch dims is computed per batch into kernel-owned scratch and then summed over
// those dims by the deterministic reduction of reduce.cu; a weight without batch dims instead folds
// the batch into M, so its gradient is one GEMM whose contraction does the batch sum.
//
// cuBLAS results are bit-identical from run to run on one GPU model (its documented default: no
// atomics-based split-K unless enabled). The handle keeps cuBLAS's default math mode, so float32
// products use no TF32 and match the CPU to float32 rounding.
#include <algorithm>
#include <climits>

#include "math/fc_slots.h"
#include "math/math_cuda_host.h"
#include "math/matmul_shape.h"

namespace paddlec::ops {
namespace {

using math::GemmShape;
using namespace matmul;  // NOLINT: the family's shared slots and shape logic

// ---- cuBLAS ------------------------------------------------------------------------------------

cublasOperation_t Op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

cublasStatus_t Gemm(cublasHandle_t h, const cuda::ColumnMajorGemm& g, const float* first, const float* second,
                    float* c) {
  const float alpha = 1, beta = 0;
  return cublasSgemm(h, Op(g.trans_first), Op(g.trans_second), static_cast<int>(g.m), static_cast<int>(g.n),
                     static_cast<int>(g.k), &alpha, first, static_cast<int>(g.ld_first), second,
                     static_cast<int>(g.ld_second), &beta, c, static_cast<int>(g.ldc));
}
cublasStatus_t Gemm(cublasHandle_t h, const cuda::ColumnMajorGemm& g, const double* first, const double* second,
                    double* c) {
  const double alpha = 1, beta = 0;
  return cublasDgemm(h, Op(g.trans_first), Op(g.trans_second), static_cast<int>(g.m), static_cast<int>(g.n),
                     static_cast<int>(g.k), &alpha, first, static_cast<int>(g.ld_first), second,
                     static_cast<int>(g.ld_second), &beta, c, static_cast<int>(g.ldc));
}
cublasStatus_t GemmBatched(cublasHandle_t h, const cuda::ColumnMajorGemm& g, const float* first, long long first_stride,
                           const float* second, long long second_stride, float* c, long long c_stride, int count) {
  const float alpha = 1, beta = 0;
  return cublasSgemmStridedBatched(h, Op(g.trans_first), Op(g.trans_second), static_cast<int>(g.m),
                                   static_cast<int>(g.n), static_cast<int>(g.k), &alpha, first,
                                   static_cast<int>(g.ld_first), first_stride, second, static_cast<int>(g.ld_second),
                                   second_stride, &beta, c, static_cast<int>(g.ldc), c_stride, count);
}
cublasStatus_t GemmBatched(cublasHandle_t h, const cuda::ColumnMajorGemm& g, const double* first,
                           long long first_stride, const double* second, long long second_stride, double* c,
                           long long c_stride, int count) {
  const double alpha = 1, beta = 0;
  return cublasDgemmStridedBatched(h, Op(g.trans_first), Op(g.trans_second), static_cast<int>(g.m),
                                   static_cast<int>(g.n), static_cast<int>(g.k), &alpha, first,
                                   static_cast<int>(g.ld_first), first_stride, second, static_cast<int>(g.ld_second),
                                   second_stride, &beta, c, static_cast<int>(g.ldc), c_stride, count);
}

/// One GemmShape, planned once per shape: C (contiguous [c_batch..., M, N]) = op(A) op(B).
template <class T>
class CudaGemm {
 public:
  void Plan(const GemmShape& s) {
    shape_ = s;
    batches_ = cuda::PlanGemmBatches(s);
    cm_ = cuda::ToColumnMajor(s);
  }
  const GemmShape& shape() const { return shape_; }
  int64_t c_numel() const { return shape_.c_batch.Numel() * shape_.m * shape_.n; }

  Status Run(KernelContext& ctx, const T* a, const T* b, T* c) const {
    const GemmShape& s = shape_;
    if (s.m == 0 || s.n == 0 || s.c_batch.Numel() == 0) return Status::OK();
    cuda::CudaContext& cu = cuda::Cuda(ctx);
    if (s.k == 0) {  // an empty contraction: zeros (all-zero bits are 0.0)
      PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c, 0, static_cast<size_t>(c_numel()) * sizeof(T), cu.stream()));
      return Status::OK();
    }
    for (int64_t v : {cm_.m, cm_.n, cm_.k, cm_.ld_first, cm_.ld_second, cm_.ldc, batches_.count})
      if (v > INT_MAX)
        return MakeError(ErrorCode::kUnimplemented,
                         "matrix product [{}x{}] x [{}x{}] (batch {}) exceeds cuBLAS's 32-bit sizes", s.m, s.k, s.k,
                         s.n, s.c_batch.ToString());
    Status st;
    cuda::ForEachGemmCall(batches_, [&](int64_t ao, int64_t bo, int64_t co) {
      if (!st.ok()) return;
      cublasStatus_t r = batches_.count == 1
                             ? Gemm(cu.cublas(), cm_, b + bo, a + ao, c + co)
                             : GemmBatched(cu.cublas(), cm_, b + bo, batches_.stride[1], a + ao, batches_.stride[0],
                                           c + co, batches_.stride[2], static_cast<int>(batches_.count));
      if (r != CUBLAS_STATUS_SUCCESS) st = runtime::cuda::CublasError(r, "cublas<S|D>gemm[StridedBatched]");
    });
    return st;
  }

 private:
  GemmShape shape_;
  cuda::GemmBatches batches_;
  cuda::ColumnMajorGemm cm_;
};

// ---- mul ---------------------------------------------------------------------------------------

template <class T>
class MulCuda final : public OpKernel {
 public:
  explicit MulCuda(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(MulDims d, AnalyzeMul(x.dims(), y.dims(), attrs_.xn, attrs_.yn));
      gemm_.Plan(d.Forward());
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    return gemm_.Run(ctx, x.data<T>(), y.data<T>(), ctx.Out(kOut).data<T>());
  }

 private:
  MulAttrs attrs_;
  Dims x_dims_{-2}, y_dims_{-2};
  CudaGemm<T> gemm_;
};

// ---- fc ----------------------------------------------------------------------------------------

/// fc (fc.cc): mul's GEMM of Input [M, K] by W [K, N], then fc.cu's bias and relu in place.
template <class T>
class FcCuda final : public OpKernel {
 public:
  explicit FcCuda(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(fc::kInput);
    const Tensor& w = ctx.In(fc::kW);
    const Tensor* bias = ctx.InOpt(fc::kBias);
    if (!(x.dims() == x_dims_ && w.dims() == w_dims_)) {
      PC_ASSIGN_OR_RETURN(MulDims d, AnalyzeMul(x.dims(), w.dims(), attrs_.in_num_col_dims, 1));
      gemm_.Plan(d.Forward());
      x_dims_ = x.dims();
      w_dims_ = w.dims();
    }
    T* out = ctx.Out(fc::kFcOut).data<T>();
    PC_RETURN_IF_ERROR(gemm_.Run(ctx, x.data<T>(), w.data<T>(), out));
    if (bias == nullptr && !attrs_.relu) return Status::OK();
    const GemmShape& s = gemm_.shape();
    return cuda::Launched(cuda::RowBiasActivation<T>(out, bias != nullptr ? bias->data<T>() : nullptr, s.m, s.n,
                                                     attrs_.relu, cuda::Stream(ctx)),
                          "fc bias and activation");
  }

 private:
  fc::FcAttrs attrs_;
  Dims x_dims_{-2}, w_dims_{-2};
  CudaGemm<T> gemm_;
};

/// dX [M, K] = dOut [M, N] * Y^T;  dY [K, N] = X^T * dOut.
template <class T>
class MulGradCuda final : public OpKernel {
 public:
  explicit MulGradCuda(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kGradX);
    const Tensor& y = ctx.In(kGradY);
    const T* dout = ctx.In(kGradDOut).data<T>();
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(MulDims d, AnalyzeMul(x.dims(), y.dims(), attrs_.xn, attrs_.yn));
      dx_.Plan(d.GradX());
      dy_.Plan(d.GradY());
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    if (Tensor* dx = ctx.OutOpt(kDX)) PC_RETURN_IF_ERROR(dx_.Run(ctx, dout, y.data<T>(), dx->data<T>()));
    if (Tensor* dy = ctx.OutOpt(kDY)) PC_RETURN_IF_ERROR(dy_.Run(ctx, x.data<T>(), dout, dy->data<T>()));
    return Status::OK();
  }

 private:
  MulAttrs attrs_;
  Dims x_dims_{-2}, y_dims_{-2};
  CudaGemm<T> dx_, dy_;
};

// ---- matmul_v2 ---------------------------------------------------------------------------------

template <class T>
class MatmulV2Cuda final : public OpKernel {
 public:
  explicit MatmulV2Cuda(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(MatmulDims d, AnalyzeMatmul(x.dims(), y.dims(), attrs_.trans_x, attrs_.trans_y));
      gemm_.Plan(d.Forward());
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    return gemm_.Run(ctx, x.data<T>(), y.data<T>(), ctx.Out(kOut).data<T>());
  }

 private:
  MatmulAttrs attrs_;
  Dims x_dims_{-2}, y_dims_{-2};
  CudaGemm<T> gemm_;
};

/// One operand's gradient: a GEMM per output batch, written straight into the gradient or, when
/// the operand was broadcast over batch dims, into scratch and then summed over those dims.
template <class T>
struct GradProduct {
  CudaGemm<T> gemm;
  bool a_is_dout = false;  // which GEMM operand is Out@GRAD (the other is X or Y)
  bool reduce = false;
  cuda::ReduceIndex<2> reduce_index;  // [c_batch..., rows, cols] onto [operand_batch..., rows, cols]
  cuda::ReducePlan reduce_plan;
  DeviceScratch product, partials;

  void Plan(const GradGemm& g) {
    gemm.Plan(g.shape);
    a_is_dout = g.dout_first;
    reduce = g.reduces();
    if (!reduce) return;
    reduce_index = cuda::ReduceOnto(g.ProductDims(), g.GradDims());
    reduce_plan = cuda::PlanReduce(reduce_index.m, reduce_index.r, reduce_index.inner_reduced);
  }

  Status Run(KernelContext& ctx, const T* dout, const T* other, Tensor& grad) {
    const T* a = a_is_dout ? dout : other;
    const T* b = a_is_dout ? other : dout;
    if (!reduce) return gemm.Run(ctx, a, b, grad.data<T>());
    runtime::Allocator& alloc = ctx.device().allocator();
    PC_ASSIGN_OR_RETURN(void* prod, product.Get(alloc, static_cast<size_t>(gemm.c_numel()) * sizeof(T)));
    PC_ASSIGN_OR_RETURN(void* part, partials.Get(alloc, PartialBytes(reduce_plan)));
    PC_RETURN_IF_ERROR(gemm.Run(ctx, a, b, static_cast<T*>(prod)));
    return cuda::Launched(cuda::ReduceSum<T, T>(static_cast<const T*>(prod), grad.data<T>(), reduce_index, reduce_plan,
                                                false, T(0), part, cuda::Stream(ctx)),
                          "matmul_v2 gradient batch sum");
  }
};

/// X@GRAD and Y@GRAD as MatmulDims::GradX and GradY plan them.
template <class T>
class MatmulV2GradCuda final : public OpKernel {
 public:
  explicit MatmulV2GradCuda(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kGradX);
    const Tensor& y = ctx.In(kGradY);
    const Tensor& dout = ctx.In(kGradDOut);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) PC_RETURN_IF_ERROR(Plan(x.dims(), y.dims()));
    if (dout.numel() != out_numel_)
      return MakeError(ErrorCode::kShape, "Out@GRAD has shape {} but X {} times Y {} gives {} elements",
                       dout.dims().ToString(), x.dims().ToString(), y.dims().ToString(), out_numel_);
    if (Tensor* dx = ctx.OutOpt(kDX)) PC_RETURN_IF_ERROR(dx_.Run(ctx, dout.data<T>(), y.data<T>(), *dx));
    if (Tensor* dy = ctx.OutOpt(kDY)) PC_RETURN_IF_ERROR(dy_.Run(ctx, dout.data<T>(), x.data<T>(), *dy));
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

template <class T>
Status RegisterFor(OpRegistry& r, DType t) {
  PC_RETURN_IF_ERROR(r.AddKernel("mul", DeviceType::kCUDA, t, MakeKernelClass<MulCuda<T>>()));
  PC_RETURN_IF_ERROR(r.AddKernel("mul_grad", DeviceType::kCUDA, t, MakeKernelClass<MulGradCuda<T>>()));
  PC_RETURN_IF_ERROR(r.AddKernel("fc", DeviceType::kCUDA, t, MakeKernelClass<FcCuda<T>>()));
  PC_RETURN_IF_ERROR(r.AddKernel("matmul_v2", DeviceType::kCUDA, t, MakeKernelClass<MatmulV2Cuda<T>>()));
  return r.AddKernel("matmul_v2_grad", DeviceType::kCUDA, t, MakeKernelClass<MatmulV2GradCuda<T>>());
}

}  // namespace

Status RegisterMatmulCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(RegisterFor<float>(r, DType::kFloat32));
  return RegisterFor<double>(r, DType::kFloat64);
}

}  // namespace paddlec::ops
