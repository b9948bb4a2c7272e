// The interface between the executor and libpaddlec_cuda.so, the CUDA backend it dlopens when a GPU
// place is first requested. A plain C table, so the loader needs nothing from CUDA's headers and a
// process that never asks for a GPU never loads CUDA's libraries (linking cuBLAS alone costs about
// 320 ms at every start, docs/performance.md).
//
// The backend is built from the same sources as the host, so C++ objects (DeviceContext, OpRegistry)
// cross the boundary; kAbiVersion guards against a stale library from another build.
#pragma once

#include <cstddef>

namespace paddlec::ops {
class OpRegistry;
}
namespace paddlec::runtime {
class DeviceContext;
}

namespace paddlec::exec::cuda {

/// Bumped whenever this table or a class that crosses it changes.
inline constexpr int kAbiVersion = 2;  // 2: DeviceContext::JoinPendingWork
/// sizeof checks catch the two sides being built from different headers.
struct AbiFingerprint {
  size_t device_context, op_registry;
};

struct BackendApi {
  int abi_version;
  AbiFingerprint fingerprint;
  /// Number of usable devices, or -1 with the reason in `why` (no driver, no device, ...).
  int (*device_count)(char* why, int why_len);
  /// Registers every CUDA kernel into `registry`; 0 on success, else -1 with `why`.
  int (*register_kernels)(paddlec::ops::OpRegistry* registry, char* why, int why_len);
  /// A new device context for `device` (owned by the caller), or nullptr with `why`.
  paddlec::runtime::DeviceContext* (*create_context)(int device, char* why, int why_len);
};

}  // namespace paddlec::exec::cuda

/// The one exported symbol of libpaddlec_cuda.so.
extern "C" const paddlec::exec::cuda::BackendApi* paddlec_cuda_backend();
