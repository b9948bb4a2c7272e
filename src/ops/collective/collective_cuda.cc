// The collective ops on a GPU place: NCCL (shipped with the CUDA toolkit) on the context's stream.
// The NCCL communicator is created once per process on the first GPU collective, from the process's
// communicator (runtime/comm.h): rank 0 makes the NCCL id and broadcasts it over MPI, as
// PaddlePaddle's c_gen_nccl_id / c_comm_init pair does over TCP.
#include <nccl.h>

#include <cstring>
#include <mutex>

#include "collective_slots.h"
#include "common/cuda_host.h"

namespace paddlec::ops {
namespace {

using namespace collective;  // NOLINT: the family's own slot constants

Status NcclStatus(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return Status::OK();
  return MakeError(ErrorCode::kRuntime, "{} failed: {}", what, ncclGetErrorString(r))
      .Note("NCCL_DEBUG=WARN prints NCCL's own diagnosis");
}

StatusOr<ncclDataType_t> ToNccl(DType t) {
  switch (t) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
    case DType::kInt8:
      return ncclInt8;
    case DType::kUInt8:
      return ncclUint8;
    default:
      return MakeError(ErrorCode::kUnimplemented, "NCCL collectives do not support {}", DTypeName(t));
  }
}

ncclRedOp_t ToNccl(runtime::ReduceOp op) {
  switch (op) {
    case runtime::ReduceOp::kSum:
      return ncclSum;
    case runtime::ReduceOp::kMax:
      return ncclMax;
    case runtime::ReduceOp::kMin:
      return ncclMin;
    case runtime::ReduceOp::kProd:
      return ncclProd;
  }
  return ncclSum;
}

/// The process's NCCL communicator over the ranks of runtime::WorldCommunicator(), on `device`.
StatusOr<ncclComm_t> NcclComm(int ring_id, int device, std::string_view op) {
  PC_RETURN_IF_ERROR(CheckRing(ring_id, op));
  static std::mutex mu;
  static ncclComm_t comm = nullptr;
  static int comm_device = -1;
  std::lock_guard<std::mutex> lock(mu);
  if (comm != nullptr) {
    if (comm_device != device)
      return MakeError(ErrorCode::kUnimplemented, "{}: the NCCL communicator is on GPU {}, not {}", op, comm_device,
                       device)
          .Note("one GPU per process: start one rank per GPU");
    return comm;
  }
  PC_ASSIGN_OR_RETURN(runtime::Communicator * world, runtime::WorldCommunicator());
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (world->rank() == 0) PC_RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
  PC_RETURN_IF_ERROR(world->Broadcast(&id, sizeof(id), 0));
  PC_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  PC_RETURN_IF_ERROR(NcclStatus(ncclCommInitRank(&comm, world->size(), id, world->rank()), "ncclCommInitRank"));
  comm_device = device;
  return comm;
}

/// Out = X on the device (skipped when they are one buffer).
Status CopyToOut(KernelContext& ctx, const Tensor& x, Tensor& out) {
  if (out.raw_data() == x.raw_data() || x.nbytes() == 0) return Status::OK();
  PC_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(out.raw_data(), x.raw_data(), x.nbytes(), cudaMemcpyDeviceToDevice, cuda::Stream(ctx)));
  return Status::OK();
}

/// Every collective: NCCL on the compute stream, so no stream synchronisation is needed around it
/// (use_calc_stream is honoured as if always true).
class CollectiveGpu : public OpKernel {
 public:
  explicit CollectiveGpu(const KernelInit& init) : a_(CommAttrs::Decode(init.attrs)) {}
  // NCCL calls can be captured into CUDA graphs, but a replay must not run ahead of the other ranks'
  // matching calls: keep them out of graphs.
  bool Replayable() const override { return false; }

 protected:
  CommAttrs a_;
};

template <runtime::ReduceOp kOp>
class AllReduceGpu final : public CollectiveGpu {
 public:
  using CollectiveGpu::CollectiveGpu;
  Status Run(KernelContext& ctx) override {
    auto& cc = cuda::Cuda(ctx);
    PC_ASSIGN_OR_RETURN(ncclComm_t comm, NcclComm(a_.ring_id, cc.device(), "c_allreduce"));
    const Tensor& x = ctx.In(kX);
    Tensor& out = ctx.Out(kOut);
    PC_ASSIGN_OR_RETURN(ncclDataType_t t, ToNccl(x.dtype()));
    return NcclStatus(
        ncclAllReduce(x.raw_data(), out.raw_data(), static_cast<size_t>(x.numel()), t, ToNccl(kOp), comm, cc.stream()),
        "ncclAllReduce");
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
    return NcclStatus(
        ncclAllReduce(x.raw_data(), ctx.Out(kOut).raw_data(), static_cast<size_t>(x.numel()), t, op, comm, cc.stream()),
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
    return NcclStatus(ncclBroadcast(x.raw_data(), out.raw_data(), x.nbytes(), ncclUint8, a_.root, comm, cc.stream()),
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
    return NcclStatus(ncclAllGather(x.raw_data(), ctx.Out(kOut).raw_data(), x.nbytes(), ncclUint8, comm, cc.stream()),
                      "ncclAllGather");
  }
};

/// c_identity and the stream syncs: every kernel runs on the one compute stream, so Out = X is all.
Status PassThroughGpu(KernelContext& ctx) {
  int n = std::min(ctx.NumIn(kX), ctx.NumOut(kOut));
  for (int i = 0; i < n; ++i) PC_RETURN_IF_ERROR(CopyToOut(ctx, ctx.In(kX, i), ctx.Out(kOut, i)));
  return Status::OK();
}

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
    for (const char* op : {"c_identity", "c_sync_calc_stream", "c_sync_comm_stream"})
      PC_RETURN_IF_ERROR(r.AddKernel(op, DeviceType::kCUDA, t, MakeKernel(PassThroughGpu)));
  }
  for (DType t : {DType::kFloat32, DType::kFloat64})
    PC_RETURN_IF_ERROR(r.AddKernel("coalesce_tensor", DeviceType::kCUDA, t, MakeKernelClass<CoalesceGpu>()));
  return Status::OK();
}

}  // namespace paddlec::ops
