// Plan: a block lowered for execution on one device.
//
// exec/ sits above ops/ (it resolves and runs kernels); runtime/ sits below it (tensors, scopes and
// device contexts, which kernels use). Includes run one way: exec -> ops -> runtime.
//
// Built once per (block, place, scope): every op's kernel is resolved and created (attributes
// decoded, primitives cached) and every input/output variable bound, so Run() does no string
// hashing, no registry lookups and no allocation while shapes stay the same. Each op's shapes are
// inferred (and its outputs allocated) just before it first runs, and again only when an input
// from outside the plan (a feed, a parameter) changes shape, which is how a variable batch size
// works, or when an op without a shape function (feed, control flow) produces new shapes: then the
// ops after it are prepared again. A plan may cover a contiguous range of the block's ops
// ([begin, end): the partial network run), reading and writing the same scope as other plans.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "paddlec/core/error.h"
#include "paddlec/ir/program.h"
#include "paddlec/ops/kernel.h"
#include "paddlec/runtime/device_context.h"
#include "paddlec/runtime/scope.h"

namespace paddlec::ops {
class OpRegistry;
class OpInfo;
}  // namespace paddlec::ops

namespace paddlec::exec {

using runtime::CapturedWork;
using runtime::DeviceContext;
using runtime::Scope;
using runtime::Variable;

struct PlanOptions {
  int op_begin = 0;
  int op_end = -1;  // -1 = to the end of the block
  /// The program's random seed; each random op derives its own from it and its index.
  uint64_t seed = 0;
  /// Steps already run by earlier plans of the same program (resuming): see KernelInit::start_step.
  uint64_t start_step = 0;
  bool profile = false;
  /// Record the steady-state step once as a CUDA graph and replay it (GPU places). Falls back to
  /// running the ops one by one, with a warning, when the device or an op cannot be replayed.
  bool cuda_graph = false;
  /// CPU: run kernels with denormals flushed to zero (FTZ/DAZ) in every thread, as TensorFlow does:
  /// denormal operands cost ~100x on many CPUs (Adam's decaying moments reach them). false keeps
  /// IEEE gradual underflow. The executor sets it from ExecutorOptions.
  bool flush_denormals = true;
  /// After every op, fail on a NaN or Inf in its floating-point outputs (exec/nan_inf_check.h),
  /// naming the op, its block and index, the variable and the element. Chosen when the plan is
  /// built: a plan without it runs no check at all.
  bool check_nan_inf = false;
};

struct OpTypeProfile {
  std::string type;
  int64_t calls = 0;
  double total_ms = 0;
};

class Plan {
 public:
  static StatusOr<std::unique_ptr<Plan>> Build(ir::Block& block, Scope& scope, DeviceContext& device,
                                               const ops::OpRegistry& registry, const PlanOptions& options = {});
  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  /// Runs the ops once; after a successful run no collective it started is still in flight.
  Status Run();

  int num_steps() const { return static_cast<int>(steps_.size()); }
  /// How many times shapes were inferred from the first op on (1 + one per external shape change).
  int64_t shape_inferences() const { return shape_inferences_; }
  void set_profiling(bool on) { profile_ = on; }
  /// Per-op-type call counts and times over every profiled Run, by descending time.
  std::vector<OpTypeProfile> ProfileByType() const;
  /// Total time of profiled Runs.
  double profiled_ms() const { return profiled_ms_; }
  /// Whether the next Run runs paddlec's loops on the OpenMP team oneDNN uses (runtime/threads.h,
  /// RunTasks): where the latest Run started oneDNN primitives on several threads.
  bool tasks_on_openmp() const { return tasks_on_openmp_; }

 private:
  struct Step;
  struct External {
    Variable* var;
    Dims dims;
    int step;  // the step that first read it
  };
  Plan() = default;
  Status PrepareStep(int i);
  /// Forgets the preparation of steps [i, end).
  void Unprepare(int i);
  bool ExternalShapesChanged() const;
  Error StepError(const Step& step, Error e) const;
  template <bool kProfile>
  Status RunSteps();
  /// Runs a step from the recorded graph, recording it first when the plan is fully prepared.
  Status RunRecorded();
  /// The end of a run: orders the device's later work after the collectives the run queued
  /// (DeviceContext::JoinPendingWork) and waits for those it started on the CPU
  /// (runtime::WaitForCollectives).
  Status Finish(Status st);

  ir::Block* block_ = nullptr;
  DeviceContext* device_ = nullptr;
  std::vector<std::unique_ptr<Step>> steps_;
  std::vector<External> externals_;
  std::unordered_map<Variable*, int> producer_;  // output variable -> first prepared step writing it
  int prepared_ = 0;                    // steps [0, prepared_) have shapes and memory
  bool use_graph_ = false;
  std::unique_ptr<CapturedWork> graph_;
  std::unique_ptr<ops::SubBlockFactory> sub_blocks_;
  std::unique_ptr<ops::ScopedSubBlockFactory> scoped_sub_blocks_;
  bool profile_ = false;
  int cpu_threads_ = 0;  // the CPU context's thread count, applied while Run runs; 0 off the CPU
  bool flush_denormals_ = true;
  bool tasks_on_openmp_ = false;  // RunTasks on the OpenMP team: set once a run used oneDNN's threads
  int64_t shape_inferences_ = 0;
  double profiled_ms_ = 0;
};

}  // namespace paddlec::exec
