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

}  // namespace paddlec::ir
