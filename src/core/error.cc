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

namespace {

/// Length of the UTF-8 sequence at the start of `s` (2 to 4), or 0 when it is not a valid one.
size_t Utf8SequenceLength(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto cont = [&](size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F)) return 0;  // overlong, surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if ((c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) > 0x8F)) return 0;  // overlong, > U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string EscapeForTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    size_t n = c >= 0x80 ? Utf8SequenceLength(text.substr(i)) : 0;
    // C1 controls (U+0080..U+009F: 0xC2 0x80..0x9F) act like ESC sequences on many terminals.
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) n = 0;
    if (n > 0) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    out += fmt::format("\\x{:02x}", c);
    ++i;
  }
  return out;
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

Error& Error::Note(std::string note) & {
  notes_.push_back(std::move(note));
  return *this;
}

std::vector<std::string> Error::NotesFor(Frontend frontend) const {
  std::vector<std::string> out = notes_;
  if (frontend == Frontend::kPython)
    for (const auto& [i, text] : python_notes_) out[i] = text;
  return out;
}

static void RenderOne(const Error& e, Frontend frontend, std::string& out) {
  // Names in messages come from the input: escaped here, once for every diagnostic.
  std::string loc = EscapeForTerminal(e.location().ToString());
  out += "error: ";
  if (!loc.empty()) out += loc + ": ";
  out += EscapeForTerminal(e.message());
  out += '\n';
  for (const auto& n : e.NotesFor(frontend)) out += "note: " + EscapeForTerminal(n) + "\n";
}

std::string Error::Render(Frontend frontend) const {
  std::string out;
  RenderOne(*this, frontend, out);
  for (const auto& m : more_) out += m.Render(frontend);
  return out;
}

}  // namespace paddlec
