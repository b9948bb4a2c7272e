// The optimizer family's CUDA kernels as paddlec kernels: sgd, momentum and adam, in place as the
// optimizer pass binds them (ParamOut == Param, ...), reading the learning rate, the beta powers and
// the optional Beta1Tensor/Beta2Tensor/EpsilonTensor/SkipUpdate on the device: no host
// synchronization. (A scalar that lives in host memory is read on the host instead.) A SelectedRows
// Grad (an is_sparse embedding's) updates only its rows (SparseRun below). Built into
// libpaddlec_cuda.so only.
#include "optimizer/optimizer_cuda.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "common/cuda_host.h"
#include "optimizer/optimizer_slots.h"

namespace paddlec::ops {
namespace {

using optimizer::ParamSlots;

/// A one-element float input as a device-read scalar (absent: `fallback`).
cuda::Scalar ScalarOf(const Tensor* t, double fallback = 0) {
  cuda::Scalar s;
  s.value = fallback;
  if (t == nullptr) return s;
  const bool f64 = t->dtype() == DType::kFloat64;
  if (t->place().is_cpu()) {  // host memory: read it here (no device work is pending on it)
    s.value = f64 ? t->data<double>()[0] : static_cast<double>(t->data<float>()[0]);
    return s;
  }
  s.p = t->raw_data();
  s.f64 = f64;
  return s;
}

StatusOr<cuda::ScalarOut> ScalarOutOf(Tensor& t, const char* slot) {
  if (t.place().is_cpu())
    return MakeError(ErrorCode::kUnimplemented, "adam on the GPU: {} lives in host memory; it must be a device tensor",
                     slot);
  return cuda::ScalarOut{t.raw_data(), t.dtype() == DType::kFloat64};
}

/// ParamTarget of optimizer.cc: the update runs on MasterParam -> MasterParamOut (mirrored into
/// ParamOut) with multi_precision and a bound MasterParam, on Param -> ParamOut otherwise. The master
/// pointers are set whenever both are bound (adam's SkipUpdate copies MasterParam through then).
template <class T>
cuda::ParamPtrs<T> PtrsOf(KernelContext& ctx, const ParamSlots& s, bool multi_precision) {
  cuda::ParamPtrs<T> p;
  p.param = ctx.In(s.param).template data<T>();
  p.param_out = ctx.Out(s.param_out).template data<T>();
  const Tensor* m = ctx.InOpt(s.master);
  Tensor* mo = ctx.OutOpt(s.master_out);
  if (m != nullptr) p.master = m->template data<T>();
  if (mo != nullptr) p.master_out = mo->template data<T>();
  // The shape function requires MasterParamOut with multi_precision; optimizer.cc then updates the copy.
  p.update_master = multi_precision && m != nullptr && mo != nullptr;
  return p;
}

/// A SelectedRows Grad on the GPU (lookup_table_v2_grad's with is_sparse): its distinct rows
/// (optimizer_slots.h's MergeRows, on the host where the row indices are) go to the device, the
/// merged gradient rows and the touched rows of Param and of each state are gathered into compact
/// arrays, the dense kernels update those, and the rows are scattered back. Out-of-place outputs get
/// the untouched rows copied first.
template <class T>
class SparseRun {
 public:
  SparseRun(KernelContext& ctx, InSlot grad_slot, InSlot param_slot) : ctx_(ctx), grad_(ctx.In(grad_slot)) {
    const Tensor& p = ctx.In(param_slot);
    width_ = p.dims()[0] > 0 ? p.numel() / p.dims()[0] : 0;
  }

  Status Prepare(const Tensor& param, std::string_view op) {
    PC_RETURN_IF_ERROR(optimizer::CheckSparseGrad(grad_, param, op));
    const optimizer::MergedRows m = optimizer::MergeRows(grad_.rows());
    n_ = static_cast<int64_t>(m.rows.size());
    std::vector<int64_t> index = m.rows;
    index.insert(index.end(), m.starts.begin(), m.starts.end());
    index.insert(index.end(), m.order.begin(), m.order.end());
    PC_ASSIGN_OR_RETURN(index_, runtime::AllocateBuffer(ctx_.device().allocator(), index.size() * sizeof(int64_t)));
    PC_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(index_->data(), index.data(), index.size() * sizeof(int64_t),
                                            cudaMemcpyHostToDevice, cuda::Stream(ctx_)));
    rows_ = static_cast<const int64_t*>(index_->data());
    PC_ASSIGN_OR_RETURN(T * g, Compact());
    grad_rows_ = g;
    return cuda::Launched(cuda::MergeSparseRows<T>(grad_.data<T>(), rows_ + 2 * n_ + 1, rows_ + n_, n_, width_, g,
                                                   cuda::Stream(ctx_)),
                          "merge sparse rows");
  }

