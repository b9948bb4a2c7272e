// libpaddlec_mpi.so: the Communicator of runtime/comm.h over Open MPI's MPI_COMM_WORLD. Loaded by
// src/runtime/comm.cc only in processes that mpirun started and that run a collective.
#define OMPI_SKIP_MPICXX 1  // the C API only
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "paddlec/runtime/comm.h"

namespace paddlec::runtime {
namespace {

using Clock = std::chrono::steady_clock;

StatusOr<MPI_Datatype> ToMpi(DType t) {
  switch (t) {
    case DType::kFloat32:
      return MPI_FLOAT;
    case DType::kFloat64:
      return MPI_DOUBLE;
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kInt64:
      return MPI_INT64_T;
    case DType::kInt16:
      return MPI_INT16_T;
    case DType::kInt8:
      return MPI_INT8_T;
    case DType::kUInt8:
      return MPI_UINT8_T;
    case DType::kBool:
      return MPI_C_BOOL;
    default:
      return MakeError(ErrorCode::kUnimplemented, "MPI collectives do not support {}", DTypeName(t));
  }
}

MPI_Op ToMpi(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kProd:
      return MPI_PROD;
  }
  return MPI_SUM;
}

Status Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::OK();
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return MakeError(ErrorCode::kRuntime, "{} failed: {}", what, std::string(msg, static_cast<size_t>(len)));
}

/// Seconds spent between construction and destruction are added to `total`.
class Timed {
 public:
  explicit Timed(double& total) : total_(total), t0_(Clock::now()) {}
  ~Timed() { total_ += std::chrono::duration<double>(Clock::now() - t0_).count(); }

 private:
  double& total_;
  Clock::time_point t0_;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Errors come back as return codes, so a failing collective becomes a paddlec error message.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "mpi"; }

  Status AllReduce(void* buf, int64_t count, DType dtype, ReduceOp op) override {
    PC_ASSIGN_OR_RETURN(MPI_Datatype t, ToMpi(dtype));
    Timed timed(seconds_);
    return Check(MPI_Allreduce(MPI_IN_PLACE, buf, static_cast<int>(count), t, ToMpi(op), MPI_COMM_WORLD),
                 "MPI_Allreduce");
  }
  Status Broadcast(void* buf, int64_t bytes, int root) override {
    if (root < 0 || root >= size_)
      return MakeError(ErrorCode::kInvalidArgument, "broadcast root {} is not a rank of the {} ranks", root, size_);
    Timed timed(seconds_);
    return Check(MPI_Bcast(buf, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  Status AllGather(const void* in, void* out, int64_t bytes) override {
    Timed timed(seconds_);
    const void* send = in == out ? MPI_IN_PLACE : in;
    return Check(
        MPI_Allgather(send, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD),
        "MPI_Allgather");
  }
  [[noreturn]] void Abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }

 private:
  int rank_ = 0, size_ = 1;
};

void Finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace
}  // namespace paddlec::runtime

extern "C" __attribute__((visibility("default"))) paddlec::runtime::Communicator* paddlec_mpi_communicator(
    char* reason, size_t size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    int argc = 0;
    char** argv = nullptr;
    if (int rc = MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS) {
      std::snprintf(reason, size, "MPI_Init_thread returned %d", rc);
      return nullptr;
    }
    std::atexit(paddlec::runtime::Finalize);
  }
  return new paddlec::runtime::MpiCommunicator();
}
