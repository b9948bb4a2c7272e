// The process's NCCL communicator, created once from the process's communicator.
#include "runtime/cuda/nccl.h"

#include <cstring>
#include <mutex>

#include "runtime/cuda/cuda_context.h"

namespace paddlec::runtime::cuda {

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

ncclRedOp_t ToNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kProd:
      return ncclProd;
  }
  return ncclSum;
}

StatusOr<ncclComm_t> NcclWorld(int device, std::string_view op) {
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
  PC_ASSIGN_OR_RETURN(Communicator * world, WorldCommunicator());
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (world->rank() == 0) PC_RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
  PC_RETURN_IF_ERROR(world->Broadcast(&id, sizeof(id), 0));
  PC_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  PC_RETURN_IF_ERROR(NcclStatus(ncclCommInitRank(&comm, world->size(), id, world->rank()), "ncclCommInitRank"));
  comm_device = device;
  return comm;
}

}  // namespace paddlec::runtime::cuda