  /// A compact copy of the touched rows of `in`, whose update ScatterTo writes to `out`.
  StatusOr<T*> Gather(const Tensor& in, Tensor& out) {
    PC_ASSIGN_OR_RETURN(T * c, Compact());
    if (out.raw_data() != in.raw_data())
      PC_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(out.raw_data(), in.raw_data(), in.nbytes(), cudaMemcpyDeviceToDevice, cuda::Stream(ctx_)));
    PC_RETURN_IF_ERROR(cuda::Launched(
        cuda::GatherTableRows<T>(in.data<T>(), rows_, n_, width_, c, cuda::Stream(ctx_)), "gather sparse rows"));
    scatters_.push_back({c, &out});
    return c;
  }

  Status ScatterAll() {
    for (auto [c, out] : scatters_)
      PC_RETURN_IF_ERROR(cuda::Launched(
          cuda::ScatterTableRows<T>(c, rows_, n_, width_, out->template data<T>(), cuda::Stream(ctx_)),
                                  "scatter sparse rows"));
    return Status::OK();
  }

  /// The merged gradient spread over a zeroed dense table (adam without lazy_mode).
  StatusOr<T*> Dense(int64_t numel) {
    PC_ASSIGN_OR_RETURN(auto b, runtime::AllocateBuffer(ctx_.device().allocator(), numel * sizeof(T)));
    buffers_.push_back(b);
    T* d = static_cast<T*>(b->data());
    PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d, 0, numel * sizeof(T), cuda::Stream(ctx_)));
    PC_RETURN_IF_ERROR(cuda::Launched(
        cuda::ScatterTableRows<T>(grad_rows_, rows_, n_, width_, d, cuda::Stream(ctx_)), "densify sparse rows"));
    return d;
  }

  const T* grad() const { return grad_rows_; }
  int64_t elements() const { return n_ * width_; }

 private:
  StatusOr<T*> Compact() {
    PC_ASSIGN_OR_RETURN(auto b, runtime::AllocateBuffer(ctx_.device().allocator(),
                                                        std::max<int64_t>(n_ * width_, 1) * sizeof(T)));
    buffers_.push_back(b);
    return static_cast<T*>(b->data());
  }

  KernelContext& ctx_;
  const Tensor& grad_;
  int64_t width_ = 0, n_ = 0;
  std::shared_ptr<runtime::Buffer> index_;  // rows, starts, order
  const int64_t* rows_ = nullptr;
  T* grad_rows_ = nullptr;
  std::vector<std::shared_ptr<runtime::Buffer>> buffers_;  // freed in stream order after the run
  std::vector<std::pair<T*, Tensor*>> scatters_;
};

/// Fails for what the GPU kernels do not take: a sparse update of a master copy, a dense Grad whose
/// size differs from Param's (the shape function lets a sparse one differ in rows).
Status CheckGrad(const Tensor& grad, const Tensor& param, bool multi_precision, std::string_view op) {
  if (grad.is_selected_rows())
    return multi_precision
               ? MakeError(ErrorCode::kUnimplemented, "{} on the GPU: a sparse Grad with multi_precision", op)
               : Status::OK();
  return optimizer::CheckDenseGrad(grad, param, op);
}

// ---- sgd ------------------------------------------------------------------------------------

