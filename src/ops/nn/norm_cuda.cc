// batch_norm, batch_norm_grad, layer_norm and layer_norm_grad on the GPU with norm.cc's semantics
// (PaddlePaddle's): biased batch variance for the running statistics, SavedVariance = inverse std,
// test mode / use_global_stats, MeanOut / VarianceOut in place, NCHW and NHWC, the one-value-per-
// channel pass-through. The kernels are norm.cu's own deterministic two-pass reductions rather than
// cuDNN's batch-norm API, whose running variance is the unbiased one and whose reductions are not
// specified to be deterministic.
//
// sync_batch_norm and its gradient are the same kernel classes with kSync: norm.cu's launchers sum
// the per-channel totals and the element count over the ranks between their passes, with NCCL on the
// compute stream (the statistics are needed by the very next kernel, so there is nothing to overlap).
#include <string>

#include "nn/nn_cuda.h"
#include "nn/nn_cuda_host.h"
#include "nn/norm_slots.h"
#include "runtime/cuda/nccl.h"

namespace paddlec::ops::nn {
namespace {

using namespace norm;  // NOLINT: the family's shared slots and attributes
using runtime::cuda::CudaContext;

/// sync_batch_norm's sums over the ranks: an in-place NCCL allreduce on the compute stream, after the
/// collectives still queued on the communication stream (one communicator's collectives must run in
/// the order every rank issued them). One per run of the kernel; `op` names it in errors.
template <class T>
class NcclRankSum final : public cuda::RankSum {
 public:
  NcclRankSum(CudaContext& cc, const char* op) : cc_(cc), op_(op) {}
  /// Gets the communicator (created on the first use) and joins the communication stream.
  Status Prepare() {
    PC_ASSIGN_OR_RETURN(comm_, runtime::cuda::NcclWorld(cc_.device(), op_));
    PC_ASSIGN_OR_RETURN(type_, runtime::cuda::ToNccl(DTypeOf<T>()));
    return cc_.JoinCommStream();
  }
  bool Sum(void* buf, int64_t n, cudaStream_t s) override {
    status_ = runtime::cuda::NcclStatus(ncclAllReduce(buf, buf, static_cast<size_t>(n), type_, ncclSum, comm_, s),
                                        "ncclAllReduce");
    return status_.ok();
  }
  /// The launcher's result, or why the sum failed.
  Status Result(cudaError_t e, const char* kernel) {
    if (!status_.ok()) return std::move(status_);
    return cuda::Launched(e, kernel);
  }

 private:
  CudaContext& cc_;
  const char* op_;
  ncclComm_t comm_ = nullptr;
  ncclDataType_t type_ = ncclFloat32;
  Status status_;
};

/// norm.cc's ViewChannels: NCHW gives [N, C, H*W...], NHWC and 2-D inputs give [N*H*W..., C, 1].
cuda::ChannelView ViewChannels(const Dims& x, bool channel_last) {
  if (channel_last || x.rank() == 2) return {x.Product(0, x.rank() - 1), x[x.rank() - 1], 1};
  return {x[0], x[1], x.Product(2, x.rank())};
}

/// batch_norm, and with kSync sync_batch_norm (statistics of the global batch in training).
template <class T, bool kSync>
class BatchNormKernel final : public OpKernel {
 public:
  explicit BatchNormKernel(const KernelInit& init) : attrs_(BatchNormAttrs::Decode(init.attrs)) {}
  // Training calls NCCL, which stays out of CUDA graphs as the collectives do: a replay would not
  // wait for the other ranks' matching calls.
  bool Replayable() const override { return !kSync || attrs_.global_stats; }

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& xt = ctx.In(kBnX);
    cuda::ChannelView v = ViewChannels(xt.dims(), attrs_.channel_last);
    const int64_t c = v.channels;
    const T* x = xt.data<T>();
    const T* mean = ctx.In(kBnMean).data<T>();
    const T* var = ctx.In(kBnVariance).data<T>();
    T* y = ctx.Out(kBnY).data<T>();
    T* mean_out = ctx.Out(kBnMeanOut).data<T>();
    T* var_out = ctx.Out(kBnVarianceOut).data<T>();
    // SavedMean / SavedVariance are intermediate outputs a program may leave out: scratch then.
    PC_ASSIGN_OR_RETURN(T * saved_mean, OutOrScratch(ctx, cc, kBnSavedMean, saved_mean_, c));
    PC_ASSIGN_OR_RETURN(T * saved_inv_std, OutOrScratch(ctx, cc, kBnSavedVariance, saved_inv_std_, c));
    PC_ASSIGN_OR_RETURN(T * ab, ab_.Get<T>(cc, 2 * c));
    const T* scale = ctx.In(kBnScale).data<T>();
    const T* bias = ctx.In(kBnBias).data<T>();

