// The process's communicator: a group of one without a launcher, else Open MPI's world, loaded from
// libpaddlec_mpi.so on first use (linking libmpi would add ~5 ms to every `paddlec` start).
#include "paddlec/runtime/comm.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace paddlec::runtime {
namespace {

/// The first of the launchers' variables that is set (Open MPI's own, then PMIx and PMI ones,
/// which other MPI launchers such as srun set), or -1.
int EnvInt(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const char* v = std::getenv(n); v != nullptr && *v != '\0') return std::atoi(v);
  return -1;
}

/// Rank 0 of 1: every collective leaves the data as it is (a sum over one rank is the value).
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string_view backend() const override { return "local"; }
  Status AllReduce(void*, int64_t, DType, ReduceOp) override { return Status::OK(); }
  Status Broadcast(void*, int64_t, int root) override {
    if (root != 0) return MakeError(ErrorCode::kInvalidArgument, "broadcast from rank {} in a group of 1", root);
    return Status::OK();
  }
  Status AllGather(const void* in, void* out, int64_t bytes) override {
    if (in != out) std::memmove(out, in, static_cast<size_t>(bytes));
    return Status::OK();
  }
  [[noreturn]] void Abort(int exit_code) override { std::exit(exit_code); }
};

/// The directory of libpaddlec.so, where libpaddlec_mpi.so is built and installed beside it.
std::string LibraryDir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&LibraryDir), &info) == 0 || info.dli_fname == nullptr) return ".";
  std::string path = info.dli_fname;
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

StatusOr<Communicator*> LoadMpi() {
  constexpr char kModule[] = "libpaddlec_mpi.so";
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("PADDLEC_MPI_LIBRARY")) candidates.emplace_back(env);
  candidates.push_back(LibraryDir() + "/" + kModule);
  candidates.emplace_back(kModule);
  void* handle = nullptr;
  std::string why;
  for (const auto& c : candidates) {
    // RTLD_GLOBAL: Open MPI's own plugins (mca_*.so) resolve libmpi's symbols through the global scope.
    handle = ::dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle != nullptr) break;
    why = ::dlerror();
  }
  if (handle == nullptr)
    return MakeError(ErrorCode::kUnavailable, "this process was started by mpirun but cannot load {}: {}", kModule, why)
        .Note("install Open MPI (scripts/setup.sh: libopenmpi-dev openmpi-bin) and rebuild paddlec");
  using Entry = Communicator* (*)(char* reason, size_t size);
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, "paddlec_mpi_communicator"));
  if (entry == nullptr) return MakeError(ErrorCode::kUnavailable, "{} is incomplete: {}", kModule, ::dlerror());
  char reason[512] = {};
  Communicator* c = entry(reason, sizeof(reason));
  if (c == nullptr) return MakeError(ErrorCode::kUnavailable, "MPI initialization failed: {}", reason);
  return c;
}

struct World {
  Communicator* comm = nullptr;
  Status status;
};

World* created = nullptr;

}  // namespace

int LauncherWorldSize() {
  int n = EnvInt({"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"});
  return n > 0 ? n : 1;
}

int LauncherRank() {
  int r = EnvInt({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"});
  return r > 0 ? r : 0;
}

StatusOr<Communicator*> WorldCommunicator() {
  // Created once, on the first collective or data-parallel run, and kept to the end of the process
  // (MPI_Finalize runs at exit, registered by the MPI module).
  static World* world = [] {
    auto* w = new World();
    bool launched = EnvInt({"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) >= 0;
    if (!launched) {
      w->comm = new LocalCommunicator();
    } else {
      auto c = LoadMpi();
      if (c.ok())
        w->comm = *c;
      else
        w->status = c.status();
    }
    created = w;
    return w;
  }();
  if (!world->status.ok()) return world->status;
  return world->comm;
}

Communicator* WorldCommunicatorIfCreated() { return created != nullptr ? created->comm : nullptr; }

Status WaitForCollectives() {
  Communicator* c = WorldCommunicatorIfCreated();
  if (c == nullptr || c->in_flight() == 0) return Status::OK();
  return c->WaitAll();
}

}  // namespace paddlec::runtime
