// The random family's CUDA kernels (to be written; registers none yet).
#include "common/cuda_host.h"

namespace paddlec::ops {

Status RegisterRandomCudaKernels(OpRegistry& registry) {
  (void)registry;
  return Status::OK();
}

}  // namespace paddlec::ops
