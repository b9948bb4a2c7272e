// mul and matmul_v2 and their gradients on the GPU: cuBLAS (S/D)gemm and gemmStridedBatched on the
// context's handle (bound to its stream), planned exactly as matmul.cc plans its oneDNN products.
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

#include "math/math_cuda_host.h"

namespace paddlec::ops {
namespace {

using math::GemmShape;

// Slots of matmul.cc.
constexpr InSlot kX{0, "X"};
constexpr InSlot kY{1, "Y"};
constexpr OutSlot kOut{0, "Out"};
constexpr InSlot kGradX{0, "X"};
constexpr InSlot kGradY{1, "Y"};
constexpr InSlot kGradDOut{2, "Out@GRAD"};
constexpr OutSlot kDX{0, "X@GRAD"};
constexpr OutSlot kDY{1, "Y@GRAD"};

// ---- Shape analysis (matmul.cc's, which infer-shape has already enforced) ---------------------

struct MulDims {
  int64_t m, k, n;
};

StatusOr<MulDims> AnalyzeMul(const Dims& x, const Dims& y, int xn, int yn) {
  if (xn >= x.rank() || yn >= y.rank())
    return MakeError(ErrorCode::kShape,
                     "X has shape {} and Y has shape {}: x_num_col_dims {} and y_num_col_dims {} "
                     "must be less than their ranks",
                     x.ToString(), y.ToString(), xn, yn);
  MulDims d{x.Product(0, xn), x.Product(xn, x.rank()), y.Product(yn, y.rank())};
  if (d.k != y.Product(0, yn))
    return MakeError(ErrorCode::kShape,
                     "X has shape {} and Y has shape {}: flattened at x_num_col_dims {} and y_num_col_dims {}, X's "
                     "width {} must equal Y's height {}",
                     x.ToString(), y.ToString(), xn, yn, d.k, y.Product(0, yn));
  return d;
}

/// matmul_v2's problem in NumPy terms (matmul.cc's MatmulDims).
struct MatmulDims {
  Dims x_batch, y_batch, out_batch;
  int64_t m = 0, k = 0, n = 0;
  bool trans_x = false, trans_y = false;  // effective: false for 1-D operands
  int64_t out_numel = 0;
  bool FoldsBatch() const {
    return !trans_x && std::all_of(y_batch.begin(), y_batch.end(), [](int64_t d) { return d == 1; });
  }
};

StatusOr<MatmulDims> AnalyzeMatmul(const Dims& x, const Dims& y, bool trans_x, bool trans_y) {
  if (x.rank() == 0 || y.rank() == 0)
    return MakeError(ErrorCode::kShape, "X has shape {} and Y has shape {}: matmul_v2 needs operands of rank >= 1",
                     x.ToString(), y.ToString());
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
  if (d.k != ky)
    return MakeError(ErrorCode::kShape, "X has shape {} and Y has shape {}: the contracted dims differ ({} vs {})",
                     x.ToString(), y.ToString(), d.k, ky);
  const int xb = std::max(0, x.rank() - 2), yb = std::max(0, y.rank() - 2), rb = std::max(xb, yb);
  for (int i = 0; i < rb; ++i) {
    const int64_t a = i < rb - xb ? 1 : x[i - (rb - xb)];
    const int64_t b = i < rb - yb ? 1 : y[i - (rb - yb)];
    if (a != b && a != 1 && b != 1)
      return MakeError(ErrorCode::kShape, "X has shape {} and Y has shape {}: batch dim {} differs ({} vs {})",
                       x.ToString(), y.ToString(), i, a, b);
    d.x_batch.push_back(a);
    d.y_batch.push_back(b);
    d.out_batch.push_back(a == 1 ? b : a);
  }
  d.out_numel = d.out_batch.Numel() * d.m * d.n;
  return d;
}

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

struct MulAttrs {
  int xn, yn;
  explicit MulAttrs(const AttrReader& a) : xn(a.Get<int>("x_num_col_dims")), yn(a.Get<int>("y_num_col_dims")) {}
};

template <class T>
class MulCuda final : public OpKernel {
 public:
  explicit MulCuda(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(MulDims d, AnalyzeMul(x.dims(), y.dims(), attrs_.xn, attrs_.yn));
      gemm_.Plan(GemmShape{{}, {}, {}, d.m, d.k, d.n, false, false});
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
      dx_.Plan(GemmShape{{}, {}, {}, d.m, d.n, d.k, false, true});
      dy_.Plan(GemmShape{{}, {}, {}, d.k, d.m, d.n, true, false});
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

struct MatmulAttrs {
  bool trans_x, trans_y;
  explicit MatmulAttrs(const AttrReader& a) : trans_x(a.Get<bool>("trans_x")), trans_y(a.Get<bool>("trans_y")) {}
};

template <class T>
class MatmulV2Cuda final : public OpKernel {
 public:
  explicit MatmulV2Cuda(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(MatmulDims d, AnalyzeMatmul(x.dims(), y.dims(), attrs_.trans_x, attrs_.trans_y));
      if (d.FoldsBatch())
        gemm_.Plan(GemmShape{{}, {}, {}, d.out_batch.Numel() * d.m, d.k, d.n, false, d.trans_y});
      else
        gemm_.Plan(GemmShape{d.x_batch, d.y_batch, d.out_batch, d.m, d.k, d.n, d.trans_x, d.trans_y});
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

  void Plan(const GemmShape& s, bool dout_first, const Dims& operand_batch) {
    gemm.Plan(s);
    a_is_dout = dout_first;
    reduce = !(operand_batch == s.c_batch);
    if (!reduce) return;
    Dims full = s.c_batch, target = operand_batch;
    full.push_back(s.m);
    full.push_back(s.n);
    target.push_back(s.m);
    target.push_back(s.n);
    reduce_index = cuda::ReduceOnto(full, target);
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

/// With op(.) the effective transposes and Out = op(X) op(Y):
///   dX = dOut op(Y)^T (stored transposed when trans_x: op(Y) dOut^T),
///   dY = op(X)^T dOut (stored transposed when trans_y: dOut^T op(X)).
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
    out_numel_ = d.out_numel;
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

template <class T>
Status RegisterFor(OpRegistry& r, DType t) {
  PC_RETURN_IF_ERROR(r.AddKernel("mul", DeviceType::kCUDA, t, MakeKernelClass<MulCuda<T>>()));
  PC_RETURN_IF_ERROR(r.AddKernel("mul_grad", DeviceType::kCUDA, t, MakeKernelClass<MulGradCuda<T>>()));
  PC_RETURN_IF_ERROR(r.AddKernel("matmul_v2", DeviceType::kCUDA, t, MakeKernelClass<MatmulV2Cuda<T>>()));
  return r.AddKernel("matmul_v2_grad", DeviceType::kCUDA, t, MakeKernelClass<MatmulV2GradCuda<T>>());
}

}  // namespace

Status RegisterMatmulCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(RegisterFor<float>(r, DType::kFloat32));
  return RegisterFor<double>(r, DType::kFloat64);
}

}  // namespace paddlec::ops
