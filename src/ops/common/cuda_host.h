// Host-side helpers for the CUDA kernels of the op families (the <family>_cuda.cc files, compiled
// into libpaddlec_cuda.so only): the context and launcher errors as Status.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "common/host_values.h"
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

/// The elements of a small device tensor (sizes, paddings, scales that steer an op), converted to To on
/// the host (see ValuesAs): copied on the context's stream, which is then synchronized, so a kernel
/// calling this cannot be replayed from a CUDA graph.
template <class To>
StatusOr<std::vector<To>> DeviceValues(CudaContext& cc, const Tensor& t, std::string_view what) {
  std::vector<std::byte> bytes(t.nbytes());
  if (!bytes.empty()) {
    PC_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(bytes.data(), t.raw_data(), bytes.size(), cudaMemcpyDeviceToHost, cc.stream()));
    PC_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cc.stream()));
  }
  return ValuesAs<To>(t.dtype(), bytes.data(), t.numel(), what);
}

/// Registers `Factory<float>` and `Factory<double>` on the GPU.
#define PC_CUDA_FLOAT_KERNELS(registry, op, Factory)                                                   \
  do {                                                                                                 \
    PC_RETURN_IF_ERROR((registry).AddKernel(op, DeviceType::kCUDA, DType::kFloat32, Factory<float>())); \
    PC_RETURN_IF_ERROR((registry).AddKernel(op, DeviceType::kCUDA, DType::kFloat64, Factory<double>())); \
  } while (0)

}  // namespace paddlec::ops::cuda
