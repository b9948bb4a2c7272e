// How CPU kernels use threads: one OpenMP pool (libgomp, which Debian's oneDNN 2.6 runs on), whose
// size is set per executor for the duration of a plan's run, whose workers wait passively after a
// bounded spin, and whose threads flush denormals to zero unless the executor keeps them.
//
// Why OpenMP and not oneTBB: oneDNN cannot be given another pool in Debian's build (its CPU runtime
// is fixed at build time to OpenMP), so a second pool for paddlec's own loops would put two sets of
// workers on the same cores; measured on this machine, that ran 3x slower (machine.md, pitfall C),
// and a oneTBB pool would still leave oneDNN's OpenMP workers spinning. libgomp's weakness is its
// default wait, 300,000 spins before sleeping (milliseconds), which made paddlec 5-10x slower beside
// busy processes. libgomp reads it once, from the environment, in its load-time constructor, which
// runs before any code of ours (glibc initializes a library's dependencies first, and a setenv from
// .preinit_array is undone by libc's own initializer), so `paddlec run` and `train` re-execute
// themselves once with GOMP_SPINCOUNT set (ReexecWithBoundedSpin), and the Python package sets it
// before it loads its module.
//
// Busy machines: measured on this 2-core machine while seven builds ran (ms per step, MLP batch 1 /
// MLP training batch 64): libgomp spinning 30,000 times 14.3 / 56.8, 3,000 times 0.37 / 12.3, 300
// times 0.09 / 8.6, passive 0.064 / 7.1; and with a 100 us spin, one process in three stalled at
// 60-70 ms per step, its two threads sharing one core. So while other processes want the cores, a
// run uses one thread for everything but the large oneDNN primitives (MachineBusy, KernelThreads).
#pragma once

#include <cstdint>

#include "paddlec/core/error.h"

namespace paddlec::runtime {

/// Threads per core an executor may use at most: more only oversubscribes, and libgomp overflows
/// its stack creating tens of thousands of workers.
inline constexpr int kMaxThreadsPerCore = 4;
/// The most CPU threads an executor accepts on this machine (kMaxThreadsPerCore per core).
int MaxThreads();
/// OK for 0 (one thread per core) and 1..MaxThreads(); otherwise an error stating the range.
Status CheckThreadCount(int64_t threads);

/// The spin before an idle OpenMP worker sleeps, unless PADDLEC_SPIN_US says otherwise.
inline constexpr int kDefaultSpinMicros = 50;

/// Sets GOMP_SPINCOUNT to about PADDLEC_SPIN_US (default kDefaultSpinMicros) microseconds of this
/// CPU's `pause` (from ~1 to ~150 ns across x86 generations, so a fixed count expresses no time),
/// unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT; returns whether it set it.
bool SetBoundedSpinEnv();
/// For main(): when SetBoundedSpinEnv sets the variable, replaces the process by a fresh copy of
/// itself (same arguments) whose libgomp starts with it; returns when nothing needed doing or the
/// exec failed.
void ReexecWithBoundedSpin(char** argv);

/// The calling thread's kernel-thread settings, saved by EnterKernelThreads and restored by
/// LeaveKernelThreads.
struct KernelThreadState {
  int threads = 0;
  int executor_threads = 0;
  uint32_t mxcsr = 0;
};

/// Applies an executor's `threads` (one while the machine is busy) and the denormal mode (flush =
/// FTZ and DAZ on) to the calling thread and to the OpenMP workers it will use; returns what the
/// calling thread had.
KernelThreadState EnterKernelThreads(int threads, bool flush_denormals);
void LeaveKernelThreads(const KernelThreadState& saved);

/// Whether FTZ and DAZ are both on in the calling thread.
bool DenormalsFlushed();

/// Whether more threads want this machine's cores than it has (from /proc/loadavg's runnable count,
/// sampled at most every 50 ms), counting `own_threads` of ours as possibly running.
bool MachineBusy(int own_threads);
/// Tests: makes MachineBusy answer `busy` (1 or 0) instead of measuring; -1 measures again.
void OverrideMachineBusyForTesting(int busy);

/// The threads a oneDNN primitive of `flops` should use: one below 2 MFLOP (oneDNN joins its threads
/// at spinning barriers inside a primitive, and a descheduled thread there stalls a microsecond-sized
/// op for whole scheduler ticks), or below 30 MFLOP while the machine is busy; else the running
/// executor's count.
int OneDnnThreads(double flops);

/// Caps the OpenMP threads of the parallel regions (oneDNN's included) started from this thread
/// while it lives.
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
