// Human-readable summaries of programs (the textproto itself comes from ir::Serialize).
#pragma once

#include <string>

#include "paddlec/ir/program.h"

namespace paddlec::ir {

/// One line per variable and block: name, dtype, dims and role (feed/param/grad), aligned. Used by
/// `paddlec compile --print-shapes`.
std::string FormatShapes(const Program& program);

/// One line per op: "  3  mul(X=img, Y=fc.w) -> (Out=fc.out)".
std::string FormatOps(const Program& program);

/// A Graphviz graph of the program (`paddlec compile --emit=dot`): ops as boxes (backward and
/// optimizer ops tinted apart), variables as ellipses labelled with dtype and dims, parameters as
/// shaded boxes, inputs in green, and every sub-block as a cluster hanging off the op that runs it.
/// Render with `dot -Tsvg` or `dot -Tpng`.
std::string FormatDot(const Program& program);

}  // namespace paddlec::ir