namespace sgd {
using namespace optimizer::sgd;  // NOLINT: its slots and attributes

template <class T>
Status Gpu(KernelContext& ctx, const Attrs& a) {
  const Tensor& g = ctx.In(kGrad);
  PC_RETURN_IF_ERROR(CheckGrad(g, ctx.In(kParam), a.multi_precision, "sgd"));
  if (g.is_selected_rows()) {
    SparseRun<T> run(ctx, kGrad, kParam);
    PC_RETURN_IF_ERROR(run.Prepare(ctx.In(kParam), "sgd"));
    PC_ASSIGN_OR_RETURN(T * p, run.Gather(ctx.In(kParam), ctx.Out(kParamOut)));
    cuda::ParamPtrs<T> ptrs;
    ptrs.param = p;
    ptrs.param_out = p;
    PC_RETURN_IF_ERROR(cuda::Launched(
        cuda::Sgd<T>(ptrs, run.grad(), run.elements(), ScalarOf(&ctx.In(kLearningRate)), cuda::Stream(ctx)), "sgd"));
    return run.ScatterAll();
  }
  return cuda::Launched(cuda::Sgd<T>(PtrsOf<T>(ctx, kSlots, a.multi_precision), g.data<T>(), g.numel(),
                                     ScalarOf(&ctx.In(kLearningRate)), cuda::Stream(ctx)),
                        "sgd");
}
}  // namespace sgd

// ---- momentum -------------------------------------------------------------------------------

namespace momentum {
using namespace optimizer::momentum;  // NOLINT: its slots and attributes

template <class T>
Status Gpu(KernelContext& ctx, const Attrs& a) {
  const Tensor& g = ctx.In(kGrad);
  PC_RETURN_IF_ERROR(CheckGrad(g, ctx.In(kParam), a.multi_precision, "momentum"));
  if (g.is_selected_rows()) {  // lazy, as optimizer.cc: rows without a gradient keep their velocity
    SparseRun<T> run(ctx, kGrad, kParam);
    PC_RETURN_IF_ERROR(run.Prepare(ctx.In(kParam), "momentum"));
    PC_ASSIGN_OR_RETURN(T * p, run.Gather(ctx.In(kParam), ctx.Out(kParamOut)));
    PC_ASSIGN_OR_RETURN(T * v, run.Gather(ctx.In(kVelocity), ctx.Out(kVelocityOut)));
    cuda::ParamPtrs<T> ptrs;
    ptrs.param = p;
    ptrs.param_out = p;
    PC_RETURN_IF_ERROR(cuda::Launched(
        cuda::Momentum<T>(ptrs, run.grad(), v, v, run.elements(), ScalarOf(&ctx.In(kLearningRate)),
                          static_cast<T>(a.mu), static_cast<T>(a.rescale_grad),
                          static_cast<T>(a.regularization_coeff), a.l2_decay, a.use_nesterov, cuda::Stream(ctx)),
        "momentum"));
    return run.ScatterAll();
  }
  return cuda::Launched(
      cuda::Momentum<T>(PtrsOf<T>(ctx, kSlots, a.multi_precision), g.data<T>(), ctx.In(kVelocity).data<T>(),
                        ctx.Out(kVelocityOut).data<T>(), g.numel(), ScalarOf(&ctx.In(kLearningRate)),
                        static_cast<T>(a.mu), static_cast<T>(a.rescale_grad), static_cast<T>(a.regularization_coeff),
                        a.l2_decay, a.use_nesterov, cuda::Stream(ctx)),
      "momentum");
}
}  // namespace momentum

// ---- adam -----------------------------------------------------------------------------------

