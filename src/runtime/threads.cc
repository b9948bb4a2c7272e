// The CPU kernels' threads: per-run thread counts and denormal modes, and busy-machine detection.
#include "paddlec/runtime/threads.h"

#include <dirent.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "paddlec/core/env.h"

namespace paddlec::runtime {
namespace {

constexpr uint32_t kFtzDaz = 0x8040;  // MXCSR flush-to-zero (bit 15) and denormals-are-zero (bit 6)
constexpr double kSerialFlops = 2.0e6;

/// The running executor's thread count on this thread (0 outside a run).
thread_local int t_executor_threads = 0;
/// Whether the calling thread is running a task of RunTasks (which then runs nested work inline).
thread_local bool t_in_task = false;
/// Whether RunTasks runs its jobs on the OpenMP team (EnterKernelThreads' `tasks_on_openmp`).
thread_local bool t_tasks_on_openmp = false;
/// ScopedMaxThreads of more than one thread made by this thread (ParallelOneDnnRuns).
thread_local int64_t t_parallel_onednn_runs = 0;

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The name of every worker thread of ours, TaskPool's and libgomp's (top -H and debuggers show it;
/// PoolWorkersRunning finds them by it).
constexpr char kWorkerName[] = "paddlec-worker";

/// The kernel's struct sched_attr as of its first version (48 bytes); glibc 2.36 has no wrapper.
struct SchedAttr {
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
};

void NameThisWorker() {
  pthread_setname_np(pthread_self(), kWorkerName);
  RequestShortSlice();
}

/// When the calling thread's team is bound (OMP_PROC_BIND, or TeamCpus), the CPUs of each thread of
/// its OpenMP team, by thread number, as EnterKernelThreads found them; empty otherwise.
thread_local std::vector<cpu_set_t> t_team_cpus;
/// Whether the calling thread's team is bound one thread to a CPU, by libgomp or by TeamCpus.
thread_local bool t_team_bound = false;
/// Whether EnterKernelThreads has bound the calling thread (TeamCpus), and the CPUs it had before.
thread_local bool t_caller_bound = false;
thread_local cpu_set_t t_caller_cpus;
/// BindTeamsToCpus: whether teams that cover the process's CPUs are bound.
std::atomic<bool> g_bind_teams{false};

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

/// How long an idle worker spins before it sleeps: PADDLEC_SPIN_US, else kDefaultSpinMicros, with a
/// warning for a bad value at the first read (BoundedSpinCount reads it silently, so a process about
/// to be replaced by a copy of itself leaves the warning to the copy).
double SpinMicros() {
  static const double micros = EnvNonNegative(kSpinMicrosSwitch).value_or(kDefaultSpinMicros);
  return micros;
}

}  // namespace

bool SetBoundedSpinEnv() {
  const std::optional<int64_t> count = BoundedSpinCount();
  return count && setenv("GOMP_SPINCOUNT", std::to_string(*count).c_str(), 0) == 0;
}

bool UnbindForExec() {
  if (omp_get_proc_bind() == omp_proc_bind_false || omp_get_num_places() <= 0) return false;
  cpu_set_t all;
  CPU_ZERO(&all);
  std::vector<int> ids;
  for (int place = 0; place < omp_get_num_places(); ++place) {
    ids.resize(static_cast<size_t>(omp_get_place_num_procs(place)));
    omp_get_place_proc_ids(place, ids.data());
    for (int cpu : ids)
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &all);
  }
  return CPU_COUNT(&all) > 0 && sched_setaffinity(0, sizeof(all), &all) == 0;
}

void ReexecWithBoundedSpin(char** argv) {
  if (SetBoundedSpinEnv()) {
    // Under OMP_PROC_BIND libgomp's constructor has bound this thread to the first place, and the
    // binding would outlive exec: the new libgomp would see one CPU and put every thread on it.
    UnbindForExec();
    ::execv("/proc/self/exe", argv);
    // Still here: run on with libgomp's own policy.
  }
  // Read now, so that a bad PADDLEC_SPIN_US is warned about at the start of every run, not only
  // when a worker first waits.
  SpinMicros();
}

int MaxThreads() { return kMaxThreadsPerCore * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

Status CheckThreadCount(int64_t threads) {
  if (threads >= 0 && threads <= MaxThreads()) return Status::OK();
  return MakeError(ErrorCode::kInvalidArgument,
                   "thread count {} is out of range: use 1 to {} ({} per core of this machine), or 0 for one per core",
                   threads, MaxThreads(), kMaxThreadsPerCore);
}

void OverrideMachineBusyForTesting(int busy) { g_busy_override.store(busy); }

int PoolWorkersRunning() {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return 0;
  const pid_t self = static_cast<pid_t>(::syscall(SYS_gettid));
  int running = 0;
  char path[64], stat[256];
  while (const dirent* e = ::readdir(dir)) {
    const int tid = std::atoi(e->d_name);
    if (tid <= 0 || tid == self) continue;
    std::snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
    std::FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;  // the thread has just ended
    const size_t n = std::fread(stat, 1, sizeof(stat) - 1, f);
    std::fclose(f);
    stat[n] = '\0';
    // "tid (name) S ...": a name may hold spaces and parentheses, so the state follows the last ')'.
    const char* open = std::strchr(stat, '(');
    const char* close = std::strrchr(stat, ')');
    if (open == nullptr || close == nullptr || close[1] != ' ') continue;
    const std::string_view name(open + 1, static_cast<size_t>(close - open - 1));
    running += name == kWorkerName && close[2] == 'R';
  }
  ::closedir(dir);
  return running;
}

bool BusyVerdict(int runnable, int workers_running, int own_threads, int cpus) {
  if (runnable < 0) return false;  // unknown: assume the machine is ours
  const int others = runnable - 1 - workers_running;
  return others + std::max(own_threads, 1) > cpus;
}

bool MachineBusy(int own_threads) {
  if (int o = g_busy_override.load(std::memory_order_relaxed); o >= 0) return o == 1;
  static std::atomic<int64_t> checked_at{-1};
  static std::atomic<bool> busy{false};
  static const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t now = NowMicros(), last = checked_at.load(std::memory_order_relaxed);
  if (last < 0 || now - last > 50000) {
    checked_at.store(now, std::memory_order_relaxed);
    // Our idle workers spin before they sleep, RunTasks' and libgomp's at once after a oneDNN
    // primitive: counted as other processes, they made MLP training on a quiet machine look busy in
    // 16-19 of 40 samples (paddlec_bench train, batch 64 and 512), and one thread ran those 50 ms.
    // The scan of our threads is needed only where the runnable count alone says busy. The count is
    // then read again after it: read before, it still held workers whose spin ended during the scan,
    // and MLP training looked busy in 16-19 of 40 samples again.
    bool now_busy = BusyVerdict(RunnableTasks(), 0, own_threads, cpus);
    if (now_busy) {
      const int workers = PoolWorkersRunning();
      now_busy = BusyVerdict(RunnableTasks(), workers, own_threads, cpus);
    }
    busy.store(now_busy, std::memory_order_relaxed);
  }
  return busy.load(std::memory_order_relaxed);
}

std::vector<int> TeamCpus(int threads, std::vector<int> allowed, int current_cpu) {
  if (threads < 2 || static_cast<int>(allowed.size()) != threads) return {};
  // The caller keeps the CPU it is on, so that binding it moves nothing.
  if (auto it = std::find(allowed.begin(), allowed.end(), current_cpu); it != allowed.end())
    std::rotate(allowed.begin(), it, it + 1);
  return allowed;
}

void BindTeamsToCpus(bool on) { g_bind_teams.store(on); }

uint64_t SliceNanos() {
  SchedAttr attr{};
  attr.size = sizeof(attr);
  return ::syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) == 0 ? attr.runtime : 0;
}

bool RequestShortSlice() {
  SchedAttr attr{};
  attr.size = sizeof(attr);
  if (::syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0 || attr.policy != SCHED_OTHER) return false;
  attr.size = sizeof(attr);
  attr.flags = 0;
  attr.runtime = kWorkerSliceNanos;
  return ::syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
}

KernelThreadState EnterKernelThreads(int threads, bool flush_denormals, bool tasks_on_openmp) {
  // Which settings this thread's OpenMP workers already have: libgomp keeps one pool of workers per
  // calling thread and reuses them, so they are set once, not at every run.
  struct Workers {
    int count = 0;
    bool flush = false;
    bool bind = false;
  };
  thread_local Workers workers;
  KernelThreadState saved{omp_get_max_threads(), t_executor_threads, _mm_getcsr(), t_tasks_on_openmp};
  t_tasks_on_openmp = tasks_on_openmp;
  const uint32_t mxcsr = flush_denormals ? (saved.mxcsr | kFtzDaz) : (saved.mxcsr & ~kFtzDaz);
  if (mxcsr != saved.mxcsr) _mm_setcsr(mxcsr);
  const bool bind = g_bind_teams.load(std::memory_order_relaxed);
  if (threads > 1 && (workers.flush != flush_denormals || workers.count < threads || workers.bind != bind)) {
    const bool libgomp_binds = omp_get_proc_bind() != omp_proc_bind_false;
    // Ours to decide only where the user set no OMP_PROC_BIND, false included.
    const bool ours_to_bind = bind && !libgomp_binds && std::getenv("OMP_PROC_BIND") == nullptr;
    cpu_set_t process_cpus;  // the caller's CPUs before any binding of ours
    if (t_caller_bound)
      process_cpus = t_caller_cpus;
    else if (sched_getaffinity(0, sizeof(process_cpus), &process_cpus) != 0)
      CPU_ZERO(&process_cpus);
    std::vector<int> allowed, cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &process_cpus)) allowed.push_back(c);
    if (ours_to_bind) cpus = TeamCpus(threads, allowed, sched_getcpu());
    const bool ours = !cpus.empty();
    const bool was_bound = t_caller_bound;  // read before the region: t_caller_bound is thread_local
    if (ours && !was_bound) t_caller_cpus = process_cpus;
    // Recorded for RunTasks' workers, which then run where the OpenMP threads of their number do.
    t_team_cpus.assign(libgomp_binds || ours ? static_cast<size_t>(threads) : 0, cpu_set_t{});
    cpu_set_t* team_cpus = t_team_cpus.data();  // the caller's: t_team_cpus is thread_local
#pragma omp parallel num_threads(threads)
    {
      const int n = omp_get_thread_num();
      _mm_setcsr(flush_denormals ? (_mm_getcsr() | kFtzDaz) : (_mm_getcsr() & ~kFtzDaz));
      if (n != 0) NameThisWorker();
      // Bound one to a CPU, or given the process's CPUs back after an earlier team's binding
      // (RunTasks' workers keep the CPU they were created on).
      if ((ours || was_bound) && !allowed.empty()) {
        cpu_set_t mine = process_cpus;
        if (ours) {
          CPU_ZERO(&mine);
          CPU_SET(cpus[static_cast<size_t>(n)], &mine);
        }
        sched_setaffinity(0, sizeof(mine), &mine);
      }
      if (libgomp_binds || ours) sched_getaffinity(0, sizeof(cpu_set_t), &team_cpus[n]);
    }
    t_caller_bound = ours;
    workers = {threads, flush_denormals, bind};
    t_team_bound = libgomp_binds || ours;
  }
  t_executor_threads = threads;
  // A team bound one thread to a CPU keeps its threads on a busy machine (runtime/threads.h,
  // "Busy machines").
  const int now = threads > 1 && !t_team_bound && MachineBusy(threads) ? 1 : threads;
  if (now != saved.threads) omp_set_num_threads(now);
  return saved;
}

