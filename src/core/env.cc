// paddlec's switches in the environment.
#include "paddlec/core/env.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "paddlec/core/error.h"

namespace paddlec {
namespace {

/// Written straight to stderr, not through spdlog: the Python module and the benchmark do not set
/// spdlog up, and its default logger writes to stdout, which they parse.
void WarnIgnored(const char* name, std::string_view value, std::string_view expected) {
  const std::string line = "warning: ignoring " + std::string(name) + "=" + EscapeForTerminal(value) + ": expected " +
                           std::string(expected) + "; the default applies\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace

std::optional<std::string_view> EnvChoice(const char* name, std::initializer_list<std::string_view> choices) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  const std::string_view value(v);
  std::string expected;
  for (std::string_view c : choices) {
    if (c == value) return c;
    if (!expected.empty()) expected += " or ";
    expected += c;
  }
  WarnIgnored(name, value, expected);
  return std::nullopt;
}

std::optional<double> EnvNonNegative(const char* name, bool warn) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  // strtod skips leading white space; the value is whole only without it.
  if (!std::isspace(static_cast<unsigned char>(*v)) && end != v && *end == '\0' && std::isfinite(d) && d >= 0) return d;
  if (warn) WarnIgnored(name, v, "a number of at least 0");
  return std::nullopt;
}

}  // namespace paddlec
