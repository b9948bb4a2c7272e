// The CUDA backend's kernel registration, checked on the host: libpaddlec_cuda.so loads and
// registers without a GPU (registration makes no CUDA calls), so a machine without one still tests
// that every GPU twin is registered, once, for the dtypes its CPU kernel serves.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "exec/cuda/backend_api.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::exec {
namespace {

/// The backend's entry table, or null (with a message) when this build has no CUDA backend.
const cuda::BackendApi* LoadApi() {
  const std::string path = std::string(PADDLEC_BINARY_DIR) + "/libpaddlec_cuda.so";
  if (!std::filesystem::exists(path)) {
    MESSAGE("CUDA registration test skipped: this build has no libpaddlec_cuda.so");
    return nullptr;
  }
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open: kernels point into it
  REQUIRE_MESSAGE(handle != nullptr, ::dlerror());
  using Entry = const cuda::BackendApi* (*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, "paddlec_cuda_backend"));
  REQUIRE_MESSAGE(static_cast<bool>(entry), "libpaddlec_cuda.so exports no paddlec_cuda_backend");
  return entry();
}

TEST_CASE("the CUDA backend registers a GPU twin for each CPU kernel of the model-zoo ops") {
  const cuda::BackendApi* api = LoadApi();
  if (api == nullptr) return;
  ops::OpRegistry r;
  ops::RegisterAllOps(r);
  char why[512] = {};
  // Fails on a duplicate registration or a kernel for an unknown op.
  REQUIRE_MESSAGE(api->register_kernels(&r, why, sizeof(why)) == 0, why);
  const char* zoo_ops[] = {"relu6",     "hard_swish", "hard_sigmoid", "swish",        "silu",          "elu",   "exp",
                           "log",       "pow",        "clip",         "squeeze2",     "unsqueeze2",    "shape", "slice",
                           "stack",     "gather",     "expand_v2",    "tile",         "arg_max",       "where", "equal",
                           "not_equal", "less_than",  "less_equal",   "greater_than", "greater_equal", "cumsum"};
  for (const char* type : zoo_ops) {
    for (const std::string& t : {std::string(type), std::string(type) + "_grad"}) {
      const ops::OpInfo* info = r.Find(t);
      if (info == nullptr) continue;  // ops without a gradient op
      CAPTURE(t);
      int cpu = 0;
      for (auto [device, dtype] : info->KernelKeys()) {
        if (device != DeviceType::kCPU) continue;
        ++cpu;
        CAPTURE(DTypeName(dtype));
        CHECK(info->FindKernel(DeviceType::kCUDA, dtype) != nullptr);
      }
      CHECK(cpu > 0);
    }
  }
}

/// Each of `types` has a CUDA kernel for every dtype it has a CPU kernel for; `cpu_dtypes` of those,
/// when not 0.
void CheckGpuTwins(std::initializer_list<const char*> types, int cpu_dtypes = 0) {
  const cuda::BackendApi* api = LoadApi();
  if (api == nullptr) return;
  ops::OpRegistry r;
  ops::RegisterAllOps(r);
  char why[512] = {};
  REQUIRE_MESSAGE(api->register_kernels(&r, why, sizeof(why)) == 0, why);
  for (const char* type : types) {
    CAPTURE(type);
    const ops::OpInfo* info = r.Find(type);
    REQUIRE(info != nullptr);
    int cpu = 0;
    for (auto [device, dtype] : info->KernelKeys()) {
      if (device != DeviceType::kCPU) continue;
      ++cpu;
      CAPTURE(DTypeName(dtype));
      CHECK(info->FindKernel(DeviceType::kCUDA, dtype) != nullptr);
    }
    if (cpu_dtypes != 0) CHECK(cpu == cpu_dtypes);
    CHECK(cpu > 0);
  }
}

TEST_CASE("the fused ops of -O1 and -O2 have GPU twins for each CPU dtype") {
  CheckGpuTwins({"fc", "fused_elemwise_activation", "fused_conv2d_bn_act"}, 2);  // float32 and float64
}

TEST_CASE("the data-parallel ops have GPU twins for each CPU dtype") {
  CheckGpuTwins({"c_allreduce_sum", "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod", "c_broadcast",
                 "c_sync_comm_stream", "c_sync_calc_stream", "coalesce_tensor", "sync_batch_norm",
                 "sync_batch_norm_grad"});
}

}  // namespace
}  // namespace paddlec::exec
