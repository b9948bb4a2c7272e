// The pass manager: runs a pipeline of passes over a Module with the debugging switches every
// compiler user expects (--verify-each, --print-ir-before/after, --stop-after, per-pass timing).
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "paddlec/passes/pass.h"

namespace paddlec::passes {

struct PassManagerOptions {
  /// Check the whole module against the op protos after every pass.
  bool verify_each = false;
  /// Pass names after which to print the IR listing (ir::FormatListing; "all" for every pass).
  std::vector<std::string> print_ir_after;
  /// Pass names before which to print it.
  std::vector<std::string> print_ir_before;
  /// Run only the first N passes (-1: all), for bisecting a pipeline.
  int stop_after = -1;
  /// Where printed IR goes (stderr when null).
  std::ostream* ir_stream = nullptr;
};

struct PassTiming {
  std::string name;
  double ms;
  bool changed;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {});
  ~PassManager();
  PassManager(PassManager&&) noexcept;

  /// Appends a pipeline: "validate,infer-shape,optimizer{type=adam,lr=0.001}".
  Status AddPipeline(std::string_view spec);
  /// Appends the passes of a PassPipeline textproto (configs/pipelines/*.pbtxt).
  Status AddPipelineFile(const std::string& path);
  Status AddPass(std::string_view name, const std::map<std::string, std::string>& options = {});

  /// Runs the passes in order; records each in the module's passes_applied.
  Status Run(ir::Module& module, PassContext& ctx);

  const std::vector<PassTiming>& timings() const { return timings_; }
  /// The pipeline as a spec string.
  std::string ToString() const;
  size_t size() const { return passes_.size(); }

 private:
  struct Entry {
    std::unique_ptr<Pass> pass;
    PassOptions options;
  };
  PassManagerOptions options_;
  std::vector<Entry> passes_;
  std::vector<PassTiming> timings_;
};

/// Splits "a,b{k=v,k2=v2},c" into (name, options) pairs.
StatusOr<std::vector<std::pair<std::string, std::map<std::string, std::string>>>> ParsePipelineSpec(
    std::string_view spec);

/// Checks a module without changing it: every op against its proto, every variable declaration.
/// Used by --verify-each and by tests.
Status VerifyModule(ir::Module& module, const ops::OpRegistry& registry);

}  // namespace paddlec::passes
