// Tests of the executor's CPU threads: denormals flushed in every thread that runs kernels (or kept
// on request), and the caller's thread count and float mode left as they were.
#include "paddlec/runtime/threads.h"

#include <doctest/doctest.h>
#include <omp.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "paddlec/exec/executor.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::exec {
namespace {

// 2^20 elements: the scale kernel splits them into chunks for both threads. Which thread computes
// which chunk varies; the RunTasks test below shows a worker's float mode directly.
constexpr int64_t kN = int64_t{1} << 20;
constexpr char kScale[] = R"pb(
  blocks {
    idx: 0
    parent_idx: -1
    vars {
      name: "x"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: -1 } }
      }
    }
    ops {
      type: "scale"
      inputs { parameter: "X" arguments: "x" }
      outputs { parameter: "Out" arguments: "y" }
      attrs { name: "scale" type: FLOAT f: 1e-20 }
    }
  }
)pb";

/// Runs y = x * 1e-20 on x = 1e-20 everywhere (a normal operand, a denormal product) with 2 threads
/// and returns how many of y's values are zero in the first and in the second half.
std::pair<int64_t, int64_t> ZerosPerHalf(bool flush) {
  runtime::OverrideMachineBusyForTesting(0);  // two threads even beside other processes
  auto m = testing::CompileText(kScale, "validate,infer-shape", "t.pbtxt");
  REQUIRE(m.ok());
  auto exec = Executor::Create(Place::CPU(), {.num_threads = 2, .flush_denormals = flush});
  REQUIRE(exec.ok());
  runtime::Scope scope;
  std::vector<float> x(kN, 1e-20f);
  REQUIRE((*exec)->device().CopyFromHost(testing::MakeTensor<float>({kN}, x), scope.Var("x").tensor()).ok());
  auto plan = (*exec)->Prepare((*m)->main().global_block(), scope);
  REQUIRE(plan.ok());
  REQUIRE((*plan)->Run().ok());
  const float* y = scope.Find("y")->tensor().data<float>();
  std::pair<int64_t, int64_t> zeros{0, 0};
  for (int64_t i = 0; i < kN; ++i) (i < kN / 2 ? zeros.first : zeros.second) += y[i] == 0.0f;
  runtime::OverrideMachineBusyForTesting(-1);
  return zeros;
}

TEST_CASE("Denormal results are flushed to zero in the calling thread and in the worker threads") {
  REQUIRE(std::fpclassify(1e-20f * 1e-20f) == FP_SUBNORMAL);  // this test thread keeps IEEE denormals
  auto [first, second] = ZerosPerHalf(true);
  CHECK(first == kN / 2);
  CHECK(second == kN / 2);
  // The caller's float mode is its own again after the run.
  CHECK_FALSE(runtime::DenormalsFlushed());
}

TEST_CASE("--keep-denormals keeps IEEE gradual underflow in every thread") {
  ZerosPerHalf(true);  // the workers were switched to flushing first: they must be switched back
  auto [first, second] = ZerosPerHalf(false);
  CHECK(first == 0);
  CHECK(second == 0);
}

TEST_CASE("An executor's thread count applies while its plans run, not to the caller afterwards") {
  runtime::OverrideMachineBusyForTesting(0);
  runtime::ScopedMaxThreads caller(2);
  for (int threads : {1, 3}) {
    runtime::KernelThreadState saved = runtime::EnterKernelThreads(threads, true);
    CHECK(omp_get_max_threads() == threads);
    CHECK(runtime::DenormalsFlushed());
    runtime::LeaveKernelThreads(saved);
    CHECK(omp_get_max_threads() == 2);
    CHECK_FALSE(runtime::DenormalsFlushed());
  }
  // Through a plan: a 1-thread executor leaves the caller's 2 threads as they were.
  auto m = testing::CompileText(kScale, "validate,infer-shape", "t.pbtxt");
  REQUIRE(m.ok());
  auto exec = Executor::Create(Place::CPU(), {.num_threads = 1});
  REQUIRE(exec.ok());
  runtime::Scope scope;
  REQUIRE((*exec)->device().CopyFromHost(testing::MakeTensor<float>({4}, {1, 2, 3, 4}), scope.Var("x").tensor()).ok());
  REQUIRE((*exec)->RunOnce((*m)->main().global_block(), scope).ok());
  CHECK(omp_get_max_threads() == 2);
  runtime::OverrideMachineBusyForTesting(-1);
}

