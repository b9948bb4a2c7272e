// What `run` and `train` share: loading and compiling a program, creating the executor, setting up
// parameters (startup program or a params file) and checking feeds against the declarations.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "paddlec/core/error.h"
#include "paddlec/exec/executor.h"
#include "paddlec/ir/program.h"
#include "paddlec/runtime/scope.h"

namespace paddlec::driver {

struct SessionOptions {
  std::string program;
  std::string input_format;
  /// A separate startup ProgramDesc (PaddlePaddle keeps a program's initializers there).
  std::string startup;
  std::string device = "cpu";
  uint64_t seed = 0;
  int threads = 0;
  bool keep_denormals = false;
  bool check_nan_inf = false;  // every plan checks each op's outputs (PlanOptions::check_nan_inf)
  /// The pipeline for programs that are not compiled yet (compiled ones are re-validated only).
  std::string passes = "validate,infer-shape,init-params";
  /// For training: compile with this pipeline when the program has no gradients yet (the loss
  /// option of its backward pass is filled in by GuessLoss when empty). A program that holds its
  /// own backward and optimizer ops (PaddlePaddle's training programs) is used as it is.
  const struct CompileOptions* train = nullptr;
  /// Variables the caller will fetch: no pass (-O2's plan-memory and layout) renames, reuses or
  /// re-lays them out (PassContext::kept).
  std::vector<std::string> fetches;
};

/// The loss when none is named: the one scalar float output of the global block that no op reads.
StatusOr<std::string> GuessLoss(ir::Module& m);

/// Replaces `m`'s startup program by the ProgramDesc in `path`.
Status AttachStartup(std::unique_ptr<ir::Module>& m, const std::string& path);

/// True when the global block holds backward or optimizer ops (op_role), as a training program
/// that PaddlePaddle wrote does.
bool HasTrainingOps(const ir::Module& m);

class Session {
 public:
  static StatusOr<std::unique_ptr<Session>> Open(const SessionOptions& options);

  ir::Module& module() { return *module_; }
  exec::Executor& executor() { return *executor_; }
  runtime::Scope& scope() { return scope_; }
  ir::Block& main_block() { return module_->main().global_block(); }

  /// Runs the startup program (parameter initializers).
  Status InitializeParameters();
  /// Loads the module's parameters from a params file instead.
  Status LoadParameters(const std::string& path);
  Status SaveParameters(const std::string& path);

  /// Checks a host tensor against the declaration of feed target `name` and places it in the scope.
  Status Feed(const std::string& name, const runtime::Tensor& host);
  /// Names of the feed targets, in order.
  std::vector<std::string> FeedNames() const;
  /// The declared dtype and dims (-1 for unknown sizes) of feed target `name`.
  StatusOr<std::pair<DType, Dims>> FeedDeclaration(const std::string& name) const;
  /// The feed targets not fed yet.
  std::vector<std::string> Unfed() const;
  /// A host copy of variable `name` after a run; an error if it does not exist or holds no value.
  StatusOr<runtime::Tensor> Fetch(const std::string& name);

 private:
  Session() = default;
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<exec::Executor> executor_;
  runtime::Scope scope_;
  std::vector<std::string> fed_;
  // A training program with its own optimizer ops, and no startup program to initialize their state.
  bool optimizer_state_uninitialized_ = false;
  std::shared_ptr<runtime::Allocator> host_alloc_ = runtime::CpuCachingAllocator::Create();
};

}  // namespace paddlec::driver
