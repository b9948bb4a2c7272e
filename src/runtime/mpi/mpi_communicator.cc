// libpaddlec_mpi.so: the Communicator of runtime/comm.h over Open MPI's MPI_COMM_WORLD. Loaded by
// src/runtime/comm.cc only in processes that mpirun started and that run a collective.
//
// Started collectives (StartAllReduce) run on a communication thread that makes the blocking MPI
// calls in the order they were started, while the thread that started them computes; MPI is then
// initialized with MPI_THREAD_MULTIPLE (MPI_Abort from the main thread may meet a collective in
// flight), and an MPI without it gets blocking collectives. PADDLEC_COMM_OVERLAP=off makes every
// collective block the caller. MPI_Iallreduce was measured and rejected: Open MPI 4 progresses
// non-blocking collectives only inside MPI calls (no asynchronous progress thread), and even with
// MPI_Testall between ops its steps took 2-3x longer than the thread's (docs/scaling.md).
#define OMPI_SKIP_MPICXX 1  // the C API only
#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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

enum class Overlap { kOff, kThread };

/// PADDLEC_COMM_OVERLAP, or an error naming the accepted values.
StatusOr<Overlap> OverlapFromEnv() {
  const char* v = std::getenv("PADDLEC_COMM_OVERLAP");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "thread") == 0) return Overlap::kThread;
  if (std::strcmp(v, "off") == 0) return Overlap::kOff;
  return MakeError(ErrorCode::kInvalidArgument, "PADDLEC_COMM_OVERLAP={} is not thread or off", v);
}

/// One thread that runs posted collectives in order, so that MPI moves their data while the thread
/// that posted them computes. Only one of the two threads is inside MPI at a time, except MPI_Abort.
class CommThread {
 public:
  CommThread() : thread_([this] { Loop(); }) {}

  void Post(std::function<Status()> job) {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    ++pending_;
    work_.notify_one();
  }
  /// Blocks until every posted job ran; the first error among them.
  Status Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return pending_ == 0; });
    Status s = std::move(error_);
    error_ = Status::OK();
    return s;
  }
  /// Joins the thread if it is idle; else leaves it (inside a collective that may never finish) and
  /// returns false.
  bool Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_ > 0) return false;
      stop_ = true;
      work_.notify_one();
    }
    thread_.join();
    return true;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      std::function<Status()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      Status s = job();
      lock.lock();
      if (!s.ok() && error_.ok()) error_ = std::move(s);
      if (--pending_ == 0) idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_, idle_;
  std::deque<std::function<Status()>> jobs_;
  int pending_ = 0;
  bool stop_ = false;
  Status error_;
  std::thread thread_;
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(Overlap overlap) : overlap_(overlap) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Errors come back as return codes, so a failing collective becomes a paddlec error message.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (overlap_ == Overlap::kThread) thread_ = std::make_unique<CommThread>();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "mpi"; }

  Status AllReduce(void* buf, int64_t count, DType dtype, ReduceOp op) override {
    PC_ASSIGN_OR_RETURN(MPI_Datatype t, ToMpi(dtype));
    PC_RETURN_IF_ERROR(WaitAll());  // collectives in start order on every rank
    Timed timed(seconds_);
    return Check(MPI_Allreduce(MPI_IN_PLACE, buf, static_cast<int>(count), t, ToMpi(op), MPI_COMM_WORLD),
                 "MPI_Allreduce");
  }
  Status StartAllReduce(void* buf, int64_t count, DType dtype, ReduceOp op, std::shared_ptr<void> owner) override {
    if (overlap_ == Overlap::kOff) return AllReduce(buf, count, dtype, op);
    PC_ASSIGN_OR_RETURN(MPI_Datatype t, ToMpi(dtype));
    int n = static_cast<int>(count);
    thread_->Post([=, owner = std::move(owner)] {
      return Check(MPI_Allreduce(MPI_IN_PLACE, buf, n, t, ToMpi(op), MPI_COMM_WORLD), "MPI_Allreduce");
    });
    ++in_flight_;
    return Status::OK();
  }
  Status WaitAll() override {
    if (in_flight_ == 0) return Status::OK();
    Timed timed(seconds_);
    in_flight_ = 0;
    return thread_->Drain();
  }
  Status Broadcast(void* buf, int64_t bytes, int root) override {
    if (root < 0 || root >= size_)
      return MakeError(ErrorCode::kInvalidArgument, "broadcast root {} is not a rank of the {} ranks", root, size_);
    PC_RETURN_IF_ERROR(WaitAll());
    Timed timed(seconds_);
    return Check(MPI_Bcast(buf, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  Status AllGather(const void* in, void* out, int64_t bytes) override {
    PC_RETURN_IF_ERROR(WaitAll());
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

  /// Before MPI_Finalize: false when a collective is still in flight (MPI must then not finalize).
  bool StopThread() { return thread_ == nullptr || thread_->Stop(); }

 private:
  Overlap overlap_;
  int rank_ = 0, size_ = 1;
  std::unique_ptr<CommThread> thread_;
};

MpiCommunicator* world = nullptr;

void Finalize() {
  if (world != nullptr && !world->StopThread()) return;  // exiting on an error with a collective in flight
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace
}  // namespace paddlec::runtime

extern "C" __attribute__((visibility("default"))) paddlec::runtime::Communicator* paddlec_mpi_communicator(
    char* reason, size_t size) {
  using paddlec::runtime::Overlap;
  auto overlap = paddlec::runtime::OverlapFromEnv();
  if (!overlap.ok()) {
    std::snprintf(reason, size, "%s", overlap.error().message().c_str());
    return nullptr;
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    int argc = 0;
    char** argv = nullptr;
    int wanted = *overlap == Overlap::kThread ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
    if (int rc = MPI_Init_thread(&argc, &argv, wanted, &provided); rc != MPI_SUCCESS) {
      std::snprintf(reason, size, "MPI_Init_thread returned %d", rc);
      return nullptr;
    }
    std::atexit(paddlec::runtime::Finalize);
  } else {
    MPI_Query_thread(&provided);
  }
  // A communication thread needs MPI from two threads; an MPI that cannot gets blocking collectives.
  if (*overlap == Overlap::kThread && provided < MPI_THREAD_MULTIPLE) *overlap = Overlap::kOff;
  paddlec::runtime::world = new paddlec::runtime::MpiCommunicator(*overlap);
  return paddlec::runtime::world;
}
