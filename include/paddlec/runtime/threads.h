// How CPU kernels use threads: one OpenMP pool (libgomp, which Debian's oneDNN 2.6 runs on), whose
// size is set per executor for the duration of a plan's run, whose workers wait passively after a
// bounded spin, and whose threads flush denormals to zero unless the executor keeps them.
//
// Why OpenMP and not oneTBB: oneDNN cannot be given another pool in Debian's build (its CPU runtime
// is fixed at build time to OpenMP), so a second pool for paddlec's own loops would put two sets of
// workers on the same cores; measured on this machine, that ran 3x slower (machine.md, pitfall C),
// and a oneTBB pool still leaves oneDNN's OpenMP workers spinning. libgomp's weakness is its default
// wait: it spins 300,000 `pause`s (tens of milliseconds where a pause costs ~100 ns) before sleeping,
// which is what made paddlec 5-10x slower beside busy processes. ConfigureOpenMpWaiting bounds that.
#pragma once

#include <cstdint>

namespace paddlec::runtime {

/// Sets libgomp's spin-then-sleep policy from PADDLEC_SPIN_US (default kDefaultSpinMicros): the
/// spin count is calibrated to this CPU's `pause`. Does nothing when the user set OMP_WAIT_POLICY
/// or GOMP_SPINCOUNT. libgomp reads its environment once, in its load-time constructor, so this
/// must run before: executables call it from their .preinit_array (PADDLEC_OPENMP_PREINIT); the
/// Python package sets GOMP_SPINCOUNT before it imports its native module.
void ConfigureOpenMpWaiting();
inline constexpr int kDefaultSpinMicros = 100;

/// The calling thread's kernel-thread settings, saved by EnterKernelThreads and restored by
/// LeaveKernelThreads.
struct KernelThreadState {
  int threads = 0;
  uint32_t mxcsr = 0;
};

/// Applies `threads` and the denormal mode (flush = FTZ and DAZ on) to the calling thread and to
/// the OpenMP workers it will use; returns what the calling thread had.
KernelThreadState EnterKernelThreads(int threads, bool flush_denormals);
void LeaveKernelThreads(const KernelThreadState& saved);

/// Whether FTZ and DAZ are both on in the calling thread.
bool DenormalsFlushed();

/// Caps the OpenMP threads of the parallel regions (oneDNN's included) started from this thread
/// while it lives: small work runs on the calling thread instead of paying a fork and a join.
class ScopedMaxThreads {
 public:
  explicit ScopedMaxThreads(int threads);
  ~ScopedMaxThreads();
  ScopedMaxThreads(const ScopedMaxThreads&) = delete;
  ScopedMaxThreads& operator=(const ScopedMaxThreads&) = delete;

 private:
  int saved_;
};

}  // namespace paddlec::runtime

/// Put once in an executable's main file: configures libgomp's waiting before libgomp starts.
#define PADDLEC_OPENMP_PREINIT                                                                 \
  namespace {                                                                                  \
  __attribute__((section(".preinit_array"), used)) void (*const paddlec_openmp_preinit)(void) = \
      &::paddlec::runtime::ConfigureOpenMpWaiting;                                             \
  }
