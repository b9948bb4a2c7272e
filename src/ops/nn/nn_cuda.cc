// The nn family's CUDA kernels: registration of every concept's kernels (conv_cuda.cc, pool_cuda.cc,
// norm_cuda.cc, dropout_cuda.cc, embedding_cuda.cc; device code in the matching .cu files).
#include "nn/nn_cuda_host.h"

namespace paddlec::ops {

Status RegisterNnCudaKernels(OpRegistry& registry) {
  PC_RETURN_IF_ERROR(nn::RegisterConvCudaKernels(registry));
  PC_RETURN_IF_ERROR(nn::RegisterPoolCudaKernels(registry));
  PC_RETURN_IF_ERROR(nn::RegisterNormCudaKernels(registry));
  PC_RETURN_IF_ERROR(nn::RegisterDropoutCudaKernels(registry));
  return nn::RegisterEmbeddingCudaKernels(registry);
}

}  // namespace paddlec::ops
