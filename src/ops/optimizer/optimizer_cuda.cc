// The optimizer family's CUDA kernels (to be written; registers none yet).
#include "common/cuda_host.h"

namespace paddlec::ops {

Status RegisterOptimizerCudaKernels(OpRegistry& registry) {
  (void)registry;
  return Status::OK();
}

}  // namespace paddlec::ops
