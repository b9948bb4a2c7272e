// paddlec's tuning switches in the environment.
#include "paddlec/core/env.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "paddlec/core/number.h"

namespace paddlec {
namespace {

constexpr std::string_view kTiledGemmChoices[] = {"auto", "off", "always"};
constexpr std::string_view kOnOff[] = {"on", "off"};
constexpr std::string_view kAutoOnOff[] = {"auto", "on", "off"};

/// The switch's value when set and not empty.
const char* Value(const EnvSwitch& s) {
  const char* v = std::getenv(s.name);
  return v == nullptr || *v == '\0' ? nullptr : v;
}

bool Takes(const EnvSwitch& s, std::string_view value) {
  if (s.choices.empty()) return ParseNonNegative(value).has_value();
  for (std::string_view c : s.choices)
    if (c == value) return true;
  return false;
}

/// What the switch takes, for messages: "auto, off or always", or "a number of at least 0".
std::string Expected(const EnvSwitch& s) {
  if (s.choices.empty()) return "a number of at least 0";
  std::string text;
  for (size_t i = 0; i < s.choices.size(); ++i)
    text += (i == 0 ? "" : i + 1 == s.choices.size() ? " or " : ", ") + std::string(s.choices[i]);
  return text;
}

/// Written straight to stderr, not through spdlog: the Python module and the benchmark do not set
/// spdlog up, and its default logger writes to stdout, which they parse.
void WarnIgnored(const EnvSwitch& s, std::string_view value) {
  const std::string line = "warning: ignoring " + std::string(s.name) + "=" + EscapeForTerminal(value) +
                           ": expected " + Expected(s) + "; the default applies\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace

constinit const EnvSwitch kTiledGemmSwitch{"PADDLEC_TILED_GEMM", kTiledGemmChoices};
constinit const EnvSwitch kWinogradSwitch{"PADDLEC_WINOGRAD", kOnOff};
constinit const EnvSwitch kAvx512Switch{"PADDLEC_AVX512", kAutoOnOff};
constinit const EnvSwitch kSpinMicrosSwitch{"PADDLEC_SPIN_US", {}};

std::optional<std::string_view> EnvChoice(const EnvSwitch& s) {
  const char* v = Value(s);
  if (v == nullptr) return std::nullopt;
  for (std::string_view c : s.choices)
    if (c == v) return c;
  WarnIgnored(s, v);
  return std::nullopt;
}

std::optional<double> EnvNonNegative(const EnvSwitch& s, bool warn) {
  const char* v = Value(s);
  if (v == nullptr) return std::nullopt;
  if (const std::optional<double> d = ParseNonNegative(v)) return d;
  if (warn) WarnIgnored(s, v);
  return std::nullopt;
}

Status CheckEnvSwitches() {
  std::optional<Error> error;
  for (const EnvSwitch* s : {&kTiledGemmSwitch, &kWinogradSwitch, &kAvx512Switch, &kSpinMicrosSwitch}) {
    const char* v = Value(*s);
    if (v == nullptr || Takes(*s, v)) continue;
    std::string problem = fmt::format("{}={} is not {}", s->name, v, Expected(*s));
    // Only a choice in other letter case is hinted at: the closest spelling of `no` is `on`.
    for (std::string_view c : s->choices)
      if (std::equal(c.begin(), c.end(), v, v + std::strlen(v), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
          }))
        problem += fmt::format(" (did you mean '{}'?)", c);
    if (!error)
      error = MakeError(ErrorCode::kInvalidArgument, "{}", problem);
    else
      error->Note(problem);
  }
  if (!error) return Status::OK();
  error->Note("unset a switch for its default");
  return *std::move(error);
}

}  // namespace paddlec