void LeaveKernelThreads(const KernelThreadState& saved) {
  t_executor_threads = saved.executor_threads;
  t_tasks_on_openmp = saved.tasks_on_openmp;
  if (omp_get_max_threads() != saved.threads) omp_set_num_threads(saved.threads);
  if (_mm_getcsr() != saved.mxcsr) _mm_setcsr(saved.mxcsr);
}

bool DenormalsFlushed() { return (_mm_getcsr() & kFtzDaz) == kFtzDaz; }

int OneDnnThreads(double flops) {
  const int executor = t_executor_threads > 0 ? t_executor_threads : omp_get_max_threads();
  if (executor <= 1 || flops < kSerialFlops) return 1;
  return !t_team_bound && MachineBusy(executor) ? 1 : executor;
}

int64_t ParallelOneDnnRuns() { return t_parallel_onednn_runs; }

ScopedMaxThreads::ScopedMaxThreads(int threads) : saved_(omp_get_max_threads()) {
  if (threads > 1) ++t_parallel_onednn_runs;
  if (threads != saved_) omp_set_num_threads(threads);
}

ScopedMaxThreads::~ScopedMaxThreads() {
  if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
}

namespace {

/// A wait's spin: whether `ready` held at a look within the bounded spin (PADDLEC_SPIN_US), with a
/// `pause` between looks and the clock read every 64th. It never yields: beside a busy process,
/// sched_yield handed the CPU to that process for a whole scheduler slice (1.4 ms here) although the
/// thread that would end the wait was already running elsewhere. A wait that outlasts the spin
/// sleeps on a futex instead, and a woken worker preempts a busy process at once
/// (RequestShortSlice). Two pools spinning against each other (machine.md, pitfall C) hold each
/// other up for that bound at most; on an idle machine, ms per step, 2 runs, yielding / not: LeNet
/// inference batch 64 1.441-1.456 / 1.450-1.454, LeNet training 9.14-9.31 / 9.05-9.07, MLP
/// training batch 512 4.649-4.654 / 4.625-4.638.
template <class Ready>
bool SpinUntil(Ready&& ready) {
  const int64_t spin = static_cast<int64_t>(SpinMicros()), start = NowMicros();
  for (uint32_t looks = 1;; ++looks) {
    if (ready()) return true;
    _mm_pause();
    if ((looks & 63) == 0 && NowMicros() - start > spin) return ready();
  }
}

/// Two-ended claims on a job of RunTasks: a claim word's low 32 bits count the tasks taken from the
/// front (their high 16 bits) and from the back (the low 16), RunTasks keeping every job under
/// kMaxClaims tasks. NextTask is the task a claim from that end would take, or -1 when all are
/// taken; the claim adds ClaimStep to the word.
constexpr int kFrontShift = 16;
int64_t NextTask(uint64_t low, int64_t tasks, bool from_front) {
  const int64_t front = static_cast<int64_t>((low >> kFrontShift) & 0xffffu),
                back = static_cast<int64_t>(low & 0xffffu);
  if (front + back >= tasks) return -1;
  return from_front ? front : tasks - 1 - back;
}
uint64_t ClaimStep(bool from_front) { return from_front ? uint64_t{1} << kFrontShift : 1; }

/// Forks since the first TaskPool, counted in the child: a child's count is its parent's plus one.
/// TaskPool compares it at every job to notice that its workers stayed behind in the parent; it
/// compared getpid() before, a system call at every job (glibc caches no pid), 0.12 us in this VM.
std::atomic<uint32_t> g_fork_generation{0};
uint32_t ForkGeneration() {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, [] { g_fork_generation.fetch_add(1, std::memory_order_relaxed); });
    return true;
  }();
  (void)registered;
  return g_fork_generation.load(std::memory_order_relaxed);
}

