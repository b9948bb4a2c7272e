// What the binding files of paddlec._core share: the registration functions each file provides,
// the program state the handles point into, and the conversion of paddlec errors to exceptions.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "paddlec/core/error.h"
#include "paddlec/ir/program.h"

namespace paddlec::python {

namespace py = pybind11;
namespace pb = ::paddle::framework::proto;

// ---- Errors (errors.cc) ----------------------------------------------------------------------

/// A paddlec Error on its way to Python; the translator turns it into the exception class of its
/// code (ValidationError, ShapeError, ...), carrying the rendered diagnostic.
struct PaddlecException : std::exception {
  explicit PaddlecException(Error e, bool attr_type = false) : error(std::move(e)), attr_type_error(attr_type) {}
  const char* what() const noexcept override { return error.message().c_str(); }
  Error error;
  /// An attribute value of the wrong type: raised as AttributeTypeError (a TypeError).
  bool attr_type_error;
};

/// Throws PaddlecException for a failed status.
inline void ThrowIfError(Status st) {
  if (!st.ok()) throw PaddlecException(std::move(st).TakeError());
}
template <class T>
T ValueOrThrow(StatusOr<T> v) {
  if (!v.ok()) throw PaddlecException(std::move(v).status().TakeError());
  return std::move(v).value();
}

/// An attribute value of the wrong Python type: raised as paddlec's AttributeTypeError (a TypeError).
[[noreturn]] inline void ThrowAttrTypeError(Error e) { throw PaddlecException(std::move(e), true); }

// ---- Programs (desc.cc) ----------------------------------------------------------------------

/// One ProgramDesc as Python sees it. Handles (blocks, ops, vars) keep the state alive and reach
/// into it; `version` changes with every edit (cached plans rebuild), `epoch` only when op handles
/// become invalid (the desc was replaced by a pass or an op was removed).
class ProgramState {
 public:
  ProgramState();
  explicit ProgramState(pb::ProgramDesc desc);

  ir::Program& program() const { return *program_; }
  /// The program object plans are built on; kept alive by plans even after Replace().
  const std::shared_ptr<ir::Program>& shared_program() const { return program_; }
  pb::ProgramDesc& desc() const { return program_->desc(); }
  uint64_t version() const { return version_; }
  uint64_t epoch() const { return epoch_; }
  void Touch() { ++version_; }
  void Invalidate() {
    ++version_;
    ++epoch_;
  }
  /// Replaces the whole desc (after passes, or a load); throws on a malformed block structure.
  void Replace(pb::ProgramDesc desc);
  ir::Block& block(int idx) const;

 private:
  std::shared_ptr<ir::Program> program_;
  uint64_t version_ = 0;
  uint64_t epoch_ = 0;
};
using StatePtr = std::shared_ptr<ProgramState>;

// ---- Registration, one function per binding file --------------------------------------------

void RegisterErrors(py::module_& m);
void RegisterOpProtos(py::module_& m);
void RegisterDesc(py::module_& m);
void RegisterPasses(py::module_& m);
void RegisterRuntime(py::module_& m);
void RegisterDatasets(py::module_& m);
void RegisterRules(py::module_& m);

}  // namespace paddlec::python
