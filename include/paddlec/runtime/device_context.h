// Per-device execution resources handed to every kernel: the allocator and, on the CPU, the
// intra-op thread count; the CUDA context (stream, cuBLAS/cuDNN handles) lives in the CUDA backend.
//
// On the CPU, paddlec's own parallel loops run on runtime/threads.h's RunTasks and oneDNN's
// primitives on OpenMP; threads.h says why, and how the two share the cores.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "paddlec/core/place.h"
#include "paddlec/runtime/allocator.h"
#include "paddlec/runtime/threads.h"

namespace paddlec::runtime {

class Tensor;

/// Work recorded once and launched again as a whole (a CUDA graph).
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  virtual Status Launch() = 0;
};

class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
  virtual Place place() const = 0;
  Allocator& allocator() const { return *allocator_; }
  const std::shared_ptr<Allocator>& shared_allocator() const { return allocator_; }
  /// Waits for all work queued on this device.
  virtual Status Synchronize() { return Status::OK(); }
  /// Copies a host tensor to this device (dims, dtype and data); on the CPU, a deep copy.
  virtual Status CopyFromHost(const Tensor& host, Tensor& device);
  /// Copies a tensor of this device to host memory allocated from `host_alloc`.
  virtual Status CopyToHost(const Tensor& device, Tensor& host, Allocator& host_alloc);

  /// Orders all work queued later on this device after the work it queued off its main queue (a
  /// GPU's collectives on its communication stream), without waiting on the host: what a plan does at
  /// the end of every run, so that nothing it started outlives it.
  virtual Status JoinPendingWork() { return Status::OK(); }

  /// Recording: the work queued between BeginCapture and EndCapture is not run but recorded, and
  /// the returned object launches it (again and again) in one call. Devices without that (the CPU)
  /// return Unimplemented.
  virtual Status BeginCapture() { return MakeError(ErrorCode::kUnimplemented, "{} cannot record work", place().ToString()); }
  virtual StatusOr<std::unique_ptr<CapturedWork>> EndCapture() {
    return MakeError(ErrorCode::kUnimplemented, "{} cannot record work", place().ToString());
  }

 protected:
  std::shared_ptr<Allocator> allocator_;
};

struct OneDnnHandles;  // runtime/onednn.h

class CpuContext final : public DeviceContext {
 public:
  /// `num_threads` <= 0 means one per core.
  explicit CpuContext(int num_threads = 0);
  ~CpuContext() override;
  Place place() const override { return Place::CPU(); }
  int num_threads() const { return num_threads_; }
  /// oneDNN's engine and stream, created on first use.
  OneDnnHandles& onednn();

 private:
  int num_threads_;
  std::unique_ptr<OneDnnHandles> onednn_;
};

/// Chunks per thread ParallelFor cuts large loops into, so a thread slowed by another process hands
/// part of its share to the others.
inline constexpr int64_t kChunksPerThread = 4;

/// Runs fn(begin, end) over [0, n): in one piece when n < 2 * grain, else in chunks of at least
/// `grain` on the calling thread and its task pool (RunTasks). An fn(begin, end, slot) is also given
/// the running thread's slot in [0, LoopThreads()), for per-thread scratch.
template <class F>
void ParallelFor(int64_t n, int64_t grain, F&& fn) {
  auto run = [&](int64_t b, int64_t e, int slot) {
    if constexpr (std::is_invocable_v<F&, int64_t, int64_t, int>)
      fn(b, e, slot);
    else
      fn(b, e);
  };
  if (n <= 0) return;
  const int threads = LoopThreads();
  if (n < 2 * grain || threads <= 1) {
    run(int64_t{0}, n, 0);
    return;
  }
  const int64_t chunks = std::min(n / std::max<int64_t>(grain, 1), kChunksPerThread * threads);
  const int64_t size = (n + chunks - 1) / chunks;
  RunTasks((n + size - 1) / size, threads,
           [&](int64_t c, int slot) { run(c * size, std::min(n, (c + 1) * size), slot); });
}

}  // namespace paddlec::runtime
