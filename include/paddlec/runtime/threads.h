// How CPU kernels use threads. paddlec's own loops (GEMM tiles, Winograd and direct convolutions,
// elementwise and reduction loops) run on RunTasks: the calling thread and a few workers of its own,
// taking tasks one at a time, the caller from the front of a job and the workers from its back, so
// that each thread's tasks are neighbours (runtime/threads.cc, TaskPool). oneDNN's primitives run on libgomp, Debian's oneDNN 2.6 being built for
// OpenMP and taking no other pool. The executor sets the thread count of both for a plan's run, and
// the float mode: denormals flushed to zero unless it keeps them.
//
// Why paddlec's loops left OpenMP: a parallel region ends at a barrier that every thread of the team
// must reach, so beside a busy process a worker waiting for its CPU held the whole op for a
// scheduler slice even when the caller had already done all the work; RunTasks waits only for tasks
// that started. Its idle workers spin for the same bounded time as libgomp's (PADDLEC_SPIN_US),
// then sleep, and so does a caller waiting for a job's last task; no wait yields (below). Beside
// one busy process on this 2-core machine (ms per step, 2 threads, median of 5 alternating runs,
// RunTasks against OpenMP teams): MLP training batch 64 2.10 / 2.60, batch 512 12.7 / 15.0, LeNet
// training batch 64 22.3 / 24.8, MLP inference batch 64 0.63 / 0.91, LeNet inference batch 64 3.23
// / 3.68.
//
// Runs whose kernels also call oneDNN on several threads (training steps, on a CPU where the tiles
// leave the products to oneDNN) put RunTasks' jobs on libgomp's team after all, from the run after
// the first (exec/plan.cc): with two pools, the workers of one spun after its ops while the other's
// ran, and slept through the other's longer stretches, so the next op waited for them to wake.
// libgomp's workers not spinning at all (GOMP_SPINCOUNT=0) made the MLP step at batch 512 take
// 5.1-5.3 ms against 5.0. One pool, 3 alternating runs, ms: MLP training batch 512 4.63-4.85 /
// 4.78-4.97, batch 64 0.850-0.874 / 0.882-0.913, LeNet batch 64 9.07-9.44 / 9.38-9.79, the ResNet
// bench 79.4-83.3 / 82.1-88.1. Runs on paddlec's kernels alone (inference) keep RunTasks' own
// workers, whose jobs are lighter than a parallel region: there every op on libgomp's team measured
// 0.5-5 % slower (MLP b1 0.013-0.014 against 0.012-0.013 ms).
//
// Why not oneTBB, the other well-kept pool: run in RunTasks' place (oneTBB 2021.8 from Debian, a
// task_arena per calling thread and parallel_for), the kernels ran within 4 % of RunTasks either
// way. Medians of 6 rotating runs, ms, RunTasks / oneTBB: LeNet training batch 64 9.69 / 9.65, LeNet
// inference batch 64 1.59 / 1.61, MLP steps even, the ResNet bench 76.4 / 74.2; beside one busy
// process, 5 alternating runs against RunTasks before its two-ended claims: MLP training batch 512
// 12.7 / 12.3, LeNet training 18.6 / 18.5, the rest even. It would add a third set of threads beside libgomp's, with a spin that
// PADDLEC_SPIN_US does not bound, and Debian's oneDNN cannot run on it.
//
// libgomp's own wait: by default 300,000 spins before sleeping (milliseconds), which made paddlec
// 5-10x slower beside busy processes. libgomp reads it once, from the environment, in its load-time
// constructor, which runs before any code of ours (glibc initializes a library's dependencies first,
// and a setenv from .preinit_array is undone by libc's own initializer), so `paddlec run` and `train`
// re-execute themselves once with GOMP_SPINCOUNT set (ReexecWithBoundedSpin), and the Python package
// sets it before it loads its module, from a module of its own that loads nothing else
// (runtime/spin_count.h: the same count both ways).
//
// Busy machines: while more threads want the cores than there are, a run uses one thread for
// everything (MachineBusy: other processes' runnable threads, from /proc/loadavg less the calling
// thread and our running workers, plus the run's own threads), unless its team is bound one thread
// to a CPU. Unbound, two threads beside busy processes got about one CPU between them and waited
// for whichever the scheduler had left out, or stacked on one CPU; one thread was as fast. Beside
// two busy processes (ms per step, 2 threads, median of 5 alternating runs, one thread against
// two): LeNet training batch 64 25.5 / 36.5, LeNet inference batch 64 3.39 / 5.46, MLP training
// batch 512 14.7 / 18.0.
//
// Bound teams: the CLI and the benchmark, whose threads are their own, bind a team that covers
// every CPU of the process (BindTeamsToCpus, TeamCpus; OMP_PROC_BIND, when set, is libgomp's to
// apply instead). The scheduler then puts one busy process beside each thread rather than a thread
// beside both, and two threads of ours never share a CPU. A bound team keeps its threads on a busy
// machine, and three things make them pay there: no wait yields (a yield gave the CPU to a busy
// process for its whole 1.4 ms slice), workers sleep on futexes after the bounded spin, and workers
// ask for the scheduler's shortest slice, so that a woken one preempts a busy process at once
// (RequestShortSlice, kWorkerSliceNanos). Beside two busy processes, ms per step, medians of 2-3
// runs (means in brackets), one thread / the bound team: MLP inference batch 1 0.027-0.030
// [0.040-0.044] / 0.012-0.013 [0.027-0.029], LeNet inference batch 1 0.071-0.075 [0.100-0.112] /
// 0.045-0.046 [0.102-0.107], MLP inference batch 64 0.42 [0.60] / 0.217-0.218 [0.49-0.51], LeNet
// inference batch 64 2.82-2.87 [3.81-3.86] / 1.51-1.56 [3.15-3.24], MLP training batch 64 1.53-1.56
// [2.05-2.11] / 0.870-0.874 [1.85-1.89], batch 512 9.03-9.38 [12.2-12.5] / 8.81-8.88 [10.2-10.5],
// LeNet training batch 64 19.7-24.7 [26.8-31.3] / 21.9-22.3 [21.6-22.3], the ResNet bench 190-200 /
// 177-185. The team's medians are the idle machine's where both threads got their CPUs within a
// step; its means are a CPU's worth. Without any one of the three, or with the caller bound only
// during runs, the team lost its gain: unbound, MLP inference batch 1 took 0.040-0.044 ms in 3 of 6
// runs (the worker beside both busy processes); with yields, LeNet inference batch 1 0.080-0.083;
// with the default slice, LeNet inference batch 64 2.83-2.92. The caller's own slice made no
// difference (LeNet training 21.6-21.8 against 21.5-21.9). Without BindTeamsToCpus (the Python
// package, whose caller's thread is its user's: a bound thread passes its CPU on to the threads it
// creates) a busy machine gets one thread, as before.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "paddlec/core/error.h"
#include "paddlec/runtime/spin_count.h"

