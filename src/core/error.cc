// Rendering of errors for the driver and tests.
#include "paddlec/core/error.h"

namespace paddlec {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kParse: return "parse error";
    case ErrorCode::kValidation: return "validation error";
    case ErrorCode::kShape: return "shape error";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kIO: return "I/O error";
    case ErrorCode::kUnimplemented: return "unimplemented";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kResourceExhausted: return "resource exhausted";
    case ErrorCode::kRuntime: return "runtime error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

std::string SourceLocation::ToString() const {
  std::string out;
  if (!file.empty()) {
    out += file;
    if (line > 0) out += fmt::format(":{}:{}", line, column > 0 ? column : 1);
  }
  std::string where;
  if (block >= 0) where += fmt::format("block {}", block);
  if (op >= 0) where += fmt::format("{}op {}", where.empty() ? "" : ", ", op);
  if (!op_type.empty()) where += fmt::format("{}({})", where.empty() ? "" : " ", op_type);
  if (!where.empty()) out += (out.empty() ? "" : ": ") + where;
  return out;
}

static void RenderOne(const Error& e, std::string& out) {
  std::string loc = e.location().ToString();
  out += "error: ";
  if (!loc.empty()) out += loc + ": ";
  out += e.message();
  out += '\n';
  for (const auto& n : e.notes()) out += "note: " + n + "\n";
}

std::string Error::Render() const {
  std::string out;
  RenderOne(*this, out);
  for (const auto& m : more_) out += m.Render();
  return out;
}

}  // namespace paddlec
