// The collective ops on a GPU place: NCCL (shipped with the CUDA toolkit) over the process's NCCL
// communicator (runtime/cuda/nccl.h), created on the first GPU collective.
//
// A c_allreduce_* with use_calc_stream = false runs on the context's communication stream, after
// the compute stream's work so far, so that the ops after it compute while it runs; c_sync_comm_stream
// orders the compute stream after it, and so does the end of the run (Plan::Finish) when a program
// has no sync. Every other collective runs on the compute stream, after the communication stream's
// collectives: NCCL needs one communicator's collectives in the same order on every rank, and two
// streams would let a GPU run them in either order. PADDLEC_COMM_OVERLAP=off keeps every collective
// on the compute stream.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "collective_slots.h"
#include "common/cuda_host.h"
#include "runtime/cuda/nccl.h"

namespace paddlec::ops {
namespace {

using namespace collective;  // NOLINT: the family's own slot constants
using runtime::cuda::NcclStatus;
using runtime::cuda::ToNccl;

StatusOr<ncclComm_t> NcclComm(int ring_id, int device, std::string_view op) {
  PC_RETURN_IF_ERROR(CheckRing(ring_id, op));
  return runtime::cuda::NcclWorld(device, op);
}

/// Out = X on the device (skipped when they are one buffer).
Status CopyToOut(KernelContext& ctx, const Tensor& x, Tensor& out) {
  if (out.raw_data() == x.raw_data() || x.nbytes() == 0) return Status::OK();
  PC_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(out.raw_data(), x.raw_data(), x.nbytes(), cudaMemcpyDeviceToDevice, cuda::Stream(ctx)));
  return Status::OK();
}

/// Every collective. NCCL calls can be captured into CUDA graphs, but a replay must not run ahead of
/// the other ranks' matching calls: they are kept out of graphs.
class CollectiveGpu : public OpKernel {
 public:
  explicit CollectiveGpu(const KernelInit& init) : a_(CommAttrs::Decode(init.attrs)) {}
  bool Replayable() const override { return false; }

 protected:
  /// The compute stream, ordered after the collectives queued on the communication stream: a
  /// collective queued on it then runs after them, in the order every rank issued them.
  static StatusOr<cudaStream_t> ComputeStreamAfterComm(cuda::CudaContext& cc) {
    PC_RETURN_IF_ERROR(cc.JoinCommStream());
    return cc.stream();
  }

