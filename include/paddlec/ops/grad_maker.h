// Gradient makers: given a forward OpDesc, emit the OpDescs that compute its input gradients.
//
// The default maker is driven by the grad op's own proto (registered with .GradOf): each grad-op
// input slot named S is bound to the forward slot S, each slot S@GRAD to the gradients of the
// forward output S, and each output slot S@GRAD to the gradients of the forward input S. Inputs in
// the no-grad set get @EMPTY@ (or are dropped). Ops whose backward is not one op of that shape
// register their own maker.
#pragma once

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "framework.pb.h"
#include "paddlec/core/error.h"
#include "paddlec/ops/slots.h"

namespace paddlec::ops {

namespace pb = ::paddle::framework::proto;
class OpRegistry;

class GradMakerContext {
 public:
  GradMakerContext(const pb::OpDesc& fwd, const std::unordered_set<std::string>& no_grad,
                   const OpRegistry& registry)
      : fwd_(fwd), no_grad_(no_grad), registry_(registry) {}

  const pb::OpDesc& forward() const { return fwd_; }
  const OpRegistry& registry() const { return registry_; }
  /// Forward arguments of a slot (empty when absent).
  std::vector<std::string> Input(std::string_view slot) const;
  std::vector<std::string> Output(std::string_view slot) const;
  /// x@GRAD for each forward input x of the slot, @EMPTY@ for those in the no-grad set.
  std::vector<std::string> InputGrad(std::string_view slot) const;
  /// y@GRAD for each forward output y of the slot.
  std::vector<std::string> OutputGrad(std::string_view slot) const;
  bool IsNoGrad(const std::string& var) const { return no_grad_.count(var) > 0; }

  /// A new grad op of `type` with all forward attributes copied.
  pb::OpDesc NewOp(const std::string& type) const;
  void Emit(pb::OpDesc op) { ops_.push_back(std::move(op)); }
  std::vector<pb::OpDesc>& emitted() { return ops_; }

 private:
  const pb::OpDesc& fwd_;
  const std::unordered_set<std::string>& no_grad_;
  const OpRegistry& registry_;
  std::vector<pb::OpDesc> ops_;
};

using GradMakerFn = std::function<Status(GradMakerContext&)>;

/// The proto-driven default described above; grad op type = forward type + "_grad".
Status DefaultGradMaker(GradMakerContext& ctx);

/// Appends `slot` with `args` to an OpDesc's inputs / outputs.
void AddInput(pb::OpDesc& op, std::string_view slot, const std::vector<std::string>& args);
void AddOutput(pb::OpDesc& op, std::string_view slot, const std::vector<std::string>& args);

}  // namespace paddlec::ops
