// Test helpers for what the one-op OpTest harness does not cover: programs written as text, ops run
// with several threads or steps, ops whose outputs are their inputs, and gradient makers' output.
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "paddlec/exec/executor.h"
#include "paddlec/ir/program.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"

namespace paddlec::testing {

/// Parses a ProgramDesc (or CompiledProgram) textproto and runs `pipeline` on it.
StatusOr<std::unique_ptr<ir::Module>> CompileText(const std::string& text,
                                                  const std::string& pipeline = "validate,infer-shape",
                                                  const std::string& file = "test.pbtxt");

/// A one-op program: `feeds` declares the input variables (named in any slot, @EMPTY@ allowed) by
/// their tensors; the other variables the op writes are declared without shapes.
StatusOr<std::unique_ptr<ir::Module>> CompileOp(const ir::pb::OpDesc& op, const std::map<std::string, Tensor>& feeds);

struct RunOptions {
  int threads = 1;
  uint64_t seed = 7;
  Place place = Place::CPU();
  uint64_t start_step = 0;  // steps run before (a resumed training run)
};

/// Runs block 0 of `module` once with `feeds` and returns host copies of `fetch`.
StatusOr<std::map<std::string, Tensor>> RunModule(ir::Module& module, const std::map<std::string, Tensor>& feeds,
                                                  const std::vector<std::string>& fetch, RunOptions options = {});

/// CompileOp + RunModule, failing the test on any error.
std::map<std::string, Tensor> RunOp(const ir::pb::OpDesc& op, const std::map<std::string, Tensor>& feeds,
                                    const std::vector<std::string>& fetch, RunOptions options = {});

/// RunOp for the common case: each input slot bound to one variable named like the slot, each
/// output slot likewise.
std::map<std::string, Tensor> RunOpNamedBySlot(const std::string& type,
                                               const std::vector<std::pair<std::string, Tensor>>& inputs,
                                               const std::vector<ir::pb::OpDesc::Attr>& attrs,
                                               const std::vector<std::string>& outputs, RunOptions options = {});

/// The ops a forward op's gradient maker emits (no variable in the no-grad set unless given).
std::vector<ir::pb::OpDesc> MakeGradOps(const ir::pb::OpDesc& fwd, const std::unordered_set<std::string>& no_grad = {});

/// Arguments of slot `slot` of an OpDesc's inputs (or outputs).
std::vector<std::string> SlotArgs(const ir::pb::OpDesc& op, const std::string& slot, bool input = true);

/// One op over named variables, compiled once and run step by step: an output may be one of the
/// inputs (running statistics, parameter updates) and state carries over between steps.
class StepRunner {
 public:
  /// `inputs`/`outputs`: slot -> variable name (a name may appear on both sides).
  StepRunner(std::string type, std::map<std::string, std::string> inputs, std::map<std::string, std::string> outputs,
             std::vector<ir::pb::OpDesc::Attr> attrs = {});
  ~StepRunner();
  /// Compiles the op with `feeds` as the variables' first values and prepares a plan.
  Status Start(const std::map<std::string, Tensor>& feeds, RunOptions options = {});
  Status Step();
  /// Replaces a variable's value (its shape may change) before the next Step.
  Status Set(const std::string& name, const Tensor& value);
  /// A host copy of a variable's current value.
  Tensor Get(const std::string& name);
  /// The variable's tensor itself, for tests that change its memory behind the plan's back.
  Tensor& Value(const std::string& name) { return scope_.Var(name).tensor(); }

 private:
  std::string type_;
  std::map<std::string, std::string> inputs_, outputs_;
  std::vector<ir::pb::OpDesc::Attr> attrs_;
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<exec::Executor> exec_;
  runtime::Scope scope_;
  std::unique_ptr<exec::Plan> plan_;
};

}  // namespace paddlec::testing
