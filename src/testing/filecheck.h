// A small FileCheck: `# CHECK...:` directives in a test file's comment lines, matched against a
// tool's output (the pass goldens match them against ir::FormatListing, src/passes/pass_golden_test.cc).
//
// Patterns are plain substrings (leading and trailing blanks trimmed). As in LLVM's FileCheck:
//   CHECK: p        p occurs at or after the end of the previous match (same line included).
//   CHECK-NEXT: p   p occurs on the line right after the previous match's line.
//   CHECK-SAME: p   p occurs on the previous match's line, after that match.
//   CHECK-NOT: p    p does not occur between the previous match (or the region's start) and the
//                   next positive match (or the region's end).
//   CHECK-LABEL: p  matched first, in order; labels cut the output into regions, and the other
//                   directives after a label only look inside that label's region, so a failure
//                   in one region does not cascade into the next.
//   CHECK-UNCHANGED the tool's input must come out unchanged; this matcher only records it, the test
//                   driver proves it (for pass goldens: the last pass changed nothing).
// A comment line whose first word starts with CHECK but is none of these is an error, so a typo
// never silently disables a check.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "paddlec/core/error.h"

namespace paddlec::testing {

enum class CheckKind { kCheck, kNext, kSame, kNot, kLabel };

/// "CHECK", "CHECK-NEXT", ...
std::string_view CheckKindName(CheckKind kind);

struct CheckDirective {
  CheckKind kind;
  std::string pattern;
  int line;  // 1-based line of the directive in its file
};

struct CheckFile {
  std::string file;  // for messages
  std::vector<CheckDirective> checks;
  /// Line of a CHECK-UNCHANGED directive; 0 if there is none.
  int unchanged_line = 0;
  bool empty() const { return checks.empty() && unchanged_line == 0; }
};

/// Reads the directives from the `#` comment lines of `text` (a textproto, a script, ...).
/// Errors name file:line: unknown CHECK-* names, a missing ':', empty patterns, a CHECK-NEXT or
/// CHECK-SAME with no earlier positive match in its region.
StatusOr<CheckFile> ParseChecks(std::string_view text, std::string_view file);

/// Matches the directives against `output`. Returns one message per failure, empty when all
/// hold. Each message names the directive's file:line, the pattern and the output lines searched
/// (numbered, as "  12 | text").
std::vector<std::string> MatchChecks(const CheckFile& checks, std::string_view output);

}  // namespace paddlec::testing
