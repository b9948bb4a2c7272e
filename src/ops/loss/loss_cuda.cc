// The loss family's CUDA kernels (to be written; registers none yet).
#include "common/cuda_host.h"

namespace paddlec::ops {

Status RegisterLossCudaKernels(OpRegistry& registry) {
  (void)registry;
  return Status::OK();
}

}  // namespace paddlec::ops