TEST_CASE("After a run that used oneDNN's threads, paddlec's loops run on the same OpenMP team") {
  // A product with Y transposed runs on oneDNN's matmul (math/gemm.cc), on both threads at this size;
  // `scale` runs on RunTasks alone.
  runtime::OverrideMachineBusyForTesting(0);
  for (const bool onednn : {true, false}) {
    CAPTURE(onednn);
    ir::pb::OpDesc op;
    op.set_type(onednn ? "matmul_v2" : "scale");
    ops::AddInput(op, "X", {"x"});
    if (onednn) {
      ops::AddInput(op, "Y", {"x"});
      *op.add_attrs() = ops::MakeAttr("trans_y", true);
    }
    ops::AddOutput(op, "Out", {"y"});
    const Dims dims = onednn ? Dims{256, 256} : Dims{kN};
    const runtime::Tensor x = testing::MakeTensor<float>(dims, std::vector<float>(dims.Numel(), 0.5f));
    auto m = testing::CompileOp(op, {{"x", x}});
    REQUIRE(m.ok());
    auto exec = Executor::Create(Place::CPU(), {.num_threads = 2});
    REQUIRE(exec.ok());
    runtime::Scope scope;
    REQUIRE((*exec)->device().CopyFromHost(x, scope.Var("x").tensor()).ok());
    auto plan = (*exec)->Prepare((*m)->main().global_block(), scope);
    REQUIRE(plan.ok());
    CHECK_FALSE((*plan)->tasks_on_openmp());
    for (int run = 0; run < 2; ++run) {
      REQUIRE((*plan)->Run().ok());
      CHECK((*plan)->tasks_on_openmp() == onednn);
    }
    if (onednn) CHECK(scope.Find("y")->tensor().data<float>()[0] == doctest::Approx(64.0));
  }
  runtime::OverrideMachineBusyForTesting(-1);
}

TEST_CASE("On a busy machine a run uses one thread, for large products too") {
  runtime::ScopedMaxThreads caller(1);
  for (int busy : {0, 1}) {
    CAPTURE(busy);
    runtime::OverrideMachineBusyForTesting(busy);
    runtime::KernelThreadState saved = runtime::EnterKernelThreads(2, true);
    CHECK(omp_get_max_threads() == (busy ? 1 : 2));
    CHECK(runtime::LoopThreads() == (busy ? 1 : 2));
    CHECK(runtime::OneDnnThreads(1e6) == 1);  // small: always on the calling thread
    CHECK(runtime::OneDnnThreads(1e7) == (busy ? 1 : 2));
    CHECK(runtime::OneDnnThreads(1e9) == (busy ? 1 : 2));
    runtime::LeaveKernelThreads(saved);
    CHECK(omp_get_max_threads() == 1);
  }
  runtime::OverrideMachineBusyForTesting(-1);
}

TEST_CASE("Busy means other processes' threads and ours exceed the CPUs; our spinning workers are not others") {
  // 2 CPUs, 2 threads of ours: the caller and two spinning workers (RunTasks' and OpenMP's) make
  // 3 runnable, all ours.
  CHECK_FALSE(runtime::BusyVerdict(3, 2, 2, 2));
  CHECK_FALSE(runtime::BusyVerdict(1, 0, 2, 2));   // the caller alone
  CHECK(runtime::BusyVerdict(2, 0, 2, 2));         // one other process beside the caller
  CHECK(runtime::BusyVerdict(4, 1, 2, 2));         // two others beside the caller and a worker
  CHECK_FALSE(runtime::BusyVerdict(2, 0, 1, 2));   // a one-thread run beside one other process
  CHECK_FALSE(runtime::BusyVerdict(-1, 0, 2, 2));  // /proc/loadavg unreadable
}

