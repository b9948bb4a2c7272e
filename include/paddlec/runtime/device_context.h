// Per-device execution resources handed to every kernel: the allocator and, on the CPU, the
// intra-op thread count; the CUDA context (stream, cuBLAS/cuDNN handles) lives in the CUDA backend.
//
// There is one threading runtime on the CPU, OpenMP, because oneDNN (Debian's build) uses it:
// two thread pools spinning against each other on two cores ran 3x slower (machine.md, pitfall C).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "paddlec/core/place.h"
#include "paddlec/runtime/allocator.h"

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

/// Runs fn(begin, end) over [0, n) on the OpenMP pool, in one piece when n < 2 * grain.
template <class F>
void ParallelFor(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  if (n < 2 * grain) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    int nt = omp_get_num_threads();
    int id = omp_get_thread_num();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = id * chunk, e = std::min<int64_t>(n, b + chunk);
    if (b < e) fn(b, e);
  }
}

}  // namespace paddlec::runtime
