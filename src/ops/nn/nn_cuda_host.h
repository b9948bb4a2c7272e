// Host-side pieces shared by the nn family's CUDA kernel classes (the *_cuda.cc files, built into
// libpaddlec_cuda.so only): per-concept registration entry points and scratch-memory helpers.
#pragma once

#include <memory>

#include "common/cuda_host.h"

namespace paddlec::ops::nn {

Status RegisterConvCudaKernels(OpRegistry& r);       // conv_cuda.cc: conv2d, depthwise_conv2d, conv2d_transpose
                                                     // (and their grads), fused_conv2d_bn_act
Status RegisterPoolCudaKernels(OpRegistry& r);       // pool_cuda.cc: pool2d(_grad)
Status RegisterNormCudaKernels(OpRegistry& r);       // norm_cuda.cc: batch_norm(_grad), layer_norm(_grad)
Status RegisterDropoutCudaKernels(OpRegistry& r);    // dropout_cuda.cc: dropout(_grad)
Status RegisterEmbeddingCudaKernels(OpRegistry& r);  // embedding_cuda.cc: lookup_table_v2(_grad)
Status RegisterPadCudaKernels(OpRegistry& r);        // pad_cuda.cc: pad3d(_grad)
Status RegisterInterpCudaKernels(OpRegistry& r);     // interp_cuda.cc: nearest/bilinear_interp_v2(_grad)
Status RegisterRnnCudaKernels(OpRegistry& r);        // rnn_cuda.cc: rnn(_grad)

/// Device scratch that a kernel object keeps between runs: grown (from the context's caching
/// allocator) only when a run needs more than it holds, so the steady state allocates nothing.
class DeviceScratch {
 public:
  StatusOr<void*> Get(runtime::cuda::CudaContext& cc, size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (!buffer_ || buffer_->size() < bytes) {
      buffer_.reset();  // freed in stream order: the allocator hands it out again only to later work
      PC_ASSIGN_OR_RETURN(buffer_, runtime::AllocateBuffer(cc.allocator(), bytes));
    }
    return buffer_->data();
  }
  template <class T>
  StatusOr<T*> Get(runtime::cuda::CudaContext& cc, int64_t elements) {
    PC_ASSIGN_OR_RETURN(void* p, Get(cc, static_cast<size_t>(elements < 0 ? 0 : elements) * sizeof(T)));
    return static_cast<T*>(p);
  }

 private:
  std::shared_ptr<runtime::Buffer> buffer_;
};

/// Zeroes a tensor on the context's stream (nothing for null or empty tensors).
inline Status ZeroFill(runtime::cuda::CudaContext& cc, Tensor* t) {
  if (t != nullptr && t->nbytes() > 0)
    PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(t->raw_data(), 0, t->nbytes(), cc.stream()));
  return Status::OK();
}

/// Copies `bytes` device to device on the context's stream (nothing when src == dst).
inline Status CopyDevice(runtime::cuda::CudaContext& cc, void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes > 0)
    PC_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cc.stream()));
  return Status::OK();
}

}  // namespace paddlec::ops::nn
