// Tensor shape bookkeeping and allocation.
#include "paddlec/runtime/tensor.h"

namespace paddlec::runtime {

void Tensor::set_dims(const Dims& d) {
  dims_ = d;
  int64_t n = d.Numel();
  numel_ = n < 0 ? 0 : n;
}

Status Tensor::Allocate(Allocator& alloc) {
  PC_RETURN_IF_ERROR(CheckDims(dims_));
  size_t need = nbytes();
  // Reuse the buffer when it fits, nobody else shares it, and it is ours (external memory, such as a
  // NumPy array fed without a copy, is never written as an output).
  if (buffer_ && buffer_->owned() && buffer_.use_count() == 1 && buffer_->place() == alloc.place() &&
      buffer_->size() >= offset_ + need) {
    buffer_->Touch();  // memory is allocated to be written
    return Status::OK();
  }
  PC_ASSIGN_OR_RETURN(buffer_, AllocateBuffer(alloc, need == 0 ? 1 : need));
  offset_ = 0;
  return Status::OK();
}

}  // namespace paddlec::runtime
