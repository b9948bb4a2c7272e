// Error, Status and StatusOr: how every layer of paddlec reports a failure to the user.
//
// An Error carries a code, a one-line message, where it happened (file:line:col of the source text,
// block and op index, op type, variable) and optional notes. Library code returns Status/StatusOr;
// only the driver turns an Error into "error: ..." lines and an exit code. A Status that is OK holds
// no allocation, so checking it on a hot path costs one pointer comparison.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace paddlec {

enum class ErrorCode {
  kInvalidArgument,    // a bad flag, option or value supplied by the caller
  kParse,              // input text/binary that does not parse
  kValidation,         // a program that does not satisfy the op protos
  kShape,              // shape or dtype inference failed
  kNotFound,           // a file, variable, op or kernel that does not exist
  kIO,                 // reading or writing a file failed
  kUnimplemented,      // a valid request this build does not support
  kUnavailable,        // a device or library that is not present
  kResourceExhausted,  // an allocation or size limit
  kRuntime,            // a kernel failed on the data it was given
  kInternal,           // a paddlec bug
};

std::string_view ErrorCodeName(ErrorCode code);

/// `text` safe to print on a terminal: control characters (C0, DEL, C1) and bytes that are not
/// UTF-8 become `\xNN` escapes, so a name read from input cannot move the cursor, clear the screen
/// or set the window title. Printable UTF-8 passes unchanged. Every rendered diagnostic goes through it.
std::string EscapeForTerminal(std::string_view text);

/// Who shows an error to the user. Advice that names a way of doing something (a flag, an
/// argument) is written once per front end: the CLI's names are flags, Python's are arguments.
enum class Frontend { kCli, kPython };

/// Where an error happened. Every field is optional; Render() prints the ones that are set.
struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based; 0 = unknown
  int block = -1;
  int op = -1;
  std::string op_type;
  std::string var;

  bool has_text_position() const { return line > 0; }
  /// "file:line:col: block B, op I (type)" with the unknown parts left out.
  std::string ToString() const;
};

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const SourceLocation& location() const { return location_; }
  SourceLocation& mutable_location() { return location_; }
  /// The notes as the CLI shows them.
  const std::vector<std::string>& notes() const { return notes_; }
  /// The notes as `frontend` shows them (Advise's wording for it).
  std::vector<std::string> NotesFor(Frontend frontend) const;
  /// Further, independent errors found by the same check (verifiers report all they find).
  const std::vector<Error>& more() const { return more_; }

  Error& At(SourceLocation loc) & {
    location_ = std::move(loc);
    return *this;
  }
  Error&& At(SourceLocation loc) && { return std::move(At(std::move(loc))); }
  // Out of line (error.cc): inlined into every error path, GCC 12 warned falsely on the string move.
  Error& Note(std::string note) &;
  Error&& Note(std::string note) && { return std::move(Note(std::move(note))); }
  /// A note that tells the user what to do, in each front end's terms: "--device=cpu" for the CLI,
  /// "Executor('cpu')" for Python.
  Error& Advise(std::string cli, std::string python) & {
    python_notes_.emplace_back(notes_.size(), std::move(python));
    notes_.push_back(std::move(cli));
    return *this;
  }
  Error&& Advise(std::string cli, std::string python) && {
    return std::move(Advise(std::move(cli), std::move(python)));
  }
  void Append(Error e) { more_.push_back(std::move(e)); }
  void set_message(std::string m) { message_ = std::move(m); }

  /// "error: <location>: <message>" plus one "note: ..." line per note, for this error and `more`.
  std::string Render(Frontend frontend = Frontend::kCli) const;

 private:
  ErrorCode code_;
  std::string message_;
  SourceLocation location_;
  std::vector<std::string> notes_;
  std::vector<std::pair<size_t, std::string>> python_notes_;  // (index into notes_, Python's wording)
  std::vector<Error> more_;
};

template <class... Args>
Error MakeError(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Error(code, fmt::format(f, std::forward<Args>(args)...));
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::make_unique<Error>(std::move(e))) {}  // NOLINT: implicit on purpose
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  Status(const Status& o) : error_(o.error_ ? std::make_unique<Error>(*o.error_) : nullptr) {}
  Status& operator=(const Status& o) {
    error_ = o.error_ ? std::make_unique<Error>(*o.error_) : nullptr;
    return *this;
  }

  static Status OK() { return Status(); }
  bool ok() const { return error_ == nullptr; }
  const Error& error() const { return *error_; }
  Error& error() { return *error_; }
  Error TakeError() && { return std::move(*error_); }

 private:
  std::unique_ptr<Error> error_;
};

template <class T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT
  StatusOr(Error e) : v_(std::move(e)) {}      // NOLINT
  StatusOr(Status s) : v_(std::move(s).TakeError()) {}  // NOLINT: s must not be OK

  bool ok() const { return v_.index() == 0; }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  Error& error() { return std::get<1>(v_); }
  Status status() const& { return ok() ? Status() : Status(error()); }
  Status status() && { return ok() ? Status() : Status(std::get<1>(std::move(v_))); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace paddlec

#define PC_CONCAT_INNER_(a, b) a##b
#define PC_CONCAT_(a, b) PC_CONCAT_INNER_(a, b)

/// Returns the Status of `expr` from the enclosing function when it is not OK.
#define PC_RETURN_IF_ERROR(expr)                     \
  do {                                               \
    ::paddlec::Status pc_status_ = (expr);           \
    if (!pc_status_.ok()) return pc_status_;         \
  } while (0)

/// `PC_ASSIGN_OR_RETURN(auto x, F())` binds x to F()'s value or returns its error.
#define PC_ASSIGN_OR_RETURN(lhs, expr) PC_ASSIGN_OR_RETURN_IMPL_(PC_CONCAT_(pc_or_, __LINE__), lhs, expr)
#define PC_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)      \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return std::move(tmp).status();       \
  lhs = std::move(tmp).value()

/// Returns an Error with `code` and a formatted message when `cond` is false.
#define PC_ENSURE(cond, code, ...)                                      \
  do {                                                                  \
    if (!(cond)) return ::paddlec::MakeError(code, __VA_ARGS__);        \
  } while (0)
