// "Did you mean" hints: the known name closest to a mistyped one (op types, slots, attributes,
// command-line flags).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace paddlec {

/// Levenshtein distance.
size_t EditDistance(std::string_view a, std::string_view b);

/// The name of `names` closest to `word`, or "" when none is close enough to be a likely typo
/// (within a third of the word's length, at least 2 edits).
template <class Names>
std::string ClosestName(std::string_view word, const Names& names) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& n : names) {
    size_t d = EditDistance(word, n);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

}  // namespace paddlec