/// Holds the second of two threads (a worker) spinning while the first counts the running workers:
/// at least that one (others of earlier tests may still be spinning before they sleep).
template <class Team>
int WorkersCountedWhileOneSpins(Team team) {
  std::atomic<int> started{0}, counted{-1};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  team([&](int slot) {
    if (slot != 0) {
      ++started;
      while (counted < 0 && std::chrono::steady_clock::now() < deadline) {
      }
      return;
    }
    while (started == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    counted = runtime::PoolWorkersRunning();
  });
  return counted;
}

TEST_CASE("PoolWorkersRunning finds RunTasks' and OpenMP's workers while they run") {
  const auto pool_team = [](auto body) { runtime::RunTasks(2, 2, [&](int64_t, int slot) { body(slot); }); };
  CHECK(WorkersCountedWhileOneSpins(pool_team) >= 1);
  runtime::ScopedMaxThreads caller(1);
  runtime::OverrideMachineBusyForTesting(0);
  runtime::KernelThreadState saved = runtime::EnterKernelThreads(2, true);  // names the OpenMP workers
  const auto omp_team = [](auto body) {
#pragma omp parallel num_threads(2)
    body(omp_get_thread_num());
  };
  CHECK(WorkersCountedWhileOneSpins(omp_team) >= 1);
  runtime::LeaveKernelThreads(saved);
  runtime::OverrideMachineBusyForTesting(-1);
}

TEST_CASE("Small work runs on the calling thread; large work is split by its cost") {
  runtime::ScopedMaxThreads two(2);
  int calls = 0;
  const std::thread::id caller = std::this_thread::get_id();
  runtime::ParallelFor(1000, 1000, [&](int64_t b, int64_t e) {
    ++calls;
    CHECK(std::this_thread::get_id() == caller);
    CHECK(b == 0);
    CHECK(e == 1000);
  });
  CHECK(calls == 1);
  // 2 threads, grain 1000: four chunks of 1000 (runtime::kChunksPerThread per thread), each once.
  std::vector<std::atomic<int>> runs(4000);
  std::atomic<int> chunks{0};
  runtime::ParallelFor(4000, 1000, [&](int64_t b, int64_t e, int slot) {
    CHECK(e - b == 1000);
    CHECK((slot == 0 || slot == 1));
    ++chunks;
    for (int64_t i = b; i < e; ++i) ++runs[i];
  });
  CHECK(chunks == 4);
  for (auto& r : runs) REQUIRE(r == 1);
}

/// Counts the calling task in and waits (10 s at most) until `n` tasks have started, so that a job
/// of `n` tasks on `n` threads gives every thread one.
void StartTogether(std::atomic<int>& started, int n) {
  ++started;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (started < n && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

/// Runs `body` twice: on RunTasks' own workers, and inside a run entered with `tasks_on_openmp` (on
/// the calling thread's OpenMP team, as a plan that used oneDNN's threads runs next).
template <class F>
void OnBothPools(F&& body) {
  SUBCASE("RunTasks' own workers") { body(); }
  SUBCASE("the OpenMP team") {
    // Left even when a REQUIRE in `body` throws, so that later cases run as they would alone.
    struct Scope {
      runtime::KernelThreadState saved;
      ~Scope() {
        runtime::LeaveKernelThreads(saved);
        runtime::OverrideMachineBusyForTesting(-1);
      }
    };
    runtime::OverrideMachineBusyForTesting(0);
    const Scope scope{runtime::EnterKernelThreads(8, runtime::DenormalsFlushed(), /*tasks_on_openmp=*/true)};
    body();
  }
}

/// Runs two tasks on two threads, each waiting (10 s at most) until both have started, so that a
/// worker must take one; returns per slot whether denormals were flushed there.
std::array<int, 2> FlushPerSlot() {
  std::array<int, 2> flushed{-1, -1};
  std::atomic<int> started{0};
  runtime::RunTasks(2, 2, [&](int64_t, int slot) {
    StartTogether(started, 2);
    flushed[slot] = runtime::DenormalsFlushed();
  });
  return flushed;
}

TEST_CASE("RunTasks runs a job on the caller and a worker, in the caller's denormal mode") {
  OnBothPools([] {
    const unsigned int saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040);
    CHECK(FlushPerSlot() == std::array<int, 2>{1, 1});
    _mm_setcsr(saved & ~0x8040u);
    CHECK(FlushPerSlot() == std::array<int, 2>{0, 0});
    _mm_setcsr(saved);
  });
}

TEST_CASE("RunTasks runs every task once, however many threads and tasks") {
  OnBothPools([] {
    for (int threads : {1, 2, 3, 8})
      // 65536 and more are claimed in runs of consecutive tasks (runtime/threads.cc, kMaxClaims).
      for (int64_t tasks : {0, 1, 2, 7, 1000, 65535, 65536, 200001}) {
        CAPTURE(threads);
        CAPTURE(tasks);
        std::vector<std::atomic<int>> runs(tasks);
        std::atomic<int> bad_slot{0};
        runtime::RunTasks(tasks, threads, [&](int64_t i, int slot) {
          bad_slot += slot < 0 || slot >= threads;
          ++runs[i];
        });
        CHECK(bad_slot == 0);
        for (auto& r : runs) REQUIRE(r == 1);
      }
  });
}

TEST_CASE("RunTasks in a forked child starts workers of its own and runs every task") {
  // The parent's pool has a worker; the child inherits the pool but not its thread, so a job that
  // counted on that worker would wait for it forever.
  std::atomic<int> parent_runs{0};
  runtime::RunTasks(64, 2, [&](int64_t, int) { ++parent_runs; });
  REQUIRE(parent_runs == 64);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::atomic<int> runs{0}, on_worker{0};
    std::atomic<bool> worker_started{false};
    runtime::RunTasks(64, 2, [&](int64_t i, int slot) {
      ++runs;
      if (slot != 0) worker_started = true, ++on_worker;
      // The caller holds the first task until a worker has one, so the worker must exist.
      if (i == 0)
        for (auto start = std::chrono::steady_clock::now(); !worker_started;)
          if (std::chrono::steady_clock::now() - start > std::chrono::seconds(10)) _exit(3);
    });
    _exit(runs == 64 && on_worker > 0 ? 0 : 2);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("RunTasks gives the caller the first tasks and a worker the last, each a contiguous run") {
  OnBothPools([] {
    // Task 0 holds whoever runs it until the worker has started a task, so the worker takes part;
    // every task runs for 20 us, long enough for both threads to keep claiming until they meet.
    constexpr int64_t kTasks = 64;
    std::vector<int> slot_of(kTasks, -1);
    std::atomic<int64_t> worker_first{-1};
    runtime::RunTasks(kTasks, 2, [&](int64_t i, int slot) {
      if (slot == 1) {
        int64_t none = -1;
        worker_first.compare_exchange_strong(none, i);
      }
      const auto start = std::chrono::steady_clock::now();
      if (i == 0)
        while (worker_first < 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(5))
          std::this_thread::yield();
      while (std::chrono::steady_clock::now() - start < std::chrono::microseconds(20)) {
      }
      slot_of[i] = slot;
    });
    // Whatever the timing (a caller kept off its CPU may find the worker has taken every task), the
    // worker starts at the last task, and slot 0's tasks come before slot 1's: the runs meet once.
    CHECK(worker_first == kTasks - 1);
    CHECK(slot_of.back() == 1);
    CHECK(std::is_sorted(slot_of.begin(), slot_of.end()));
  });
}

TEST_CASE("RunTasks inside a task runs on the calling thread") {
  OnBothPools([] {
    std::atomic<int> inner{0}, elsewhere{0};
    runtime::RunTasks(4, 2, [&](int64_t, int) {
      const std::thread::id self = std::this_thread::get_id();
      runtime::RunTasks(3, 2, [&](int64_t, int slot) {
        ++inner;
        elsewhere += std::this_thread::get_id() != self || slot != 0;
      });
    });
    CHECK(inner == 12);
    CHECK(elsewhere == 0);
  });
}

TEST_CASE("RunTasks' caller sleeps through a task longer than its spin and wakes when a worker ends it") {
  // A caller that slept and was never woken would hang: the watchdog ends the test instead.
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!finished && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!finished) {
      std::fputs("RunTasks' caller was not woken\n", stderr);
      std::_Exit(1);
    }
  });
  for (int rep = 0; rep < 3; ++rep) {
    std::atomic<int> started{0}, runs{0};
    runtime::RunTasks(2, 2, [&](int64_t, int slot) {
      ++runs;
      if (slot != 0) {
        ++started;
        // 20 ms: the caller, done with its task, spins for ~200 us (PADDLEC_SPIN_US) and sleeps.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return;
      }
      StartTogether(started, 2);  // so that the worker takes the other task
    });
    CHECK(runs == 2);
  }
  finished = true;
  watchdog.join();
}