/// The workers of one calling thread's RunTasks. A job is published as an epoch in the high half of
/// `claim_` and, in the low half, how many tasks have been claimed from its front and how many from
/// its back; a thread takes a task by compare-exchange, which fails once the epoch has moved on, so a
/// worker that wakes after its job has ended claims nothing of it and runs nothing of the next one
/// before that is whole. The caller changes the job's fields only once every claimed task is done,
/// which is why a claimed task may read them.
///
/// The caller takes tasks from the front and the workers from the back, so on two threads each runs
/// one contiguous run of tasks, as oneTBB's range splitting gives: neighbouring tasks share input
/// rows and the cache lines where their outputs meet. Handed out in index order, they alternated
/// between the cores. Medians of 6 rotating runs, ms, index order / two ends / oneTBB 2021.8 in
/// RunTasks' place: LeNet training batch 64 10.56 / 9.69 / 9.65, LeNet inference batch 64 1.71 /
/// 1.59 / 1.61 (two ends faster than index order in 6 of 6 for both); MLP steps even; the ResNet
/// bench 74.7 / 76.4 / 74.2, and 73.7 / 74.7 in 8 more alternating runs, its ops even in --profile.
/// With more threads the workers share the back, taking its tasks in turn.
class TaskPool {
 public:
  TaskPool() : fork_(ForkGeneration()) {}
  ~TaskPool() {
    // After a fork the workers are not this process's threads: nothing to stop.
    if (ForkGeneration() != fork_) return;
    stop_.store(true);
    Publish(0, 0, TaskFn{nullptr, nullptr});
    for (pthread_t t : workers_) pthread_join(t, nullptr);
  }

