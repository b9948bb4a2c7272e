// GPU failures told apart from the CUDA runtime's error and what the host sees (no GPU is needed:
// the probes are written out).
#include "gpu_diagnosis.h"

#include <doctest/doctest.h>

namespace paddlec::exec {
namespace {

std::string Text(const Error& e) {
  std::string s = e.message();
  for (const auto& n : e.notes()) s += "\nnote: " + n;
  return s;
}

TEST_CASE("the backend's reason string is split into the error's name, text and runtime version") {
  GpuProbe p = ProbeGpu(
      "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version "
      "(runtime 13000)");
  CHECK(p.error_name == "cudaErrorInsufficientDriver");
  CHECK(p.error_text == "CUDA driver version is insufficient for CUDA runtime version");
  CHECK(p.runtime_version == 13000);
  CHECK(CudaVersionString(13000) == "13.0");
  CHECK(CudaVersionString(12040) == "12.4");
  GpuProbe bare = ProbeGpu("something odd");
  CHECK(bare.error_name.empty());
  CHECK(bare.error_text == "something odd");
}

TEST_CASE("driver insufficient without a driver library is 'no GPU found', with one it is 'driver too old'") {
  GpuProbe p{.error_name = "cudaErrorInsufficientDriver",
             .error_text = "CUDA driver version is insufficient for CUDA runtime version",
             .runtime_version = 13000};
  CHECK(Text(DiagnoseGpu(p)) ==
        "no GPU found: no NVIDIA driver is installed on this machine\n"
        "note: there is no libcuda.so.1 and no /dev/nvidiactl\nnote: run with --device=cpu");
  p.driver_loaded = true;
  p.device_nodes = true;
  p.driver_version = 12040;
  CHECK(Text(DiagnoseGpu(p)) ==
        "the NVIDIA driver is too old for this build of paddlec\n"
        "note: the driver supports CUDA up to 12.4; paddlec's CUDA runtime is 13.0\n"
        "note: update the NVIDIA driver\nnote: run with --device=cpu");
}

TEST_CASE("other CUDA errors get their own messages") {
  auto first_line = [](const char* name) {
    GpuProbe p{.error_name = name, .error_text = "text", .driver_loaded = true, .device_nodes = true};
    return DiagnoseGpu(p).message();
  };
  CHECK(first_line("cudaErrorNoDevice") == "no GPU found: the NVIDIA driver sees no CUDA device");
  CHECK(first_line("cudaErrorSystemDriverMismatch") ==
        "the NVIDIA driver does not match its kernel module (cudaErrorSystemDriverMismatch: text)");
  CHECK(first_line("cudaErrorDevicesUnavailable") == "every GPU is busy or in exclusive use by another process");
  CHECK(first_line("cudaErrorLaunchFailure") == "no usable CUDA GPU on this machine: cudaErrorLaunchFailure: text");
  CHECK(DiagnoseGpu(GpuProbe{.error_name = "cudaErrorNoDevice"}).code() == ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace paddlec::exec
