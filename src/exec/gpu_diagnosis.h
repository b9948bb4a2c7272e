// Why a GPU cannot be used, in the user's terms: no GPU, no driver, a driver too old for the CUDA
// runtime paddlec was built with, or a driver that does not match its kernel module. The CUDA
// runtime reports the first two as "CUDA driver version is insufficient", so the runtime's error
// alone cannot tell them apart; the probe adds what the host can see without CUDA's headers.
#pragma once

#include <string>

#include "paddlec/core/error.h"

namespace paddlec::exec {

/// What is known when the CUDA runtime failed to count the devices.
struct GpuProbe {
  std::string error_name;      // cudaGetErrorName: "cudaErrorInsufficientDriver", "cudaErrorNoDevice", ...
  std::string error_text;      // cudaGetErrorString
  int runtime_version = 0;     // cudaRuntimeGetVersion of the backend (13000 = CUDA 13.0); 0 if unknown
  bool driver_loaded = false;  // libcuda.so.1 (the driver's user-space library) can be loaded
  int driver_version = 0;      // its cuDriverGetVersion (12040 = CUDA 12.4); 0 if unknown
  bool device_nodes = false;   // /dev/nvidiactl exists (the kernel module is loaded)
};

/// The probe of this machine for a CUDA runtime error reported as "NAME: TEXT (runtime VERSION)"
/// by the backend (backend_api.h's device_count).
GpuProbe ProbeGpu(const std::string& backend_reason);

/// The error to show for a failed probe: "no GPU found", "the NVIDIA driver is too old", ...
Error DiagnoseGpu(const GpuProbe& probe);

/// "13.0" for 13000.
std::string CudaVersionString(int version);

}  // namespace paddlec::exec
