// The CUDA device context and the caching device allocator.
#include "runtime/cuda/cuda_context.h"

#include <bit>

namespace paddlec::runtime::cuda {

Error CudaError(cudaError_t e, const char* what) {
  return MakeError(e == cudaErrorMemoryAllocation ? ErrorCode::kResourceExhausted : ErrorCode::kRuntime,
                   "CUDA call {} failed: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

Error CublasError(cublasStatus_t s, const char* what) {
  return MakeError(ErrorCode::kRuntime, "cuBLAS call {} failed: {}", what, cublasGetStatusString(s));
}

Error CudnnError(cudnnStatus_t s, const char* what) {
  return MakeError(ErrorCode::kRuntime, "cuDNN call {} failed: {}", what, cudnnGetErrorString(s));
}

// ---- Allocator ------------------------------------------------------------------------------

std::shared_ptr<CudaCachingAllocator> CudaCachingAllocator::Create(int device) {
  return std::shared_ptr<CudaCachingAllocator>(new CudaCachingAllocator(device));
}

CudaCachingAllocator::~CudaCachingAllocator() { ReleaseCache(); }

StatusOr<void*> CudaCachingAllocator::Allocate(size_t bytes) {
  size_t bin = cache_.Bin(bytes);
  if (void* p = cache_.Take(bin)) return p;
  cudaSetDevice(device_);
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bin);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the error this failure left behind
    ReleaseCache();
    e = cudaMalloc(&p, bin);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    AllocatorStats s = stats();
    return MakeError(ErrorCode::kResourceExhausted,
                     "out of GPU memory allocating {} bytes on gpu:{} ({} bytes in use, peak {})", bin, device_,
                     s.bytes_in_use, s.peak_bytes_in_use);
  }
  cache_.NoteSystemAlloc(bin);
  return p;
}

void CudaCachingAllocator::Free(void* ptr, size_t bytes) { cache_.Give(ptr, cache_.Bin(bytes)); }

AllocatorStats CudaCachingAllocator::stats() const { return cache_.stats(); }

void CudaCachingAllocator::ReleaseCache() {
  auto blocks = cache_.Drain();
  if (blocks.empty()) return;
  cudaSetDevice(device_);
  cudaDeviceSynchronize();  // queued work may still use the blocks
  for (auto [p, bin] : blocks) cudaFree(p);
}

// ---- Context --------------------------------------------------------------------------------

StatusOr<std::unique_ptr<CudaContext>> CudaContext::Create(int device) {
  std::unique_ptr<CudaContext> c(new CudaContext(device));
  PC_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  PC_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&c->stream_, cudaStreamNonBlocking));
  PC_CUBLAS_RETURN_IF_ERROR(cublasCreate(&c->cublas_));
  PC_CUBLAS_RETURN_IF_ERROR(cublasSetStream(c->cublas_, c->stream_));
  PC_CUDNN_RETURN_IF_ERROR(cudnnCreate(&c->cudnn_));
  PC_CUDNN_RETURN_IF_ERROR(cudnnSetStream(c->cudnn_, c->stream_));
  c->allocator_ = CudaCachingAllocator::Create(device);
  return c;
}

CudaContext::~CudaContext() {
  if (comm_stream_) cudaStreamSynchronize(comm_stream_);
  if (stream_) cudaStreamSynchronize(stream_);
  comm_holds_.clear();
  if (compute_done_) cudaEventDestroy(compute_done_);
  if (comm_done_) cudaEventDestroy(comm_done_);
  if (comm_stream_) cudaStreamDestroy(comm_stream_);
  workspace_.reset();
  if (cudnn_) cudnnDestroy(cudnn_);
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
}

Status CudaContext::Synchronize() {
  if (comm_stream_) PC_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(comm_stream_));
  PC_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return Status::OK();
}