    if (attrs_.global_stats)
      return cuda::Launched(cuda::BatchNormInfer<T>(v, x, scale, bias, mean, var, y, mean_out, var_out, saved_mean,
                                                    saved_inv_std, attrs_.epsilon, ab, cc.stream()),
                            "batch_norm (global statistics)");
    // sync_batch_norm: the pass-through depends on the global count, so its launcher decides it on the
    // device.
    if (!kSync && v.per_channel() == 1) {
      // PaddlePaddle's special case: one value per channel is passed through unnormalized, the running
      // statistics stay as they are, SavedMean / SavedVariance are zeros.
      const size_t stat_bytes = static_cast<size_t>(c) * sizeof(T);
      PC_RETURN_IF_ERROR(CopyDevice(cc, mean_out, mean, stat_bytes));
      PC_RETURN_IF_ERROR(CopyDevice(cc, var_out, var, stat_bytes));
      PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(saved_mean, 0, stat_bytes, cc.stream()));
      PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(saved_inv_std, 0, stat_bytes, cc.stream()));
      return CopyDevice(cc, y, x, xt.nbytes());
    }
    // MomentumTensor, when given, is read by the kernel on the device: no host synchronization.
    const Tensor* mom = ctx.InOpt(kBnMomentum);
    const void* mom_ptr = mom ? mom->raw_data() : nullptr;
    const bool mom_double = mom && mom->dtype() == DType::kFloat64;
    PC_ASSIGN_OR_RETURN(T * partials, partials_.Get<T>(cc, cuda::BatchNormPartialsSize(v)));
    auto train = [&](cuda::BatchNormSync<T>* sync) {
      return cuda::BatchNormTrain<T>(v, x, scale, bias, mean, var, y, mean_out, var_out, saved_mean, saved_inv_std,
                                     attrs_.epsilon, attrs_.momentum, mom_ptr, mom_double, ab, partials, sync,
                                     cc.stream());
    };
    if constexpr (!kSync) {
      return cuda::Launched(train(nullptr), "batch_norm (batch statistics)");
    } else {  // batch_norm's launch with the sums over the ranks
      NcclRankSum<T> sum(cc, "sync_batch_norm");
      PC_RETURN_IF_ERROR(sum.Prepare());
      PC_ASSIGN_OR_RETURN(T * stats, stats_.Get<T>(cc, c + 1));
      cuda::BatchNormSync<T> sync{&sum, stats};
      return sum.Result(train(&sync), "sync_batch_norm (batch statistics)");
    }
  }

 private:

  static StatusOr<T*> OutOrScratch(KernelContext& ctx, CudaContext& cc, OutSlot slot, DeviceScratch& scratch,
                                   int64_t c) {
    if (Tensor* t = ctx.OutOpt(slot)) return t->data<T>();
    return scratch.Get<T>(cc, c);
  }

  BatchNormAttrs attrs_;
  DeviceScratch saved_mean_, saved_inv_std_;  // stand-ins for absent SavedMean / SavedVariance
  DeviceScratch ab_;                          // per-channel affine map
  DeviceScratch partials_;                    // per-block partial sums
  DeviceScratch stats_;                       // sync_batch_norm: the sums and count being reduced
};

/// batch_norm_grad, and with kSync sync_batch_norm_grad: in training X@GRAD uses the sums of Y@GRAD
/// and Y@GRAD * (X - mean) over all ranks; Scale@GRAD and Bias@GRAD stay this rank's (the
/// data-parallel gradient allreduce sums them).
template <class T, bool kSync>
class BatchNormGradKernel final : public OpKernel {
 public:
  explicit BatchNormGradKernel(const KernelInit& init) : attrs_(BatchNormAttrs::Decode(init.attrs)) {}
  bool Replayable() const override { return !kSync || attrs_.global_stats; }

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& xt = ctx.In(kBnGX);
    cuda::ChannelView v = ViewChannels(xt.dims(), attrs_.channel_last);
    const int64_t c = v.channels;
    const T* dy = ctx.In(kBnGDY).data<T>();
    Tensor* dx = ctx.OutOpt(kBnGDX);
    Tensor* dscale = ctx.OutOpt(kBnGDScale);
    Tensor* dbias = ctx.OutOpt(kBnGDBias);
    // sync_batch_norm_grad in training: the pass-through depends on the global count (the launcher's).
    const bool sync = kSync && !attrs_.global_stats;
    if (!kSync && !attrs_.global_stats && v.per_channel() == 1) {  // the forward passed X through
      if (dx) PC_RETURN_IF_ERROR(CopyDevice(cc, dx->data<T>(), dy, xt.nbytes()));
      PC_RETURN_IF_ERROR(ZeroFill(cc, dscale));
      return ZeroFill(cc, dbias);
    }
    NcclRankSum<T> sum(cc, "sync_batch_norm_grad");
    if (sync) PC_RETURN_IF_ERROR(sum.Prepare());
    PC_ASSIGN_OR_RETURN(T * scratch, scratch_.Get<T>(cc, 2 * c + (sync ? 1 : 0)));
    PC_ASSIGN_OR_RETURN(T * partials, partials_.Get<T>(cc, cuda::BatchNormPartialsSize(v)));
    return sum.Result(
        cuda::BatchNormBackward<T>(v, xt.data<T>(), ctx.In(kBnGScale).data<T>(), ctx.In(kBnGSavedMean).data<T>(),
                                   ctx.In(kBnGSavedVariance).data<T>(), dy, dx ? dx->data<T>() : nullptr,
                                   dscale ? dscale->data<T>() : nullptr, dbias ? dbias->data<T>() : nullptr,
                                   attrs_.global_stats, scratch, partials, sync ? &sum : nullptr, cc.stream()),
        kSync ? "sync_batch_norm_grad" : "batch_norm_grad");
  }

 private:
  BatchNormAttrs attrs_;
  DeviceScratch scratch_, partials_;
};

