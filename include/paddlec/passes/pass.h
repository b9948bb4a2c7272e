// Passes: named, documented transformations of a Module, with typed options.
//
// A pass states in its header comment what it requires and what it guarantees. It returns whether
// it changed the module; errors are Status. Passes are listed once in src/passes/passes.def and
// created by name, so a pipeline is data: "validate,infer-shape,optimizer{type=adam,lr=0.001}".
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "paddlec/core/error.h"
#include "paddlec/ir/program.h"

namespace paddlec::ops {
class OpRegistry;
}

namespace paddlec::passes {

struct PassOption {
  /// kStringList: names separated by kListSeparator in pipeline text ("a;b").
  enum class Type { kBool, kInt, kFloat, kString, kStringList };
  static constexpr char kListSeparator = ';';
  std::string name;
  Type type;
  std::string default_value;
  std::string help;
};

std::string_view PassOptionTypeName(PassOption::Type t);

/// Option values of one pass instance, checked against its PassOption list.
class PassOptions {
 public:
  PassOptions() = default;
  /// Parses "k=v" pairs against `specs`; unknown names and ill-typed values are errors.
  static StatusOr<PassOptions> Parse(std::string_view pass, const std::vector<PassOption>& specs,
                                     const std::map<std::string, std::string>& values);
  bool GetBool(std::string_view name) const;
  int64_t GetInt(std::string_view name) const;
  double GetFloat(std::string_view name) const;
  const std::string& GetString(std::string_view name) const;
  std::vector<std::string> GetStringList(std::string_view name) const;
  bool IsSet(std::string_view name) const { return explicitly_set_.count(std::string(name)) > 0; }
  /// "k=v,k2=v2" for the options set explicitly, in name order.
  std::string ToString() const;

 private:
  std::map<std::string, std::string, std::less<>> values_;
  std::map<std::string, std::string> explicitly_set_;
};

/// What a running pass may use besides the module.
struct PassContext {
  const ops::OpRegistry& registry;
  /// Variables the caller will read after a run (`paddlec run --fetch`) beyond the module's fetch
  /// targets: passes that rename, share or re-lay out intermediates (plan-memory, layout) leave them
  /// alone. Unlike fetch targets, they do not make dce drop what they do not need.
  std::vector<std::string> kept = {};
};

class Pass {
 public:
  virtual ~Pass() = default;
  /// kebab-case name used in pipelines.
  virtual std::string_view Name() const = 0;
  /// One line for `--help` and the generated pass list.
  virtual std::string_view Summary() const = 0;
  virtual std::vector<PassOption> Options() const { return {}; }
  /// Receives the parsed options once, before Run.
  virtual Status Configure(const PassOptions& options) {
    (void)options;
    return Status::OK();
  }
  /// Transforms the module; returns true when anything changed.
  virtual StatusOr<bool> Run(ir::Module& module, PassContext& ctx) = 0;
};

/// Name, summary and options of a registered pass.
struct PassInfo {
  std::string name;
  std::string summary;
  std::vector<PassOption> options;
};

/// Every pass listed in passes.def, in that order.
std::vector<PassInfo> ListPasses();
/// Creates a pass by name; an error naming the known passes otherwise.
StatusOr<std::unique_ptr<Pass>> CreatePass(std::string_view name);

}  // namespace paddlec::passes
