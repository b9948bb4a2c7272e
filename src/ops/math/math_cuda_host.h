// Host-side helpers shared by the math family's CUDA kernel classes (the *_cuda.cc files, built
// into libpaddlec_cuda.so only): kernel-owned device scratch and the registration entry points of
// the family's files.
#pragma once

#include <memory>

#include "common/cuda_host.h"
#include "math/math_cuda.h"
#include "math/math_cuda_plan.h"

namespace paddlec::ops {

/// Device memory a kernel object keeps between steps: allocated from the context's caching
/// allocator when a step needs more than the last, otherwise reused, so the steady state allocates
/// nothing. The kernel's work is queued on the context's one stream and the allocator reuses
/// blocks in stream order, so growing (freeing the old block) is safe while work is queued.
class DeviceScratch {
 public:
  StatusOr<void*> Get(runtime::Allocator& alloc, size_t bytes) {
    if (bytes == 0) return static_cast<void*>(nullptr);
    if (buffer_ == nullptr || buffer_->size() < bytes) {
      buffer_.reset();
      PC_ASSIGN_OR_RETURN(buffer_, runtime::AllocateBuffer(alloc, bytes));
    }
    return buffer_->data();
  }

 private:
  std::shared_ptr<runtime::Buffer> buffer_;
};

/// Bytes for a reduction plan's partial sums (accumulators are at most 8 bytes).
inline size_t PartialBytes(const cuda::ReducePlan& plan) { return static_cast<size_t>(plan.scratch_elems) * 8; }

Status RegisterElementwiseCudaKernels(OpRegistry& r);
Status RegisterMatmulCudaKernels(OpRegistry& r);
Status RegisterReduceCudaKernels(OpRegistry& r);
Status RegisterCosSimCudaKernels(OpRegistry& r);
Status RegisterExpandCudaKernels(OpRegistry& r);
Status RegisterCumsumCudaKernels(OpRegistry& r);
Status RegisterCompareCudaKernels(OpRegistry& r);
Status RegisterFusedElementwiseCudaKernels(OpRegistry& r);

}  // namespace paddlec::ops