TEST_CASE("Workers ask the scheduler for its shortest slice, where the kernel takes one; the caller keeps its own") {
  // Whether this kernel takes a slice (Linux 6.12 on): asked on a thread of the test's own.
  bool kernel_takes = false;
  std::thread probe(
      [&] { kernel_takes = runtime::RequestShortSlice() && runtime::SliceNanos() == runtime::kWorkerSliceNanos; });
  probe.join();
  if (!kernel_takes) return;
  const uint64_t caller = runtime::SliceNanos();
  OnBothPools([&] {
    std::array<uint64_t, 2> slices{};
    std::atomic<int> started{0};
    runtime::RunTasks(2, 2, [&](int64_t, int slot) {
      StartTogether(started, 2);
      slices[static_cast<size_t>(slot)] = runtime::SliceNanos();
    });
    CHECK(slices[0] == caller);
    CHECK(slices[1] == runtime::kWorkerSliceNanos);
  });
}

TEST_CASE("TeamCpus binds a team that covers the process's CPUs, the caller on the CPU it is on") {
  CHECK(runtime::TeamCpus(2, {0, 1}, 1) == std::vector<int>{1, 0});
  CHECK(runtime::TeamCpus(2, {0, 1}, 0) == std::vector<int>{0, 1});
  CHECK(runtime::TeamCpus(3, {2, 5, 7}, 5) == std::vector<int>{5, 2, 7});
  CHECK(runtime::TeamCpus(2, {2, 5}, 9) == std::vector<int>{2, 5});  // on a CPU not its own: any order
  CHECK(runtime::TeamCpus(2, {0, 1, 2, 3}, 0).empty());              // a smaller team: the scheduler's
  CHECK(runtime::TeamCpus(4, {0, 1}, 0).empty());                    // more threads than CPUs
  CHECK(runtime::TeamCpus(1, {0}, 0).empty());                       // one thread: nothing to spread
}

