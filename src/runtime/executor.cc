// Executor and device-context creation (the CUDA backend is dlopened on first use).
#include "paddlec/runtime/executor.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "paddlec/ops/op_registry.h"

namespace paddlec::runtime {
namespace {

std::string ExecutableDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

StatusOr<std::unique_ptr<DeviceContext>> CreateCudaContext(Place place) {
  std::string_view module = PADDLEC_CUDA_MODULE_NAME;
  if (module.empty())
    return MakeError(ErrorCode::kUnavailable, "this paddlec was built without CUDA support")
        .Note("rebuild with -DPADDLEC_WITH_CUDA=ON on a machine with the CUDA toolkit (nvcc)");
  std::string local = ExecutableDir() + "/" + std::string(module);
  void* handle = ::dlopen(local.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) handle = ::dlopen(std::string(module).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    return MakeError(ErrorCode::kUnavailable, "cannot load the CUDA backend: {}", ::dlerror());
  using CountFn = int (*)(char*, int);
  auto count = reinterpret_cast<CountFn>(::dlsym(handle, "paddlec_cuda_device_count"));
  if (count == nullptr) return MakeError(ErrorCode::kUnavailable, "the CUDA backend is incomplete: {}", ::dlerror());
  char why[256] = {};
  int n = count(why, sizeof(why));
  if (n < 0)
    return MakeError(ErrorCode::kUnavailable, "no usable CUDA GPU on this machine: {}", why)
        .Note("run with --device=cpu");
  if (n == 0) return MakeError(ErrorCode::kUnavailable, "no CUDA GPU found on this machine").Note("run with --device=cpu");
  if (place.device >= n)
    return MakeError(ErrorCode::kInvalidArgument, "{} requested, but this machine has {} GPU(s)", place.ToString(), n);
  return MakeError(ErrorCode::kUnimplemented, "GPU execution is not implemented in this build yet");
}

}  // namespace

StatusOr<std::unique_ptr<DeviceContext>> CreateDeviceContext(Place place, int num_threads) {
  if (place.is_cpu()) return std::unique_ptr<DeviceContext>(new CpuContext(num_threads));
  return CreateCudaContext(place);
}

StatusOr<std::unique_ptr<Executor>> Executor::Create(Place place, const ExecutorOptions& options) {
  PC_ASSIGN_OR_RETURN(auto device, CreateDeviceContext(place, options.num_threads));
  return std::unique_ptr<Executor>(new Executor(std::move(device), options));
}

StatusOr<std::unique_ptr<Plan>> Executor::Prepare(ir::Block& block, Scope& scope, PlanOptions options) {
  if (options.seed == 0) options.seed = options_.seed;
  return Plan::Build(block, scope, *device_, ops::GlobalOpRegistry(), options);
}

Status Executor::RunOnce(ir::Block& block, Scope& scope, PlanOptions options) {
  PC_ASSIGN_OR_RETURN(auto plan, Prepare(block, scope, options));
  return plan->Run();
}

}  // namespace paddlec::runtime