StatusOr<cudaStream_t> CudaContext::CommStreamAfterCompute(std::shared_ptr<void> hold) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  PC_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream_, &capture));
  if (capture != cudaStreamCaptureStatusNone)
    return MakeError(ErrorCode::kUnimplemented,
                     "a collective on the communication stream (use_calc_stream=false) cannot be recorded in a CUDA "
                     "graph")
        .Note("run without --cuda-graph, or set use_calc_stream=true");
  if (comm_stream_ == nullptr) {
    PC_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    // Timing off: these events only order the two streams, and are then the cheapest kind.
    PC_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
    PC_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&comm_done_, cudaEventDisableTiming));
    PC_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
  }
  // A wait takes the event's latest record at the time of the call, so one event serves every
  // collective: re-recording it later does not move an earlier wait.
  PC_CUDA_RETURN_IF_ERROR(cudaEventRecord(compute_done_, stream_));
  PC_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(comm_stream_, compute_done_, 0));
  comm_pending_ = true;
  if (hold) comm_holds_.push_back(std::move(hold));
  return comm_stream_;
}

Status CudaContext::JoinCommStream() {
  if (!comm_pending_) return Status::OK();
  PC_CUDA_RETURN_IF_ERROR(cudaEventRecord(comm_done_, comm_stream_));
  PC_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, comm_done_, 0));
  comm_pending_ = false;
  // From here on the allocator's compute-stream order covers the collectives' memory.
  comm_holds_.clear();
  return Status::OK();
}

Status CudaContext::CopyFromHost(const Tensor& host, Tensor& device) {
  device.Set(host.dtype(), host.dims());
  PC_RETURN_IF_ERROR(device.Allocate(allocator()));
  // Pageable host memory: the call returns once the source has been staged, so the caller may reuse
  // it at once and the host never waits for the transfer itself.
  if (host.nbytes() > 0)
    PC_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(device.raw_data(), host.raw_data(), host.nbytes(), cudaMemcpyHostToDevice, stream_));
  device.mutable_lod() = host.lod();
  if (host.is_selected_rows()) device.SetSelectedRows(host.rows(), host.height());
  else device.ClearSelectedRows();
  return Status::OK();
}

Status CudaContext::CopyToHost(const Tensor& device, Tensor& host, Allocator& host_alloc) {
  host.Set(device.dtype(), device.dims());
  PC_RETURN_IF_ERROR(host.Allocate(host_alloc));
  if (device.nbytes() > 0) {
    cudaMemcpyKind kind = device.place().is_cpu() ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost;
    PC_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host.raw_data(), device.raw_data(), device.nbytes(), kind, stream_));
    PC_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  }
  host.mutable_lod() = device.lod();
  if (device.is_selected_rows()) host.SetSelectedRows(device.rows(), device.height());
  else host.ClearSelectedRows();
  return Status::OK();
}

namespace {

class CudaGraph final : public CapturedWork {
 public:
  CudaGraph(cudaGraph_t graph, cudaGraphExec_t exec, cudaStream_t stream) : graph_(graph), exec_(exec), stream_(stream) {}
  ~CudaGraph() override {
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  Status Launch() override {
    PC_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, stream_));
    return Status::OK();
  }

 private:
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

}  // namespace

Status CudaContext::BeginCapture() {
  // Relaxed: host code between the kernel launches (allocator bookkeeping, cuBLAS/cuDNN calls) may
  // use CUDA calls that are not captured without breaking the capture.
  PC_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
  return Status::OK();
}

StatusOr<std::unique_ptr<CapturedWork>> CudaContext::EndCapture() {
  cudaGraph_t graph = nullptr;
  PC_CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  if (e != cudaSuccess) {
    cudaGraphDestroy(graph);
    return CudaError(e, "cudaGraphInstantiate");
  }
  return std::unique_ptr<CapturedWork>(new CudaGraph(graph, exec, stream_));
}

StatusOr<void*> CudaContext::Workspace(size_t bytes) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  if (!workspace_ || workspace_->size() < bytes) {
    workspace_.reset();
    PC_ASSIGN_OR_RETURN(workspace_, AllocateBuffer(allocator(), bytes));
  }
  return workspace_->data();
}

}  // namespace paddlec::runtime::cuda