namespace paddlec::runtime {

/// Threads per core an executor may use at most: more only oversubscribes, and libgomp overflows
/// its stack creating tens of thousands of workers.
inline constexpr int kMaxThreadsPerCore = 4;
/// The most CPU threads an executor accepts on this machine (kMaxThreadsPerCore per core).
int MaxThreads();
/// OK for 0 (one thread per core) and 1..MaxThreads(); otherwise an error stating the range.
Status CheckThreadCount(int64_t threads);

/// Sets GOMP_SPINCOUNT to BoundedSpinCount() (runtime/spin_count.h) unless the user set
/// OMP_WAIT_POLICY or GOMP_SPINCOUNT; returns whether it set it.
bool SetBoundedSpinEnv();
/// For main(): when SetBoundedSpinEnv sets the variable, replaces the process by a fresh copy of
/// itself (same arguments) whose libgomp starts with it; returns when nothing needed doing or the
/// exec failed, having warned about a PADDLEC_SPIN_US that is not a number of at least 0 (the copy
/// warns, not the process it replaces: core/env.h).
void ReexecWithBoundedSpin(char** argv);
/// Under OpenMP binding (OMP_PROC_BIND), widens the calling thread's CPUs back to every place's, as
/// they were before libgomp bound it; returns whether it did. ReexecWithBoundedSpin calls it first.
bool UnbindForExec();

/// The calling thread's kernel-thread settings, saved by EnterKernelThreads and restored by
/// LeaveKernelThreads.
struct KernelThreadState {
  int threads = 0;
  int executor_threads = 0;
  uint32_t mxcsr = 0;
  bool tasks_on_openmp = false;
};

/// Applies an executor's `threads` (one while the machine is busy, unless the team is bound) and
/// the denormal mode (flush = FTZ and DAZ on) to the calling thread and to the OpenMP workers it will
/// use, and where RunTasks runs its jobs (`tasks_on_openmp`: see RunTasks); returns what the calling
/// thread had.
KernelThreadState EnterKernelThreads(int threads, bool flush_denormals, bool tasks_on_openmp = false);
void LeaveKernelThreads(const KernelThreadState& saved);

/// The CPUs a team of `threads` is bound to, by thread number: every CPU of `allowed` (the process's,
/// in order), the caller's `current_cpu` first; empty (unbound) unless the team covers them all.
/// Bound one to a CPU, a team loses nothing where it would use every CPU anyway, and the scheduler
/// cannot stack two of its threads on one CPU beside busy processes. Smaller teams are left to the
/// scheduler, which may have idle CPUs for them, and so are teams under OMP_PROC_BIND (libgomp
/// binds them as told; set to false, nothing is bound).
std::vector<int> TeamCpus(int threads, std::vector<int> allowed, int current_cpu);
/// For programs whose threads that run executors are their own (the CLI, the benchmark), not a
/// caller's: from now on EnterKernelThreads binds every team that TeamCpus binds, the calling
/// thread included, for as long as that thread runs teams of that size. Off by default, since a
/// bound thread passes its binding on to the threads it creates (a Python program's data loaders,
/// say). A bound team keeps all its threads while the machine is busy.
void BindTeamsToCpus(bool on = true);

/// The scheduler slice paddlec's workers ask for, in ns: the least Linux takes (sched_setattr, 6.12
/// on). A woken thread whose slice is shorter than the running one's preempts it at once; with the
/// default slice (1.4 ms on this VM) a worker woken for a job beside a busy process waited for the
/// rest of that process's slice. The share of the CPU stays the same. Beside two busy processes, a
/// bound team, ms per step, 2 runs, default slice / short: LeNet inference batch 64 2.83-2.92 /
/// 1.49-1.64, MLP inference batch 1 even (0.012-0.013).
inline constexpr uint64_t kWorkerSliceNanos = 100'000;
/// Asks the scheduler for a kWorkerSliceNanos slice for the calling thread, keeping its policy
/// (SCHED_OTHER only) and nice value; returns whether the request was taken (a kernel before 6.12
/// takes and ignores it: SliceNanos tells). Every worker asks when it starts.
bool RequestShortSlice();
/// The calling thread's scheduler slice in ns; 0 where it cannot be read.
uint64_t SliceNanos();

/// Whether FTZ and DAZ are both on in the calling thread.
bool DenormalsFlushed();

/// Whether more threads want this machine's cores than it has, counting `own_threads` of ours (from
/// /proc/loadavg's runnable count, less this thread and our running workers; sampled at most every
/// 50 ms).
bool MachineBusy(int own_threads);
/// How many of this process's worker threads (RunTasks' and the OpenMP workers EnterKernelThreads
/// set up, all named "paddlec-worker") are running or waiting for a CPU, the calling thread aside.
/// An idle worker spins for a while before it sleeps, and two pools' workers may spin at once: they
/// must not count as other processes.
int PoolWorkersRunning();
/// MachineBusy's rule: busy when the threads of other processes among `runnable` (which holds the
/// caller and `workers_running` of ours) and `own_threads` exceed `cpus`; not busy when `runnable`
/// is unknown (-1).
bool BusyVerdict(int runnable, int workers_running, int own_threads, int cpus);
/// Tests: makes MachineBusy answer `busy` (1 or 0) instead of measuring; -1 measures again.
void OverrideMachineBusyForTesting(int busy);

/// The threads a oneDNN primitive of `flops`, or a product or convolution of paddlec's own, should
/// use: one below 2 MFLOP (oneDNN joins its threads at spinning barriers inside a primitive, and a
/// descheduled thread there stalls a microsecond-sized op for whole scheduler ticks) or while the
/// machine is busy and the team unbound; else the running executor's count.
int OneDnnThreads(double flops);

/// How many ScopedMaxThreads of more than one thread the calling thread has made: oneDNN primitives
/// it ran on several of libgomp's workers. An executor's plan that ran any shares those workers with
/// RunTasks from its next run on (EnterKernelThreads' `tasks_on_openmp`).
int64_t ParallelOneDnnRuns();

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

/// The threads the calling thread's own kernel loops (RunTasks, ParallelFor) use: the running
/// executor's count, or one while the machine is busy (EnterKernelThreads).
int LoopThreads();

/// A task of RunTasks: fn(ctx, index, slot).
struct TaskFn {
  void (*fn)(void*, int64_t, int);
  void* ctx;
};
void RunTasks(int64_t tasks, int threads, TaskFn fn);

/// Runs task(i, slot) for every i in [0, tasks) on at most `threads` threads: the calling thread
/// (slot 0) and workers of a pool kept per calling thread (slots 1..threads-1), each taking a task
/// when free, in FTZ/DAZ mode as the caller is: the caller the lowest index left, a worker the
/// highest. Returns once every task has run. Unlike an
/// OpenMP region, whose closing barrier waits for every thread of the team, it waits only for tasks
/// that have started: a worker another process keeps off its CPU finds nothing left when it wakes
/// and holds no one up. `slot` indexes per-thread scratch (a thread runs one task at a time). Called
/// from inside a task, it runs every task on the calling thread.
///
/// Inside a run entered with `tasks_on_openmp` (one whose kernels also call oneDNN: see the top of
/// this file), the job runs on the calling thread's OpenMP team instead, with the same two-ended
/// claims. The region's closing barrier waits for every worker, but beside busy processes a run has
/// one thread and no team.
template <class F>
void RunTasks(int64_t tasks, int threads, F&& task) {
  using Fn = std::remove_reference_t<F>;
  RunTasks(tasks, threads,
           TaskFn{[](void* ctx, int64_t i, int slot) { (*static_cast<Fn*>(ctx))(i, slot); },
                  const_cast<void*>(static_cast<const void*>(&task))});
}

}  // namespace paddlec::runtime