namespace adam {
using namespace optimizer::adam;  // NOLINT: its slots and attributes

/// The element update, then the beta powers (a second launch, so that in-place powers are read by
/// the whole element update before they advance).
template <class T>
Status Gpu(KernelContext& ctx, const Attrs& a) {
  cuda::AdamScalars s;
  s.lr = ScalarOf(&ctx.In(kLearningRate));
  s.beta1_pow = ScalarOf(&ctx.In(kBeta1Pow));
  s.beta2_pow = ScalarOf(&ctx.In(kBeta2Pow));
  s.beta1 = ScalarOf(ctx.InOpt(kBeta1Tensor), a.beta1);
  s.beta2 = ScalarOf(ctx.InOpt(kBeta2Tensor), a.beta2);
  s.epsilon = ScalarOf(ctx.InOpt(kEpsilonTensor), a.epsilon);
  if (const Tensor* skip = ctx.InOpt(kSkipUpdate)) {
    if (skip->place().is_cpu())
      s.skip_host = skip->data<bool>()[0];
    else
      s.skip = skip->data<bool>();
  }
  const Tensor& g = ctx.In(kGrad);
  PC_RETURN_IF_ERROR(CheckGrad(g, ctx.In(kParam), a.multi_precision, "adam"));
  const cudaStream_t stream = cuda::Stream(ctx);
  if (g.is_selected_rows()) {
    SparseRun<T> run(ctx, kGrad, kParam);
    PC_RETURN_IF_ERROR(run.Prepare(ctx.In(kParam), "adam"));
    if (a.lazy_mode) {
      PC_ASSIGN_OR_RETURN(T * p, run.Gather(ctx.In(kParam), ctx.Out(kParamOut)));
      PC_ASSIGN_OR_RETURN(T * m1, run.Gather(ctx.In(kMoment1), ctx.Out(kMoment1Out)));
      PC_ASSIGN_OR_RETURN(T * m2, run.Gather(ctx.In(kMoment2), ctx.Out(kMoment2Out)));
      cuda::ParamPtrs<T> ptrs;
      ptrs.param = p;
      ptrs.param_out = p;
      PC_RETURN_IF_ERROR(
          cuda::Launched(cuda::Adam<T>(ptrs, run.grad(), m1, m1, m2, m2, run.elements(), s, stream), "adam"));
      PC_RETURN_IF_ERROR(run.ScatterAll());
    } else {  // every row moves, those without a gradient as with a zero one
      PC_ASSIGN_OR_RETURN(T * dense, run.Dense(ctx.In(kParam).numel()));
      PC_RETURN_IF_ERROR(cuda::Launched(
          cuda::Adam<T>(PtrsOf<T>(ctx, kSlots, a.multi_precision), dense, ctx.In(kMoment1).data<T>(),
                        ctx.Out(kMoment1Out).data<T>(), ctx.In(kMoment2).data<T>(), ctx.Out(kMoment2Out).data<T>(),
                        ctx.In(kParam).numel(), s, stream),
          "adam"));
    }
  } else {
    PC_RETURN_IF_ERROR(
        cuda::Launched(cuda::Adam<T>(PtrsOf<T>(ctx, kSlots, a.multi_precision), g.data<T>(),
                                     ctx.In(kMoment1).data<T>(), ctx.Out(kMoment1Out).data<T>(),
                                     ctx.In(kMoment2).data<T>(), ctx.Out(kMoment2Out).data<T>(), g.numel(), s, stream),
                       "adam"));
  }
  PC_ASSIGN_OR_RETURN(cuda::ScalarOut b1, ScalarOutOf(ctx.Out(kBeta1PowOut), "Beta1PowOut"));
  PC_ASSIGN_OR_RETURN(cuda::ScalarOut b2, ScalarOutOf(ctx.Out(kBeta2PowOut), "Beta2PowOut"));
  return cuda::Launched(cuda::AdamBetaPows(s, b1, b2, a.use_global_beta_pow, stream), "adam beta powers");
}
}  // namespace adam

}  // namespace

Status RegisterOptimizerCudaKernels(OpRegistry& r) {
  constexpr DeviceType kGpu = DeviceType::kCUDA;
  PC_RETURN_IF_ERROR(r.AddKernel("sgd", kGpu, DType::kFloat32, MakeKernel(sgd::Gpu<float>)));
  PC_RETURN_IF_ERROR(r.AddKernel("sgd", kGpu, DType::kFloat64, MakeKernel(sgd::Gpu<double>)));
  PC_RETURN_IF_ERROR(r.AddKernel("momentum", kGpu, DType::kFloat32, MakeKernel(momentum::Gpu<float>)));
  PC_RETURN_IF_ERROR(r.AddKernel("momentum", kGpu, DType::kFloat64, MakeKernel(momentum::Gpu<double>)));
  PC_RETURN_IF_ERROR(r.AddKernel("adam", kGpu, DType::kFloat32, MakeKernel(adam::Gpu<float>)));
  return r.AddKernel("adam", kGpu, DType::kFloat64, MakeKernel(adam::Gpu<double>));
}

}  // namespace paddlec::ops
