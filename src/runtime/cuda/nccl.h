// The process's NCCL communicator and NCCL's types in paddlec's terms, shared by the collective ops
// (ops/collective/collective_cuda.cc) and sync_batch_norm (ops/nn/norm_cuda.cc). libpaddlec_cuda.so only.
#pragma once

#include <nccl.h>

#include <string_view>

#include "paddlec/core/dtype.h"
#include "paddlec/core/error.h"
#include "paddlec/runtime/comm.h"

namespace paddlec::runtime::cuda {

/// An NCCL result as a Status naming the call.
Status NcclStatus(ncclResult_t r, const char* what);
StatusOr<ncclDataType_t> ToNccl(DType t);
ncclRedOp_t ToNccl(ReduceOp op);

/// The process's NCCL communicator over the ranks of runtime::WorldCommunicator(), on `device`;
/// created by the first call (rank 0 makes the NCCL id and broadcasts it over the process's
/// communicator, as PaddlePaddle's c_gen_nccl_id / c_comm_init pair does over TCP). `op` names the
/// caller in errors.
StatusOr<ncclComm_t> NcclWorld(int device, std::string_view op);

}  // namespace paddlec::runtime::cuda
