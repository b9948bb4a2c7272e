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
/// Words longer than kMaxSuggestedWord get no hint: no registered name is that long, and the edit
/// distances would cost |word| x |name| each (a fuzzed program with long op types took seconds).
inline constexpr size_t kMaxSuggestedWord = 128;

template <class Names>
std::string ClosestName(std::string_view word, const Names& names) {
  std::string best;
  if (word.size() > kMaxSuggestedWord) return best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& n : names) {
    const std::string_view name(n);
    // The distance is at least the difference in length: such names cannot be closer.
    if ((word.size() > name.size() ? word.size() - name.size() : name.size() - word.size()) >= best_d) continue;
    size_t d = EditDistance(word, name);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

}  // namespace paddlec
