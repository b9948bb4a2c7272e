// Host-side helpers for the CUDA kernels of the op families (the <family>_cuda.cc files, compiled
// into libpaddlec_cuda.so only): the context and launcher errors as Status.
#pragma once

#include <cuda_runtime.h>

#include "paddlec/ops/kernel.h"
#include "paddlec/ops/op_registry.h"
#include "runtime/cuda/cuda_context.h"

namespace paddlec::ops::cuda {

using runtime::cuda::CudaContext;

inline CudaContext& Cuda(KernelContext& ctx) { return ctx.device_as<CudaContext>(); }
inline cudaStream_t Stream(KernelContext& ctx) { return Cuda(ctx).stream(); }

/// A launcher's result as a Status naming the kernel.
inline Status Launched(cudaError_t e, const char* kernel) {
  return e == cudaSuccess ? Status::OK() : runtime::cuda::CudaError(e, kernel);
}

/// Registers `Factory<float>` and `Factory<double>` on the GPU.
#define PC_CUDA_FLOAT_KERNELS(registry, op, Factory)                                                   \
  do {                                                                                                 \
    PC_RETURN_IF_ERROR((registry).AddKernel(op, DeviceType::kCUDA, DType::kFloat32, Factory<float>())); \
    PC_RETURN_IF_ERROR((registry).AddKernel(op, DeviceType::kCUDA, DType::kFloat64, Factory<double>())); \
  } while (0)

}  // namespace paddlec::ops::cuda