  CommAttrs a_;
};

/// PADDLEC_COMM_OVERLAP=off: every GPU collective on the compute stream, as on CPUs it makes them
/// block (the MPI communicator rejects values other than thread and off).
bool OverlapOff() {
  const char* v = std::getenv("PADDLEC_COMM_OVERLAP");
  return v != nullptr && std::strcmp(v, "off") == 0;
}

template <runtime::ReduceOp kOp>
class AllReduceGpu final : public CollectiveGpu {
 public:
  explicit AllReduceGpu(const KernelInit& init) : CollectiveGpu(init) {
    if (OverlapOff()) a_.use_calc_stream = true;
  }
  Status Run(KernelContext& ctx) override {
    auto& cc = cuda::Cuda(ctx);
    PC_ASSIGN_OR_RETURN(ncclComm_t comm, NcclComm(a_.ring_id, cc.device(), "c_allreduce"));
    const Tensor& x = ctx.In(kX);
    Tensor& out = ctx.Out(kOut);
    PC_ASSIGN_OR_RETURN(ncclDataType_t t, ToNccl(x.dtype()));
    const size_t n = static_cast<size_t>(x.numel());
    if (a_.use_calc_stream) {
      PC_ASSIGN_OR_RETURN(cudaStream_t s, ComputeStreamAfterComm(cc));
      return NcclStatus(ncclAllReduce(x.raw_data(), out.raw_data(), n, t, ToNccl(kOp), comm, s), "ncclAllReduce");
    }
    // Out = X on the compute stream first, so that only Out is in use until the sync, as on the CPU:
    // the ops after this one may overwrite X, or (after plan-memory) reuse its buffer.
    PC_RETURN_IF_ERROR(CopyToOut(ctx, x, out));
    PC_ASSIGN_OR_RETURN(cudaStream_t s, cc.CommStreamAfterCompute(out.buffer()));
    return NcclStatus(ncclAllReduce(out.raw_data(), out.raw_data(), n, t, ToNccl(kOp), comm, s), "ncclAllReduce");
  }
};

/// PaddlePaddle 3's all_reduce (the reduction in an attribute; avg is NCCL's ncclAvg).
class AllReduceByTypeGpu final : public CollectiveGpu {
 public:
  using CollectiveGpu::CollectiveGpu;
  Status Run(KernelContext& ctx) override {
    auto& cc = cuda::Cuda(ctx);
    PC_ASSIGN_OR_RETURN(ncclComm_t comm, NcclComm(a_.ring_id, cc.device(), "all_reduce"));
    const Tensor& x = ctx.In(kX);
    PC_ASSIGN_OR_RETURN(ncclDataType_t t, ToNccl(x.dtype()));
    ncclRedOp_t op = a_.reduce_type == kReduceAvg ? ncclAvg : ToNccl(ReduceOf(a_.reduce_type));
    PC_ASSIGN_OR_RETURN(cudaStream_t s, ComputeStreamAfterComm(cc));
    return NcclStatus(
        ncclAllReduce(x.raw_data(), ctx.Out(kOut).raw_data(), static_cast<size_t>(x.numel()), t, op, comm, s),
        "ncclAllReduce");
  }
};

class BroadcastGpu final : public CollectiveGpu {
 public:
  using CollectiveGpu::CollectiveGpu;
  Status Run(KernelContext& ctx) override {
    auto& cc = cuda::Cuda(ctx);
    PC_ASSIGN_OR_RETURN(ncclComm_t comm, NcclComm(a_.ring_id, cc.device(), "c_broadcast"));
    const Tensor& x = ctx.In(kX);
    Tensor& out = ctx.Out(kOut);
    PC_ASSIGN_OR_RETURN(cudaStream_t s, ComputeStreamAfterComm(cc));
    return NcclStatus(ncclBroadcast(x.raw_data(), out.raw_data(), x.nbytes(), ncclUint8, a_.root, comm, s),
                      "ncclBroadcast");
  }
};

class AllGatherGpu final : public CollectiveGpu {
 public:
  using CollectiveGpu::CollectiveGpu;
  Status Run(KernelContext& ctx) override {
    auto& cc = cuda::Cuda(ctx);
    PC_ASSIGN_OR_RETURN(ncclComm_t comm, NcclComm(a_.ring_id, cc.device(), "c_allgather"));
    int nranks = 0;
    PC_RETURN_IF_ERROR(NcclStatus(ncclCommCount(comm, &nranks), "ncclCommCount"));
    if (nranks != a_.nranks)
      return MakeError(ErrorCode::kInvalidArgument, "c_allgather: nranks is {} but the process group has {} ranks",
                       a_.nranks, nranks);
    const Tensor& x = ctx.In(kX);
    PC_ASSIGN_OR_RETURN(cudaStream_t s, ComputeStreamAfterComm(cc));
    return NcclStatus(ncclAllGather(x.raw_data(), ctx.Out(kOut).raw_data(), x.nbytes(), ncclUint8, comm, s),
                      "ncclAllGather");
  }
};

/// c_identity and c_sync_calc_stream: Out = X. (c_sync_calc_stream has nothing to order: every
/// collective on the communication stream already waits for the compute stream's work before it.)
Status PassThroughGpu(KernelContext& ctx) {
  int n = std::min(ctx.NumIn(kX), ctx.NumOut(kOut));
  for (int i = 0; i < n; ++i) PC_RETURN_IF_ERROR(CopyToOut(ctx, ctx.In(kX, i), ctx.Out(kOut, i)));
  return Status::OK();
}

/// c_sync_comm_stream: the compute stream waits (on the device) for the collectives queued on the
/// communication stream, so the ops after it read the reduced values. Out = X.
class SyncCommGpu final : public CollectiveGpu {
 public:
  using CollectiveGpu::CollectiveGpu;
  Status Run(KernelContext& ctx) override {
    PC_RETURN_IF_ERROR(CheckRing(a_.ring_id, "c_sync_comm_stream"));
    PC_RETURN_IF_ERROR(cuda::Cuda(ctx).JoinCommStream());
    return PassThroughGpu(ctx);
  }
};

Status Coalesce(KernelContext& ctx, const CoalesceAttrs& a) {
  Tensor& fused = ctx.Out(kFusedOutput);
  if (a.set_constant && a.constant != 0)
    return MakeError(ErrorCode::kUnimplemented, "coalesce_tensor on a GPU: set_constant supports only 0, not {}",
                     a.constant);
  size_t elt = SizeOf(fused.dtype());
  int64_t offset = 0;
  std::vector<int64_t> offsets;
  for (int i = 0; i < ctx.NumIn(kInput); ++i) {
    const Tensor& in = ctx.In(kInput, i);
    if (in.dtype() != fused.dtype())
      return MakeError(ErrorCode::kInvalidArgument, "coalesce_tensor: Input[{}] is {} but FusedOutput is {}", i,
                       DTypeName(in.dtype()), DTypeName(fused.dtype()));
    offsets.push_back(offset);
    char* dst = static_cast<char*>(fused.raw_data()) + offset * elt;
    if (a.copy_data && in.numel() > 0 && dst != in.raw_data())
      PC_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(dst, in.raw_data(), in.nbytes(), cudaMemcpyDeviceToDevice, cuda::Stream(ctx)));
    offset += in.numel();
  }
  if (offset != fused.numel())
    return MakeError(ErrorCode::kInvalidArgument, "coalesce_tensor: the inputs hold {} elements, FusedOutput {}",
                     offset, fused.numel());
  if (a.set_constant) PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(fused.raw_data(), 0, fused.nbytes(), cuda::Stream(ctx)));
  for (int i = 0; i < ctx.NumOut(kOutput) && i < static_cast<int>(offsets.size()); ++i)
    BindView(ctx.Out(kOutput, i), fused, ctx.In(kInput, i).dims(), fused.dtype(), offsets[i]);
  return Status::OK();
}