  // noexcept: a task that throws ends the process, as in an OpenMP region, rather than leave workers
  // running on a frame that is gone.
  void Run(int64_t tasks, int threads, TaskFn fn) noexcept {
    if (ForkGeneration() != fork_) {  // a forked child: its parent's workers are gone
      workers_.clear();
      fork_ = ForkGeneration();
    }
    Grow(threads - 1);
    done_.store(0, std::memory_order_relaxed);
    Publish(tasks, threads, fn);
    Work(0, epoch_);
    // Every task is claimed: wait for those still running on workers.
    WaitForTasks(tasks);
  }

 private:
  static constexpr int kEpochShift = 32;
  static constexpr uint64_t kClosed = 0xffffffffu;  // the low half while a job is published

  void Publish(int64_t tasks, int threads, TaskFn fn) {
    epoch_ = static_cast<uint32_t>(epoch_ + 1);
    // Closed while the fields change: a thread that read them as they changed had read an older
    // claim word first, and its compare-exchange fails against this one.
    claim_.store((uint64_t{epoch_} << kEpochShift) | kClosed, std::memory_order_seq_cst);
    tasks_.store(tasks, std::memory_order_release);
    threads_.store(threads, std::memory_order_release);
    fn_.store(fn.fn, std::memory_order_release);
    ctx_.store(fn.ctx, std::memory_order_release);
    mxcsr_.store(_mm_getcsr(), std::memory_order_release);
    claim_.store(uint64_t{epoch_} << kEpochShift, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      wake_.fetch_add(1, std::memory_order_seq_cst);
      wake_.notify_all();
    }
  }

