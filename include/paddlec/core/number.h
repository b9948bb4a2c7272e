// The numbers paddlec's environment switches take (core/env.h), readable without the rest of core:
// the Python package's _spin module reads PADDLEC_SPIN_US before any library of paddlec is loaded.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace paddlec {

/// `text` as a finite number of at least 0, written whole: no white space around it (strtod would
/// skip it in front) and nothing after it; nullopt otherwise.
inline std::optional<double> ParseNonNegative(std::string_view text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  const std::string whole(text);
  char* end = nullptr;
  const double d = std::strtod(whole.c_str(), &end);
  if (end == whole.c_str() || *end != '\0' || !std::isfinite(d) || d < 0) return std::nullopt;
  return d;
}

}  // namespace paddlec
