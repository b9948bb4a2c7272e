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

std::vector<std::string> Error::NotesFor(Frontend frontend) const {
  std::vector<std::string> out = notes_;
  if (frontend == Frontend::kPython)
    for (const auto& [i, text] : python_notes_) out[i] = text;
  return out;
}

static void RenderOne(const Error& e, Frontend frontend, std::string& out) {
  std::string loc = e.location().ToString();
  out += "error: ";
  if (!loc.empty()) out += loc + ": ";
  out += e.message();
  out += '\n';
  for (const auto& n : e.NotesFor(frontend)) out += "note: " + n + "\n";
}

std::string Error::Render(Frontend frontend) const {
  std::string out;
  RenderOne(*this, frontend, out);
  for (const auto& m : more_) out += m.Render(frontend);
  return out;
}

}  // namespace paddlec
