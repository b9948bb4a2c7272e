// The CUDA device context: one stream, cuBLAS and cuDNN handles bound to it, and the caching device
// allocator; what every CUDA kernel gets from KernelContext::device_as<CudaContext>().
//
// All of a context's work is queued on its compute stream, so kernels never synchronize the host;
// only CopyToHost (fetching a value) and Synchronize wait. The one exception is the communication
// stream, where the collectives that overlap computation run (c_allreduce_* with use_calc_stream =
// false): events order it after the compute stream's work it reads, and the compute stream after it
// at c_sync_comm_stream, before any other collective, and at the end of every run (JoinPendingWork).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "paddlec/runtime/device_context.h"
#include "paddlec/runtime/tensor.h"

namespace paddlec::runtime::cuda {

/// "cudaErrorMemoryAllocation: out of memory" as a paddlec error.
Error CudaError(cudaError_t e, const char* what);
Error CublasError(cublasStatus_t s, const char* what);
Error CudnnError(cudnnStatus_t s, const char* what);

#define PC_CUDA_RETURN_IF_ERROR(expr)                                              \
  do {                                                                             \
    cudaError_t pc_cuda_e_ = (expr);                                               \
    if (pc_cuda_e_ != cudaSuccess) return ::paddlec::runtime::cuda::CudaError(pc_cuda_e_, #expr); \
  } while (0)
#define PC_CUBLAS_RETURN_IF_ERROR(expr)                                            \
  do {                                                                             \
    cublasStatus_t pc_cublas_s_ = (expr);                                          \
    if (pc_cublas_s_ != CUBLAS_STATUS_SUCCESS) return ::paddlec::runtime::cuda::CublasError(pc_cublas_s_, #expr); \
  } while (0)
#define PC_CUDNN_RETURN_IF_ERROR(expr)                                             \
  do {                                                                             \
    cudnnStatus_t pc_cudnn_s_ = (expr);                                            \
    if (pc_cudnn_s_ != CUDNN_STATUS_SUCCESS) return ::paddlec::runtime::cuda::CudnnError(pc_cudnn_s_, #expr); \
  } while (0)

/// Device memory in size-binned free lists: freed blocks are kept and handed out again, so a
/// training loop calls cudaMalloc only during its first step. Blocks are reused in the compute
/// stream's order, which makes reuse safe without events; memory the communication stream uses is
/// held by the context until the compute stream has been ordered after it (CommStreamAfterCompute).
class CudaCachingAllocator final : public Allocator {
 public:
  static std::shared_ptr<CudaCachingAllocator> Create(int device);
  ~CudaCachingAllocator() override;
  Place place() const override { return Place::CUDA(device_); }
  StatusOr<void*> Allocate(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  AllocatorStats stats() const override;
  void ReleaseCache() override;

 private:
  explicit CudaCachingAllocator(int device) : device_(device), cache_(512, SIZE_MAX) {}
  int device_;
  BlockCache cache_;  // never returns blocks to the driver on its own: cudaFree synchronizes
};

class CudaContext final : public DeviceContext {
 public:
  static StatusOr<std::unique_ptr<CudaContext>> Create(int device);
  ~CudaContext() override;

  Place place() const override { return Place::CUDA(device_); }
  Status Synchronize() override;
  Status CopyFromHost(const Tensor& host, Tensor& device) override;
  Status CopyToHost(const Tensor& device, Tensor& host, Allocator& host_alloc) override;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  /// Scratch device memory of at least `bytes` (cuDNN workspaces), grown when needed and kept.
  StatusOr<void*> Workspace(size_t bytes);
  Status BeginCapture() override;
  StatusOr<std::unique_ptr<CapturedWork>> EndCapture() override;

  /// The communication stream, for a collective that overlaps the computation after it: created on
  /// the first call and ordered (an event) after all work queued on the compute stream so far, so
  /// the collective sees its input's final value. `hold` (the memory the collective uses) is kept
  /// until JoinCommStream: freed earlier, the caching allocator could hand it to compute-stream work
  /// while the collective still uses it. Refused while the compute stream is being recorded as a
  /// CUDA graph (a replay would not wait for the collective's peers).
  StatusOr<cudaStream_t> CommStreamAfterCompute(std::shared_ptr<void> hold);
  /// Orders the compute stream (an event; the host does not wait) after all work queued on the
  /// communication stream, and lets go of the memory held for it. Nothing when none is pending.
  Status JoinCommStream();
  /// Work was queued on the communication stream and the compute stream is not yet ordered after it.
  bool comm_pending() const { return comm_pending_; }
  Status JoinPendingWork() override { return JoinCommStream(); }

 private:
  explicit CudaContext(int device) : device_(device) {}
  int device_;
  cudaStream_t stream_ = nullptr;
  // The communication stream and the events ordering it with stream_, created on first use.
  cudaStream_t comm_stream_ = nullptr;
  cudaEvent_t compute_done_ = nullptr, comm_done_ = nullptr;
  bool comm_pending_ = false;
  std::vector<std::shared_ptr<void>> comm_holds_;  // memory the queued collectives use
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  std::shared_ptr<Buffer> workspace_;
};

}  // namespace paddlec::runtime::cuda
