// Human-readable summaries of programs (the textproto itself comes from ir::Serialize).
#pragma once

#include <string>
#include <string_view>

#include "paddlec/ir/program.h"

namespace paddlec::ir {

/// One line per variable and block: name, dtype, dims and role (feed/param/grad), aligned. Used by
/// `paddlec compile --print-shapes`.
std::string FormatShapes(const Program& program);

/// One line per op: "  3  mul(X=img, Y=fc.w) -> (Out=fc.out)".
std::string FormatOps(const Program& program);

/// The listing of a compiled program, for people and for FileCheck-style pass goldens: per block a
/// header naming it ("main block 1: parent 0, 2 vars, 3 ops"), then one line per var and per op:
///
///   var fc.w: float32[784, 128] persistable {initializer="normal:0:0.02"}
///   op 3: mul(X=img, Y=fc.w) -> (Out=fc.tmp) {x_num_col_dims=1, y_num_col_dims=1}
///
/// Vars in declaration order with their flags (persistable, parameter, data = need_check_feed,
/// stop_gradient); ops with their slots in order ("X=[a, b]" for several arguments) and their
/// attributes sorted by name, except Paddle's bookkeeping attributes (op_callstack, op_namescope,
/// op_device). Values print as they read back: strings quoted, floats shortest-exact, BLOCK
/// attributes as "<block 1>"; op_role by name ("forward|loss", "backward", "optimize"). Every
/// line is a pure function of the program, so the listing is stable.
std::string FormatListing(const Program& program, std::string_view label);

/// The main program's listing (label "main"), then the startup program's ("startup"). Used by
/// `--print-ir-after` and by the pass goldens (src/passes/pass_golden_test.cc).
std::string FormatListing(const Module& module);

/// A Graphviz graph of the program (`paddlec compile --emit=dot`): ops as boxes (backward and
/// optimizer ops tinted apart), variables as ellipses labelled with dtype and dims, parameters as
/// shaded boxes, inputs in green, and every sub-block as a cluster hanging off the op that runs it.
/// Render with `dot -Tsvg` or `dot -Tpng`.
std::string FormatDot(const Program& program);

}  // namespace paddlec::ir
