// The CPU kernels' threads: per-run thread counts and denormal modes, and busy-machine detection.
#include "paddlec/runtime/threads.h"

#include <omp.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace paddlec::runtime {
namespace {

constexpr uint32_t kFtzDaz = 0x8040;  // MXCSR flush-to-zero (bit 15) and denormals-are-zero (bit 6)
constexpr double kSerialFlops = 2.0e6;
constexpr double kBusySerialFlops = 3.0e7;

/// The running executor's thread count on this thread (0 outside a run).
thread_local int t_executor_threads = 0;

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Runnable tasks on the machine now, ourselves included; -1 when unknown.
int RunnableTasks() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return -1;
  double a, b, c;
  int running = -1, total = 0;
  if (std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) running = -1;
  std::fclose(f);
  return running;
}

std::atomic<int> g_busy_override{-1};

double PauseNanos() {
  using Clock = std::chrono::steady_clock;
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    for (int i = 0; i < 128; ++i) _mm_pause();
    best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / 128);
  }
  return std::max(best, 0.5);
}

}  // namespace

bool SetBoundedSpinEnv() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return false;
  double micros = kDefaultSpinMicros;
  if (const char* s = std::getenv("PADDLEC_SPIN_US")) {
    char* end = nullptr;
    double v = std::strtod(s, &end);
    if (end != s && v >= 0) micros = v;
  }
  const double count = std::clamp(micros * 1000.0 / PauseNanos(), 0.0, 1e6);
  char text[32];
  std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(count));
  return setenv("GOMP_SPINCOUNT", text, 0) == 0;
}

void ReexecWithBoundedSpin(char** argv) {
  if (!SetBoundedSpinEnv()) return;
  ::execv("/proc/self/exe", argv);
  // Still here: run on with libgomp's own policy.
}

int MaxThreads() { return kMaxThreadsPerCore * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

Status CheckThreadCount(int64_t threads) {
  if (threads >= 0 && threads <= MaxThreads()) return Status::OK();
  return MakeError(ErrorCode::kInvalidArgument,
                   "thread count {} is out of range: use 1 to {} ({} per core of this machine), or 0 for one per core",
                   threads, MaxThreads(), kMaxThreadsPerCore);
}

void OverrideMachineBusyForTesting(int busy) { g_busy_override.store(busy); }

bool MachineBusy(int own_threads) {
  if (int o = g_busy_override.load(std::memory_order_relaxed); o >= 0) return o == 1;
  static std::atomic<int64_t> checked_at{-1};
  static std::atomic<bool> busy{false};
  static const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t now = NowMicros(), last = checked_at.load(std::memory_order_relaxed);
  if (last < 0 || now - last > 50000) {
    checked_at.store(now, std::memory_order_relaxed);
    const int runnable = RunnableTasks();
    // Ours: this thread, and workers that may still spin after the last parallel region.
    const int others = runnable - std::max(own_threads, 1);
    busy.store(runnable >= 0 && others + own_threads > cpus, std::memory_order_relaxed);
  }
  return busy.load(std::memory_order_relaxed);
}

KernelThreadState EnterKernelThreads(int threads, bool flush_denormals) {
  // Which settings this thread's OpenMP workers already have: libgomp keeps one pool of workers per
  // calling thread and reuses them, so they are set once, not at every run.
  struct Workers {
    int count = 0;
    bool flush = false;
  };
  thread_local Workers workers;
  KernelThreadState saved{omp_get_max_threads(), t_executor_threads, _mm_getcsr()};
  const uint32_t mxcsr = flush_denormals ? (saved.mxcsr | kFtzDaz) : (saved.mxcsr & ~kFtzDaz);
  if (mxcsr != saved.mxcsr) _mm_setcsr(mxcsr);
  if (threads > 1 && (workers.flush != flush_denormals || workers.count < threads)) {
#pragma omp parallel num_threads(threads)
    _mm_setcsr(flush_denormals ? (_mm_getcsr() | kFtzDaz) : (_mm_getcsr() & ~kFtzDaz));
    workers = {threads, flush_denormals};
  }
  t_executor_threads = threads;
  const int now = threads > 1 && MachineBusy(threads) ? 1 : threads;
  if (now != saved.threads) omp_set_num_threads(now);
  return saved;
}

void LeaveKernelThreads(const KernelThreadState& saved) {
  t_executor_threads = saved.executor_threads;
  if (omp_get_max_threads() != saved.threads) omp_set_num_threads(saved.threads);
  if (_mm_getcsr() != saved.mxcsr) _mm_setcsr(saved.mxcsr);
}

bool DenormalsFlushed() { return (_mm_getcsr() & kFtzDaz) == kFtzDaz; }

int OneDnnThreads(double flops) {
  const int executor = t_executor_threads > 0 ? t_executor_threads : omp_get_max_threads();
  if (executor <= 1 || flops < kSerialFlops) return 1;
  return flops < kBusySerialFlops && MachineBusy(executor) ? 1 : executor;
}

ScopedMaxThreads::ScopedMaxThreads(int threads) : saved_(omp_get_max_threads()) {
  if (threads != saved_) omp_set_num_threads(threads);
}

ScopedMaxThreads::~ScopedMaxThreads() {
  if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
}

}  // namespace paddlec::runtime