/// Runs the test case `name` of this binary in a child process with `env` added and the variables
/// named in `unset` removed; returns its exit status.
int RunCaseInChild(const char* name, std::vector<std::string> env, const std::vector<std::string>& unset = {}) {
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    if (std::none_of(unset.begin(), unset.end(), [&](const std::string& u) { return var.starts_with(u + "="); }))
      env.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string filter = std::string("--test-case=") + name;
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, filter.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, exe, nullptr, nullptr, argv, envp.data()) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

constexpr char kBoundCase[] = "Under OMP_PROC_BIND RunTasks' workers run on their OpenMP thread's CPUs";

TEST_CASE(kBoundCase) {
  if (std::getenv("PADDLEC_TEST_BOUND_CHILD") == nullptr) {
    cpu_set_t allowed;
    REQUIRE(sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
    if (CPU_COUNT(&allowed) < 2) return;  // one CPU: one place, nothing to tell apart
    // libgomp reads OMP_PROC_BIND when it loads: only a fresh process has it bound. The child exits
    // with 42 once every check has held (a filter that matched no case would exit with 0).
    CHECK(RunCaseInChild(kBoundCase, {"PADDLEC_TEST_BOUND_CHILD=1", "OMP_PROC_BIND=close", "OMP_PLACES=threads",
                                      "OMP_NUM_THREADS=2"}) == 42);
    return;
  }
  cpu_set_t caller, omp_worker, pool_worker;
  CPU_ZERO(&omp_worker);
  CPU_ZERO(&pool_worker);
  REQUIRE(sched_getaffinity(0, sizeof(caller), &caller) == 0);
  REQUIRE(CPU_COUNT(&caller) == 1);  // libgomp bound this thread to the first place
  runtime::OverrideMachineBusyForTesting(0);
  runtime::KernelThreadState saved = runtime::EnterKernelThreads(2, true);
#pragma omp parallel num_threads(2)
  if (omp_get_thread_num() == 1) sched_getaffinity(0, sizeof(omp_worker), &omp_worker);
  std::atomic<int> started{0};
  runtime::RunTasks(2, 2, [&](int64_t, int slot) {
    StartTogether(started, 2);
    if (slot == 1) sched_getaffinity(0, sizeof(pool_worker), &pool_worker);
  });
  runtime::LeaveKernelThreads(saved);
  runtime::OverrideMachineBusyForTesting(-1);
  REQUIRE(CPU_EQUAL(&pool_worker, &omp_worker));
  REQUIRE_FALSE(CPU_EQUAL(&pool_worker, &caller));
  // Before an exec (ReexecWithBoundedSpin), the caller gets every place's CPUs back.
  REQUIRE(runtime::UnbindForExec());
  cpu_set_t after;
  REQUIRE(sched_getaffinity(0, sizeof(after), &after) == 0);
  REQUIRE(CPU_COUNT(&after) == omp_get_num_places());
  std::_Exit(42);
}

/// The one CPU the calling thread may run on; -1 when it may run on several.
int OnlyCpu() {
  cpu_set_t mine;
  sched_getaffinity(0, sizeof(mine), &mine);
  if (CPU_COUNT(&mine) != 1) return -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mine)) return c;
  return -1;
}