  /// Spins for the bounded spin, then sleeps until `tasks` tasks are done. A worker that ends a task
  /// wakes the caller only when it is asleep (`joining_`): either the caller's look at done_ sees
  /// the task, or the worker sees the flag (all four accesses seq_cst).
  void WaitForTasks(int64_t tasks) {
    if (SpinUntil([&] { return done_.load(std::memory_order_acquire) >= tasks; })) return;
    for (;;) {
      const uint32_t w = join_wake_.load(std::memory_order_seq_cst);
      joining_.store(true, std::memory_order_seq_cst);
      if (done_.load(std::memory_order_seq_cst) >= tasks) break;
      join_wake_.wait(w, std::memory_order_seq_cst);
    }
    joining_.store(false, std::memory_order_relaxed);
  }

  /// Runs tasks of job `epoch` until none is left unclaimed.
  void Work(int slot, uint32_t epoch) noexcept {
    uint64_t c = claim_.load(std::memory_order_acquire);
    const bool from_front = slot == 0;
    while (static_cast<uint32_t>(c >> kEpochShift) == epoch) {
      const uint64_t low = c & 0xffffffffu;
      if (low == kClosed) {  // still being published
        _mm_pause();
        c = claim_.load(std::memory_order_acquire);
        continue;
      }
      // Read after `c`: this job's fields, or a newer job's, in which case the claim below fails.
      const int64_t task = NextTask(low, tasks_.load(std::memory_order_acquire), from_front);
      if (task < 0 || slot >= threads_.load(std::memory_order_acquire)) return;
      if (!claim_.compare_exchange_weak(c, c + ClaimStep(from_front), std::memory_order_acq_rel,
                                        std::memory_order_acquire))
        continue;
      if (const uint32_t m = mxcsr_.load(std::memory_order_relaxed); m != _mm_getcsr()) _mm_setcsr(m);
      t_in_task = true;
      fn_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), task, slot);
      t_in_task = false;
      done_.fetch_add(1, std::memory_order_seq_cst);
      if (joining_.load(std::memory_order_seq_cst)) {
        join_wake_.fetch_add(1, std::memory_order_seq_cst);
        join_wake_.notify_one();
      }
      c = claim_.load(std::memory_order_acquire);
    }
  }

  /// Under OMP_PROC_BIND a new worker runs on the CPUs of the OpenMP thread of its number
  /// (t_team_cpus): created here, it would inherit the caller's binding and share its one CPU.
  void Grow(int wanted) {
    while (static_cast<int>(workers_.size()) < wanted) {
      const int slot = static_cast<int>(workers_.size()) + 1;
      auto* arg = new std::pair<TaskPool*, int>(this, slot);
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      // An entry stays empty where libgomp gave the team fewer threads than asked.
      if (slot < static_cast<int>(t_team_cpus.size()) && CPU_COUNT(&t_team_cpus[static_cast<size_t>(slot)]) > 0)
        pthread_attr_setaffinity_np(&attr, sizeof(cpu_set_t), &t_team_cpus[static_cast<size_t>(slot)]);
      pthread_t t;
      const int failed = pthread_create(&t, &attr, &TaskPool::WorkerMain, arg);
      pthread_attr_destroy(&attr);
      if (failed != 0) {
        delete arg;  // no more workers: the caller runs what they would have
        return;
      }
      workers_.push_back(t);
    }
  }

  static void* WorkerMain(void* p) {
    auto [pool, slot] = *static_cast<std::pair<TaskPool*, int>*>(p);
    delete static_cast<std::pair<TaskPool*, int>*>(p);
    NameThisWorker();
    pool->WorkerLoop(slot);
    return nullptr;
  }

  void WorkerLoop(int slot) {
    // A worker started while a job runs may join it.
    uint32_t seen = static_cast<uint32_t>((claim_.load(std::memory_order_acquire) >> kEpochShift) - 1);
    for (;;) {
      const uint32_t epoch = WaitForJob(seen);
      seen = epoch;
      if (stop_.load(std::memory_order_acquire)) return;
      Work(slot, epoch);
    }
  }

  /// Spins for the bounded spin (SpinUntil), then sleeps until a job newer than `seen` is published.
  uint32_t WaitForJob(uint32_t seen) {
    auto current = [&] { return static_cast<uint32_t>(claim_.load(std::memory_order_seq_cst) >> kEpochShift); };
    if (uint32_t e = seen; SpinUntil([&] { return (e = current()) != seen; })) return e;
    for (;;) {
      const uint32_t w = wake_.load(std::memory_order_seq_cst);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      uint32_t e = current();
      if (e == seen) {
        wake_.wait(w, std::memory_order_seq_cst);
        e = current();
      }
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      if (e != seen) return e;
    }
  }

  uint32_t fork_;  // ForkGeneration() when the workers were this process's
  std::vector<pthread_t> workers_;
  uint32_t epoch_ = 0;  // the caller's copy of claim_'s epoch
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> tasks_{0}, done_{0};
  std::atomic<int> threads_{0}, sleepers_{0};
  std::atomic<void (*)(void*, int64_t, int)> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<uint32_t> mxcsr_{0}, wake_{0}, join_wake_{0};
  std::atomic<bool> stop_{false}, joining_{false};
};