// ---- layer_norm -----------------------------------------------------------------------------

template <class T>
const T* DataOrNull(const Tensor* t) {
  return t ? t->data<T>() : nullptr;
}
template <class T>
T* DataOrNull(Tensor* t) {
  return t ? t->data<T>() : nullptr;
}

template <class T>
Status LayerNormGpu(KernelContext& ctx, const LayerNormAttrs& attrs) {
  const Tensor& xt = ctx.In(kLnX);
  const int64_t rows = xt.dims().Product(0, attrs.begin_norm_axis);
  const int64_t width = xt.numel() / std::max<int64_t>(rows, 1);
  return cuda::Launched(
      cuda::LayerNormForward<T>(xt.data<T>(), DataOrNull<T>(ctx.InOpt(kLnScale)), DataOrNull<T>(ctx.InOpt(kLnBias)),
                                ctx.Out(kLnY).data<T>(), DataOrNull<T>(ctx.OutOpt(kLnMean)),
                                DataOrNull<T>(ctx.OutOpt(kLnVariance)), rows, width, attrs.epsilon, cuda::Stream(ctx)),
      "layer_norm");
}

template <class T>
class LayerNormGradKernel final : public OpKernel {
 public:
  explicit LayerNormGradKernel(const KernelInit& init) : attrs_(LayerNormAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& xt = ctx.In(kLnX);
    const int64_t rows = xt.dims().Product(0, attrs_.begin_norm_axis);
    const int64_t width = xt.numel() / std::max<int64_t>(rows, 1);
    Tensor* dx = ctx.OutOpt(kLnGDX);
    Tensor* dscale = ctx.OutOpt(kLnGDScale);
    Tensor* dbias = ctx.OutOpt(kLnGDBias);
    if (!dx && !dscale && !dbias) return Status::OK();
    PC_ASSIGN_OR_RETURN(T * scratch, scratch_.Get<T>(cc, cuda::LayerNormBackwardScratchSize(rows, width)));
    return cuda::Launched(
        cuda::LayerNormBackward<T>(xt.data<T>(), DataOrNull<T>(ctx.InOpt(kLnScale)), ctx.In(kLnGMean).data<T>(),
                                   ctx.In(kLnGVariance).data<T>(), ctx.In(kLnGDY).data<T>(), DataOrNull<T>(dx),
                                   DataOrNull<T>(dscale), DataOrNull<T>(dbias), rows, width, attrs_.epsilon, scratch,
                                   cc.stream()),
        "layer_norm_grad");
  }

 private:
  LayerNormAttrs attrs_;
  DeviceScratch scratch_;  // per-row inverse std and column partial sums
};

template <class T>
KernelFactory BatchNormFactory() {
  return MakeKernelClass<BatchNormKernel<T, false>>();
}
template <class T>
KernelFactory BatchNormGradFactory() {
  return MakeKernelClass<BatchNormGradKernel<T, false>>();
}
template <class T>
KernelFactory SyncBatchNormFactory() {
  return MakeKernelClass<BatchNormKernel<T, true>>();
}
template <class T>
KernelFactory SyncBatchNormGradFactory() {
  return MakeKernelClass<BatchNormGradKernel<T, true>>();
}
template <class T>
KernelFactory LayerNormFactory() {
  return MakeKernel(LayerNormGpu<T>);
}
template <class T>
KernelFactory LayerNormGradFactory() {
  return MakeKernelClass<LayerNormGradKernel<T>>();
}

}  // namespace

Status RegisterNormCudaKernels(OpRegistry& r) {
  PC_CUDA_FLOAT_KERNELS(r, "batch_norm", BatchNormFactory);
  PC_CUDA_FLOAT_KERNELS(r, "batch_norm_grad", BatchNormGradFactory);
  PC_CUDA_FLOAT_KERNELS(r, "sync_batch_norm", SyncBatchNormFactory);
  PC_CUDA_FLOAT_KERNELS(r, "sync_batch_norm_grad", SyncBatchNormGradFactory);
  PC_CUDA_FLOAT_KERNELS(r, "layer_norm", LayerNormFactory);
  PC_CUDA_FLOAT_KERNELS(r, "layer_norm_grad", LayerNormGradFactory);
  return Status::OK();
}

}  // namespace paddlec::ops::nn