constexpr char kOwnTeamCase[] =
    "BindTeamsToCpus binds a team that covers the CPUs and keeps it on a busy machine; a larger team is unbound";

TEST_CASE(kOwnTeamCase) {
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
  const int cpus = CPU_COUNT(&allowed);
  if (cpus < 2 || cpus > runtime::MaxThreads()) return;  // one CPU: nothing to spread
  if (std::getenv("PADDLEC_TEST_OWN_TEAM_CHILD") == nullptr) {
    // Bound, this process's main thread would pass its one CPU on to threads that later cases
    // create: the child exits with 42 once every check has held. No OMP_PROC_BIND: that would be
    // libgomp's binding, not ours.
    CHECK(RunCaseInChild(kOwnTeamCase, {"PADDLEC_TEST_OWN_TEAM_CHILD=1"}, {"OMP_PROC_BIND"}) == 42);
    return;
  }
  runtime::BindTeamsToCpus();
  runtime::OverrideMachineBusyForTesting(1);
  runtime::KernelThreadState saved = runtime::EnterKernelThreads(cpus, true);
  REQUIRE(omp_get_max_threads() == cpus);  // busy, and still the whole team
  REQUIRE(runtime::OneDnnThreads(1e9) == cpus);
  std::vector<int> omp_cpu(static_cast<size_t>(cpus), -1), pool_cpu(static_cast<size_t>(cpus), -1);
#pragma omp parallel num_threads(cpus)
  omp_cpu[static_cast<size_t>(omp_get_thread_num())] = OnlyCpu();
  std::atomic<int> started{0};
  runtime::RunTasks(cpus, cpus, [&](int64_t, int slot) {
    StartTogether(started, cpus);
    pool_cpu[static_cast<size_t>(slot)] = OnlyCpu();
  });
  runtime::LeaveKernelThreads(saved);
  REQUIRE(started == cpus);
  // One CPU each, all of the process's; RunTasks' workers where the OpenMP thread of their number is.
  for (int c : omp_cpu) {
    REQUIRE(c >= 0);
    REQUIRE(CPU_ISSET(c, &allowed));
  }
  std::vector<int> sorted = omp_cpu;
  std::sort(sorted.begin(), sorted.end());
  REQUIRE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  for (int slot = 1; slot < cpus; ++slot)
    REQUIRE(pool_cpu[static_cast<size_t>(slot)] == omp_cpu[static_cast<size_t>(slot)]);
  // The caller stays bound between runs; a team that does not cover the CPUs gives them back.
  cpu_set_t caller;
  REQUIRE(sched_getaffinity(0, sizeof(caller), &caller) == 0);
  REQUIRE(CPU_COUNT(&caller) == 1);
  saved = runtime::EnterKernelThreads(cpus + 1, true);
  REQUIRE(omp_get_max_threads() == 1);  // busy, and not bound: one thread
  runtime::LeaveKernelThreads(saved);
  REQUIRE(sched_getaffinity(0, sizeof(caller), &caller) == 0);
  REQUIRE(CPU_EQUAL(&caller, &allowed));
  runtime::OverrideMachineBusyForTesting(-1);
  std::_Exit(42);
}

}  // namespace
}  // namespace paddlec::exec