/// RunTasks on the calling thread's OpenMP team: the caller (thread 0) claims tasks from the front of
/// the job and the others from its back (NextTask), as TaskPool's workers do, each in the caller's
/// float mode.
void RunTasksOnOpenMp(int64_t tasks, int threads, TaskFn fn) {
  std::atomic<uint64_t> claims{0};
  const uint32_t mxcsr = _mm_getcsr();
#pragma omp parallel num_threads(threads)
  {
    const int slot = omp_get_thread_num();
    const bool from_front = slot == 0;
    if (_mm_getcsr() != mxcsr) _mm_setcsr(mxcsr);
    t_in_task = true;
    for (uint64_t c = claims.load(std::memory_order_relaxed);;) {
      const int64_t task = NextTask(c, tasks, from_front);
      if (task < 0) break;
      if (!claims.compare_exchange_weak(c, c + ClaimStep(from_front), std::memory_order_relaxed)) continue;
      fn.fn(fn.ctx, task, slot);
      c = claims.load(std::memory_order_relaxed);
    }
    t_in_task = false;
  }
}

}  // namespace

int LoopThreads() { return omp_get_max_threads(); }

void RunTasks(int64_t tasks, int threads, TaskFn fn) {
  threads = static_cast<int>(std::min<int64_t>(threads, tasks));
  if (threads <= 1 || t_in_task) {
    for (int64_t i = 0; i < tasks; ++i) fn.fn(fn.ctx, i, 0);
    return;
  }
  // Claims count each end in 16 bits (NextTask): a larger job is claimed in runs of consecutive
  // tasks, fewer than kMaxClaims of them.
  constexpr int64_t kMaxClaims = int64_t{1} << 16;
  if (tasks >= kMaxClaims) {
    const int64_t run = (tasks + kMaxClaims - 2) / (kMaxClaims - 1);
    RunTasks((tasks + run - 1) / run, threads, [&](int64_t r, int slot) {
      for (int64_t i = r * run; i < std::min(tasks, (r + 1) * run); ++i) fn.fn(fn.ctx, i, slot);
    });
    return;
  }
  if (t_tasks_on_openmp) return RunTasksOnOpenMp(tasks, threads, fn);
  thread_local TaskPool pool;
  pool.Run(tasks, threads, fn);
}

}  // namespace paddlec::runtime
