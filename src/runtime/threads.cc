// The CPU kernels' threads: libgomp's wait policy, per-run thread counts and denormal modes.
#include "paddlec/runtime/threads.h"

#include <omp.h>
#include <xmmintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace paddlec::runtime {
namespace {

constexpr uint32_t kFtzDaz = 0x8040;  // MXCSR flush-to-zero (bit 15) and denormals-are-zero (bit 6)

/// Nanoseconds per `pause`, the instruction libgomp's spin loop runs (from ~1 to ~150 ns across
/// x86 generations, which is why a fixed count cannot express a time).
double PauseNanos() {
  using Clock = std::chrono::steady_clock;
  double best = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();
    for (int i = 0; i < 256; ++i) _mm_pause();
    best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / 256);
  }
  return best < 0.5 ? 0.5 : best;
}

}  // namespace

void ConfigureOpenMpWaiting() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  double micros = kDefaultSpinMicros;
  if (const char* s = std::getenv("PADDLEC_SPIN_US")) {
    char* end = nullptr;
    double v = std::strtod(s, &end);
    if (end != s && v >= 0) micros = v;
  }
  char count[32];
  std::snprintf(count, sizeof(count), "%lld", static_cast<long long>(micros * 1000.0 / PauseNanos()));
  setenv("GOMP_SPINCOUNT", count, 0);
}

KernelThreadState EnterKernelThreads(int threads, bool flush_denormals) {
  // Which settings this thread's OpenMP workers already have: libgomp keeps one pool of workers per
  // calling thread and reuses them, so they are set once, not at every run.
  struct Workers {
    int count = 0;
    bool flush = false;
  };
  thread_local Workers workers;
  KernelThreadState saved{omp_get_max_threads(), _mm_getcsr()};
  const uint32_t mxcsr = flush_denormals ? (saved.mxcsr | kFtzDaz) : (saved.mxcsr & ~kFtzDaz);
  if (mxcsr != saved.mxcsr) _mm_setcsr(mxcsr);
  if (threads != saved.threads) omp_set_num_threads(threads);
  if (threads > 1 && (workers.flush != flush_denormals || workers.count < threads)) {
#pragma omp parallel num_threads(threads)
    _mm_setcsr(flush_denormals ? (_mm_getcsr() | kFtzDaz) : (_mm_getcsr() & ~kFtzDaz));
    workers = {threads, flush_denormals};
  }
  return saved;
}

void LeaveKernelThreads(const KernelThreadState& saved) {
  if (omp_get_max_threads() != saved.threads) omp_set_num_threads(saved.threads);
  if (_mm_getcsr() != saved.mxcsr) _mm_setcsr(saved.mxcsr);
}

bool DenormalsFlushed() { return (_mm_getcsr() & kFtzDaz) == kFtzDaz; }

ScopedMaxThreads::ScopedMaxThreads(int threads) : saved_(omp_get_max_threads()) {
  if (threads != saved_) omp_set_num_threads(threads);
}

ScopedMaxThreads::~ScopedMaxThreads() {
  if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
}

}  // namespace paddlec::runtime
