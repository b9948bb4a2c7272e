// The nn family's CUDA kernels: registration of every concept's kernels (conv_cuda.cc, pool_cuda.cc,
// norm_cuda.cc, dropout_cuda.cc, embedding_cuda.cc, pad_cuda.cc,
// interp_cuda.cc, rnn_cuda.cc; device code in the matching .cu files).
#include "nn/nn_cuda_host.h"

namespace paddlec::ops {

Status RegisterNnCudaKernels(OpRegistry& registry) {
  PC_RETURN_IF_ERROR(nn::RegisterConvCudaKernels(registry));
  PC_RETURN_IF_ERROR(nn::RegisterPoolCudaKernels(registry));
  PC_RETURN_IF_ERROR(nn::RegisterNormCudaKernels(registry));
  PC_RETURN_IF_ERROR(nn::RegisterDropoutCudaKernels(registry));
  PC_RETURN_IF_ERROR(nn::RegisterEmbeddingCudaKernels(registry));
  PC_RETURN_IF_ERROR(nn::RegisterPadCudaKernels(registry));
  PC_RETURN_IF_ERROR(nn::RegisterInterpCudaKernels(registry));
  return nn::RegisterRnnCudaKernels(registry);
}

}  // namespace paddlec::ops
