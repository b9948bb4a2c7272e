// Checking OpDescs against their OpProtos, and compile-time shape inference of single ops.
//
// Both the `validate` and `infer-shape` passes and the Python front end (which checks each op the
// moment it is appended) go through these functions, so a program is judged the same everywhere.
#pragma once

#include "paddlec/core/error.h"
#include "paddlec/ir/program.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

struct CheckOptions {
  /// Writes omitted attributes' defaults into the OpDesc and declares undeclared output variables
  /// in the op's block. Off: report only (verify-each).
  bool fix = true;
  /// Stop collecting after this many problems.
  int max_errors = 50;
};

/// Checks one op: registered type, slots (known, present unless dispensable, arity), variables
/// (inputs defined through parent blocks), attributes (known, typed, in range, allowed, required),
/// sub-block references. Appends every problem found to `errors`.
void CheckOp(ir::Op op, const OpRegistry& registry, const CheckOptions& options, std::vector<Error>& errors);

/// What is wrong with attribute value `a` against its declaration `spec` (type, range, allowed values,
/// emptiness), as the rest of a sentence starting "attribute 'NAME' ": "value 5 is out of range: must
/// be [0, 3]". Empty when nothing is. The Python front end checks attributes through this too.
std::string AttrValueProblem(const ir::pb::OpDesc::Attr& a, const ir::pb::OpProto::Attr& spec);

/// The numeric bounds of a declaration in words, with `number` formatting each bound: "[0, 1)",
/// "(0, 1]" for both bounds, "> 0", ">= 0", "< 1", "<= 1" for one; empty when unbounded. The
/// checker, the op reference and the generated Python docs all describe bounds with it.
std::string AttrBoundsText(const ir::pb::OpProto::Attr& spec, std::string (*number)(double));

/// Checks variable declarations of a block: unique names, tensor element types, dims.
void CheckVars(ir::Block& block, std::vector<Error>& errors);

/// Runs the op's shape function against the VarDescs of its block and writes the outputs' dims and
/// dtypes. Fails when inputs mismatch, or when an output was declared with a different known shape.
/// Sets `*changed` (when given) if any output's declaration changed.
Status InferShapeAtCompileTime(ir::Op op, const OpRegistry& registry, bool* changed = nullptr);

/// Folds a list of errors into one Status (the first error, the rest in `more`).
Status ToStatus(std::vector<Error> errors);

}  // namespace paddlec::ops