/// Rebinds its outputs to a new buffer whenever the plan reallocates FusedOutput: a CUDA graph would
/// replay copies into the old one.
class CoalesceGpu final : public OpKernel {
 public:
  explicit CoalesceGpu(const KernelInit& init) : a_(CoalesceAttrs::Decode(init.attrs)) {}
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override { return Coalesce(ctx, a_); }

 private:
  CoalesceAttrs a_;
};

}  // namespace

Status RegisterCollectiveCudaKernels(OpRegistry& r) {
  using runtime::ReduceOp;
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    PC_RETURN_IF_ERROR(
        r.AddKernel("c_allreduce_sum", DeviceType::kCUDA, t, MakeKernelClass<AllReduceGpu<ReduceOp::kSum>>()));
    PC_RETURN_IF_ERROR(
        r.AddKernel("c_allreduce_max", DeviceType::kCUDA, t, MakeKernelClass<AllReduceGpu<ReduceOp::kMax>>()));
    PC_RETURN_IF_ERROR(
        r.AddKernel("c_allreduce_min", DeviceType::kCUDA, t, MakeKernelClass<AllReduceGpu<ReduceOp::kMin>>()));
    PC_RETURN_IF_ERROR(
        r.AddKernel("c_allreduce_prod", DeviceType::kCUDA, t, MakeKernelClass<AllReduceGpu<ReduceOp::kProd>>()));
    PC_RETURN_IF_ERROR(r.AddKernel("c_broadcast", DeviceType::kCUDA, t, MakeKernelClass<BroadcastGpu>()));
    PC_RETURN_IF_ERROR(r.AddKernel("broadcast", DeviceType::kCUDA, t, MakeKernelClass<BroadcastGpu>()));
    PC_RETURN_IF_ERROR(r.AddKernel("all_reduce", DeviceType::kCUDA, t, MakeKernelClass<AllReduceByTypeGpu>()));
    PC_RETURN_IF_ERROR(r.AddKernel("c_allgather", DeviceType::kCUDA, t, MakeKernelClass<AllGatherGpu>()));
    for (const char* op : {"c_identity", "c_sync_calc_stream"})
      PC_RETURN_IF_ERROR(r.AddKernel(op, DeviceType::kCUDA, t, MakeKernel(PassThroughGpu)));
    PC_RETURN_IF_ERROR(r.AddKernel("c_sync_comm_stream", DeviceType::kCUDA, t, MakeKernelClass<SyncCommGpu>()));
  }
  for (DType t : {DType::kFloat32, DType::kFloat64})
    PC_RETURN_IF_ERROR(r.AddKernel("coalesce_tensor", DeviceType::kCUDA, t, MakeKernelClass<CoalesceGpu>()));
  return Status::OK();
}

}  // namespace paddlec::ops
