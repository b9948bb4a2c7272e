// Telling GPU failures apart (see gpu_diagnosis.h).
#include "gpu_diagnosis.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

namespace paddlec::exec {

std::string CudaVersionString(int version) { return fmt::format("{}.{}", version / 1000, version % 1000 / 10); }

GpuProbe ProbeGpu(const std::string& reason) {
  GpuProbe p;
  // The backend writes "cudaErrorX: text (runtime 13000)".
  size_t colon = reason.find(": ");
  p.error_name = colon == std::string::npos ? "" : reason.substr(0, colon);
  std::string rest = colon == std::string::npos ? reason : reason.substr(colon + 2);
  if (size_t r = rest.rfind(" (runtime "); r != std::string::npos) {
    p.runtime_version = std::atoi(rest.c_str() + r + 10);
    rest.resize(r);
  }
  p.error_text = rest;
  if (void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    p.driver_loaded = true;
    using GetVersion = int (*)(int*);
    if (auto f = reinterpret_cast<GetVersion>(::dlsym(h, "cuDriverGetVersion"));
        f != nullptr && f(&p.driver_version) != 0)
      p.driver_version = 0;
    ::dlclose(h);
  }
  p.device_nodes = ::access("/dev/nvidiactl", F_OK) == 0;
  return p;
}

Error DiagnoseGpu(const GpuProbe& p) {
  const std::string cause = p.error_name.empty() ? p.error_text : p.error_name + ": " + p.error_text;
  auto cpu = [](Error e) { return e.Advise("run with --device=cpu", "run on the CPU: Executor('cpu')"); };
  if (p.error_name == "cudaErrorNoDevice")
    return cpu(MakeError(ErrorCode::kUnavailable, "no GPU found: the NVIDIA driver sees no CUDA device"));
  if (p.error_name == "cudaErrorInsufficientDriver" || p.error_name == "cudaErrorInitializationError") {
    // Without libcuda.so.1 the runtime says "driver insufficient" although there is no driver at all.
    if (!p.driver_loaded)
      return cpu(MakeError(ErrorCode::kUnavailable, "no GPU found: no NVIDIA driver is installed on this machine")
                     .Note(p.device_nodes ? "/dev/nvidiactl exists, but libcuda.so.1 cannot be loaded"
                                          : "there is no libcuda.so.1 and no /dev/nvidiactl"));
    if (p.error_name == "cudaErrorInsufficientDriver") {
      Error e = MakeError(ErrorCode::kUnavailable, "the NVIDIA driver is too old for this build of paddlec");
      if (p.driver_version > 0 && p.runtime_version > 0)
        e.Note(fmt::format("the driver supports CUDA up to {}; paddlec's CUDA runtime is {}",
                           CudaVersionString(p.driver_version), CudaVersionString(p.runtime_version)));
      return cpu(e.Note("update the NVIDIA driver"));
    }
  }
  if (p.error_name == "cudaErrorSystemDriverMismatch")
    return cpu(MakeError(ErrorCode::kUnavailable, "the NVIDIA driver does not match its kernel module ({})", cause)
                   .Note("reboot, or reinstall the driver so both are the same version"));
  if (p.error_name == "cudaErrorDevicesUnavailable")
    return cpu(MakeError(ErrorCode::kUnavailable, "every GPU is busy or in exclusive use by another process"));
  if (p.error_name == "cudaErrorCompatNotSupportedOnDevice")
    return cpu(MakeError(ErrorCode::kUnavailable, "the CUDA forward-compatibility package does not support this GPU")
                   .Note("update the NVIDIA driver instead"));
  return cpu(MakeError(ErrorCode::kUnavailable, "no usable CUDA GPU on this machine: {}", cause));
}

}  // namespace paddlec::exec
