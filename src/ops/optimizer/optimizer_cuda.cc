// The optimizer family's CUDA kernels as paddlec kernels: sgd, momentum and adam, in place as the
// optimizer pass binds them (ParamOut == Param, ...), reading the learning rate, the beta powers and
// the optional Beta1Tensor/Beta2Tensor/EpsilonTensor/SkipUpdate on the device: no host
// synchronization. (A scalar that lives in host memory is read on the host instead.) Built into
// libpaddlec_cuda.so only.
#include "optimizer/optimizer_cuda.h"

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

// ---- sgd ------------------------------------------------------------------------------------

namespace sgd {
using namespace optimizer::sgd;  // NOLINT: its slots and attributes

template <class T>
Status Gpu(KernelContext& ctx, const Attrs& a) {
  const Tensor& g = ctx.In(kGrad);
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
  const cudaStream_t stream = cuda::Stream(ctx);
  PC_RETURN_IF_ERROR(
      cuda::Launched(cuda::Adam<T>(PtrsOf<T>(ctx, kSlots, a.multi_precision), g.data<T>(), ctx.In(kMoment1).data<T>(),
                                   ctx.Out(kMoment1Out).data<T>(), ctx.In(kMoment2).data<T>(),
                                   ctx.Out(kMoment2Out).data<T>(), g.numel(), s, stream),
                     "adam"));
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
