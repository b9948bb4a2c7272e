// libpaddlec_cuda.so's entry point: device discovery, context creation and kernel registration,
// behind the C table of backend_api.h.
#include <cuda_runtime.h>

#include <cstdio>

#include "exec/cuda/backend_api.h"
#include "paddlec/ops/op_registry.h"
#include "runtime/cuda/cuda_context.h"

namespace paddlec::ops {
#define PADDLEC_OP_FAMILY(Family) Status Register##Family##CudaKernels(OpRegistry& registry);
#include "ops/ops.def"
#undef PADDLEC_OP_FAMILY
}  // namespace paddlec::ops

namespace paddlec::exec::cuda {
namespace {

using runtime::DeviceContext;
using runtime::cuda::CudaContext;

void Copy(const std::string& s, char* why, int len) {
  if (why != nullptr && len > 0) std::snprintf(why, static_cast<size_t>(len), "%s", s.c_str());
}

int DeviceCount(char* why, int len) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    // The host tells "no driver" from "driver too old" by the error's name (exec/gpu_diagnosis.h).
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    Copy(std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e) + " (runtime " + std::to_string(runtime) + ")",
         why, len);
    cudaGetLastError();
    return -1;
  }
  return n;
}

int RegisterKernels(ops::OpRegistry* registry, char* why, int len) {
  Status st;
#define PADDLEC_OP_FAMILY(Family) \
  if (st.ok()) st = ops::Register##Family##CudaKernels(*registry);
#include "ops/ops.def"
#undef PADDLEC_OP_FAMILY
  if (!st.ok()) {
    Copy(st.error().message(), why, len);
    return -1;
  }
  return 0;
}

DeviceContext* CreateContext(int device, char* why, int len) {
  auto c = CudaContext::Create(device);
  if (!c.ok()) {
    Copy(c.error().message(), why, len);
    return nullptr;
  }
  return c->release();
}

const BackendApi kApi = {kAbiVersion, {sizeof(DeviceContext), sizeof(ops::OpRegistry)}, DeviceCount, RegisterKernels,
                         CreateContext};

}  // namespace
}  // namespace paddlec::exec::cuda

extern "C" __attribute__((visibility("default"))) const paddlec::exec::cuda::BackendApi* paddlec_cuda_backend() {
  return &paddlec::exec::cuda::kApi;
}
