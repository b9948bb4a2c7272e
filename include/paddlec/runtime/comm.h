// The process group of a data-parallel run: which rank this process is, how many there are, and the
// collectives over host memory that the CPU kernels of the c_* ops (src/ops/collective) use.
//
// One communicator per process, created on first use from the launcher's environment: under
// `mpirun` (OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE) it is Open MPI's MPI_COMM_WORLD, in a module
// (libpaddlec_mpi.so) dlopened only then, so a process that never runs a collective neither links
// nor initializes MPI; without a launcher it is a group of one, whose collectives are copies.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "paddlec/core/dtype.h"
#include "paddlec/core/error.h"

namespace paddlec::runtime {

enum class ReduceOp { kSum, kMax, kMin, kProd };

/// Collectives of one process group. Buffers are host memory; every rank must call the same
/// collectives in the same order (as MPI requires).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "mpi" or "local" (a group of one).
  virtual std::string_view backend() const = 0;

  /// In place: buf[i] = op over all ranks of buf[i].
  virtual Status AllReduce(void* buf, int64_t count, DType dtype, ReduceOp op) = 0;
  /// `bytes` bytes of `root`'s buffer are copied into every rank's.
  virtual Status Broadcast(void* buf, int64_t bytes, int root) = 0;
  /// out = the `bytes` bytes of `in` of rank 0, then rank 1, ...
  virtual Status AllGather(const void* in, void* out, int64_t bytes) = 0;
  /// Stops every rank of the group (the failing rank printed its error first); does not return.
  [[noreturn]] virtual void Abort(int exit_code) = 0;

  /// Starts an in-place AllReduce and returns before it finishes, so that computation overlaps it:
  /// `buf` must be neither read nor written until WaitAll() returns. Collectives run in the order
  /// they were started (a blocking one first waits for those in flight), the same on every rank.
  /// `owner` (the memory `buf` lies in) is held until the collective finishes, so that a run abandoned
  /// on an error cannot free the buffer under it. The default runs it to completion at once.
  virtual Status StartAllReduce(void* buf, int64_t count, DType dtype, ReduceOp op, std::shared_ptr<void> owner) {
    (void)owner;
    return AllReduce(buf, count, dtype, op);
  }
  /// Returns once every started collective has finished: the first error among them, if any.
  virtual Status WaitAll() { return Status::OK(); }
  /// Collectives started and not yet waited for (read by the thread that starts and waits).
  int in_flight() const { return in_flight_; }

  /// Wall time the calling thread spent blocked in collectives (blocking calls and WaitAll) so far,
  /// in seconds; time a started collective runs while the caller computes is not counted.
  double seconds_in_collectives() const { return seconds_; }

 protected:
  double seconds_ = 0;
  int in_flight_ = 0;
};

/// Waits for the world communicator's started collectives, if it exists and has any: what the
/// executor does at the end of every run, so that no collective outlives the step that started it.
Status WaitForCollectives();

/// The ranks of the launcher that started this process (read from its environment, no MPI call):
/// 1 when there is none.
int LauncherWorldSize();
/// This process's rank in the launcher's group (0 without one).
int LauncherRank();

/// The process's communicator, created on the first call (MPI_Init happens there).
StatusOr<Communicator*> WorldCommunicator();
/// The communicator if WorldCommunicator() created one already, else nullptr (creates nothing).
Communicator* WorldCommunicatorIfCreated();

}  // namespace paddlec::runtime
