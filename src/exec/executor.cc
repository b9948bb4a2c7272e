// Executor and device-context creation (the CUDA backend is dlopened on first use).
#include "paddlec/exec/executor.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <string>
#include <vector>

#include "exec/cuda/backend_api.h"
#include "gpu_diagnosis.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/runtime/threads.h"

namespace paddlec::exec {
namespace {

/// The directory of the binary this code is linked into (the paddlec executable, or the Python
/// module), where the CUDA backend library is installed beside it.
std::string ThisBinaryDir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&ThisBinaryDir), &info) == 0 || info.dli_fname == nullptr) return ".";
  std::string path = info.dli_fname;
  if (path.find('/') == std::string::npos) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n > 0) path.assign(buf, static_cast<size_t>(n));
  }
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// The loaded backend, or why there is none. Loaded once per process; kernels are registered once.
struct Backend {
  const cuda::BackendApi* api = nullptr;
  Status status;
};

const Backend& LoadBackend() {
  static const Backend backend = []() -> Backend {
    std::string_view module = PADDLEC_CUDA_MODULE_NAME;
    if (module.empty())
      return {nullptr, MakeError(ErrorCode::kUnavailable, "this paddlec was built without CUDA support")
                           .Note("rebuild with -DPADDLEC_WITH_CUDA=ON on a machine with the CUDA toolkit (nvcc)")};
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("PADDLEC_CUDA_LIBRARY")) candidates.emplace_back(env);
    candidates.push_back(ThisBinaryDir() + "/" + std::string(module));
    candidates.emplace_back(module);
    void* handle = nullptr;
    std::string why;
    for (const auto& c : candidates) {
      handle = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) break;
      why = ::dlerror();
    }
    if (handle == nullptr)
      return {nullptr, MakeError(ErrorCode::kUnavailable, "cannot load the CUDA backend {}: {}", module, why)};
    using Entry = const cuda::BackendApi* (*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(handle, "paddlec_cuda_backend"));
    if (entry == nullptr)
      return {nullptr, MakeError(ErrorCode::kUnavailable, "the CUDA backend is incomplete: {}", ::dlerror())};
    const cuda::BackendApi* api = entry();
    if (api->abi_version != cuda::kAbiVersion || api->fingerprint.device_context != sizeof(DeviceContext) ||
        api->fingerprint.op_registry != sizeof(ops::OpRegistry))
      return {nullptr, MakeError(ErrorCode::kUnavailable, "the CUDA backend was built from other sources than paddlec")
                           .Note("rebuild both from the same tree")};
    char reason[512] = {};
    int n = api->device_count(reason, sizeof(reason));
    if (n < 0) return {nullptr, DiagnoseGpu(ProbeGpu(reason))};
    if (n == 0)
      return {nullptr, MakeError(ErrorCode::kUnavailable, "no GPU found on this machine")
                           .Advise("run with --device=cpu", "run on the CPU: Executor('cpu')")};
    if (api->register_kernels(&ops::MutableGlobalOpRegistry(), reason, sizeof(reason)) != 0)
      return {nullptr, MakeError(ErrorCode::kInternal, "registering the CUDA kernels failed: {}", reason)};
    return {api, Status::OK()};
  }();
  return backend;
}

StatusOr<std::unique_ptr<DeviceContext>> CreateCudaContext(Place place) {
  const Backend& b = LoadBackend();
  if (!b.status.ok()) return b.status.error();
  char reason[512] = {};
  int n = b.api->device_count(reason, sizeof(reason));
  if (place.device >= n)
    return MakeError(ErrorCode::kInvalidArgument, "{} requested, but this machine has {} GPU(s)", place.ToString(), n);
  DeviceContext* c = b.api->create_context(place.device, reason, sizeof(reason));
  if (c == nullptr) return MakeError(ErrorCode::kUnavailable, "cannot use {}: {}", place.ToString(), reason);
  return std::unique_ptr<DeviceContext>(c);
}

}  // namespace

StatusOr<std::unique_ptr<DeviceContext>> CreateDeviceContext(Place place, int num_threads) {
  if (place.is_cpu()) return std::unique_ptr<DeviceContext>(new runtime::CpuContext(num_threads));
  return CreateCudaContext(place);
}

StatusOr<std::unique_ptr<Executor>> Executor::Create(Place place, const ExecutorOptions& options) {
  // Checked before anything reaches omp_set_num_threads or a parallel region (CLI and Python alike).
  PC_RETURN_IF_ERROR(runtime::CheckThreadCount(options.num_threads));
  PC_ASSIGN_OR_RETURN(auto device, CreateDeviceContext(place, options.num_threads));
  return std::unique_ptr<Executor>(new Executor(std::move(device), options));
}

StatusOr<std::unique_ptr<Plan>> Executor::Prepare(ir::Block& block, Scope& scope, PlanOptions options) {
  if (options.seed == 0) options.seed = options_.seed;
  options.flush_denormals = options_.flush_denormals;
  options.check_nan_inf = options.check_nan_inf || options_.check_nan_inf;
  return Plan::Build(block, scope, *device_, ops::GlobalOpRegistry(), options);
}

Status Executor::RunOnce(ir::Block& block, Scope& scope, PlanOptions options) {
  PC_ASSIGN_OR_RETURN(auto plan, Prepare(block, scope, options));
  return plan->Run();
}

}  // namespace paddlec::exec
