// Tests of the FileCheck matcher (testing/filecheck.h): every directive both holding and failing,
// label regions, and the parse errors that keep a typo from disabling a check.
#include "testing/filecheck.h"

#include <doctest/doctest.h>

namespace paddlec::testing {
namespace {

constexpr char kOutput[] =
    "main block 0: 2 vars, 3 ops\n"                    // 1
    "  var x: float32[-1, 4] data\n"                   // 2
    "  var w: float32[4] persistable\n"                // 3
    "  op 0: relu(X=x) -> (Out=y)\n"                   // 4
    "  op 1: tanh(X=y) -> (Out=z)\n"                   // 5
    "  op 2: sum(X=[z, w]) -> (Out=s)\n"               // 6
    "startup block 0: 1 var, 1 op\n"                   // 7
    "  var w: float32[4] persistable\n"                // 8
    "  op 0: fill_constant() -> (Out=w) {value=0}\n";  // 9

CheckFile Parse(std::string_view text) {
  auto f = ParseChecks(text, "case.pbtxt");
  REQUIRE_MESSAGE(f.ok(), (f.ok() ? "" : f.error().message()));
  return std::move(f).value();
}

std::vector<std::string> Match(std::string_view checks, std::string_view output = kOutput) {
  return MatchChecks(Parse(checks), output);
}

std::string ParseError(std::string_view text) {
  auto f = ParseChecks(text, "case.pbtxt");
  REQUIRE_FALSE(f.ok());
  return f.error().message();
}

TEST_CASE("FileCheck: directives are read from comment lines only") {
  CheckFile f = Parse(
      "# A comment that mentions CHECK: in passing is prose.\n"
      "blocks { idx: 0 }  # CHECK: trailing comments are not directives\n"
      "  #   CHECK: op 0: relu  \n"
      "# CHECK-NEXT: tanh\n"
      "#CHECK-SAME:(X=y)\n"
      "# CHECK-NOT: sigmoid\n"
      "# CHECK-LABEL: startup block 0:\n"
      "# CHECK-UNCHANGED\n");
  REQUIRE(f.checks.size() == 5);
  CHECK(f.checks[0].kind == CheckKind::kCheck);
  CHECK(f.checks[0].pattern == "op 0: relu");  // blanks around the pattern are trimmed
  CHECK(f.checks[0].line == 3);
  CHECK(f.checks[1].kind == CheckKind::kNext);
  CHECK(f.checks[2].kind == CheckKind::kSame);
  CHECK(f.checks[2].pattern == "(X=y)");
  CHECK(f.checks[3].kind == CheckKind::kNot);
  CHECK(f.checks[4].kind == CheckKind::kLabel);
  CHECK(f.unchanged_line == 8);
  CHECK_FALSE(f.empty());
  CHECK(Parse("blocks { idx: 0 }\n# passes: validate\n").empty());
}

TEST_CASE("FileCheck: malformed directives are errors, never ignored") {
  CHECK(ParseError("\n# CHECK-NXT: relu\n") ==
        "case.pbtxt:2: unknown directive 'CHECK-NXT' (known: CHECK, CHECK-NEXT, CHECK-SAME, CHECK-NOT, CHECK-LABEL, "
        "CHECK-UNCHANGED)");
  CHECK(ParseError("# CHECKS: relu\n").starts_with("case.pbtxt:1: unknown directive 'CHECKS'"));
  CHECK(ParseError("# CHECK relu\n") == "case.pbtxt:1: 'CHECK' must be followed by ':'");
  CHECK(ParseError("# CHECK-NOT:   \n") == "case.pbtxt:1: CHECK-NOT has an empty pattern");
  CHECK(ParseError("# CHECK-NEXT: relu\n") ==
        "case.pbtxt:1: CHECK-NEXT needs an earlier CHECK, CHECK-NEXT, CHECK-SAME or CHECK-LABEL in its region");
  CHECK(ParseError("# CHECK-NOT: a\n# CHECK-SAME: b\n").starts_with("case.pbtxt:2: CHECK-SAME needs"));
  CHECK(ParseError("# CHECK-UNCHANGED: relu\n") == "case.pbtxt:1: CHECK-UNCHANGED takes no pattern, found ': relu'");
}

TEST_CASE("FileCheck: CHECK matches in order, at or after the previous match") {
  CHECK(Match("# CHECK: relu\n# CHECK: tanh\n# CHECK: sum\n").empty());
  CHECK(Match("# CHECK: op 1\n# CHECK: tanh(X=y)\n# CHECK: Out=z\n").empty());  // same line, further on
  auto f = Match("# CHECK: tanh\n# CHECK: relu\n");
  REQUIRE(f.size() == 1);
  CHECK(f[0] ==
        "case.pbtxt:2: CHECK: \"relu\" not found in output lines 5-9:\n"
        "     5 |   op 1: tanh(X=y) -> (Out=z)\n"
        "     6 |   op 2: sum(X=[z, w]) -> (Out=s)\n"
        "     7 | startup block 0: 1 var, 1 op\n"
        "     8 |   var w: float32[4] persistable\n"
        "     9 |   op 0: fill_constant() -> (Out=w) {value=0}\n");
  CHECK(Match("# CHECK: sigmoid\n").size() == 1);
  CHECK(Match("# CHECK: relu\n", "").front() ==
        "case.pbtxt:1: CHECK: \"relu\" not found in the output:\n    (the output is empty)\n");
}

TEST_CASE("FileCheck: CHECK-NEXT wants the very next line") {
  CHECK(Match("# CHECK: op 0: relu\n# CHECK-NEXT: op 1: tanh\n# CHECK-NEXT: op 2: sum\n").empty());
  auto f = Match("# CHECK: op 0: relu\n# CHECK-NEXT: op 2: sum\n");  // two lines on, not one
  REQUIRE(f.size() == 1);
  CHECK(f[0] ==
        "case.pbtxt:2: CHECK-NEXT: \"op 2: sum\" not found on output line 5, the line after the previous match:\n"
        "     4 |   op 0: relu(X=x) -> (Out=y)\n"
        "     5 |   op 1: tanh(X=y) -> (Out=z)\n");
  CHECK(Match("# CHECK: (Out=w) {value=0}\n# CHECK-NEXT: anything\n")
            .front()
            .starts_with("case.pbtxt:2: CHECK-NEXT: \"anything\" found no output line after line 9 in its region"));
}

TEST_CASE("FileCheck: CHECK-SAME stays on the line, after the match") {
  CHECK(Match("# CHECK: op 2: sum\n# CHECK-SAME: X=[z, w]\n# CHECK-SAME: Out=s\n").empty());
  CHECK(Match("# CHECK: op 2: sum\n# CHECK-SAME: -> (Out=z)\n").size() == 1);  // that is the line before
  CHECK(Match("# CHECK: (Out=s)\n# CHECK-SAME: sum\n").size() == 1);           // before the match on its line
}

TEST_CASE("FileCheck: CHECK-NOT looks between the matches around it") {
  CHECK(Match("# CHECK: relu\n# CHECK-NOT: sigmoid\n# CHECK: sum\n").empty());
  CHECK(Match("# CHECK: tanh\n# CHECK-NOT: relu\n").empty());           // relu comes before the range
  CHECK(Match("# CHECK-NOT: fill_constant\n# CHECK: relu\n").empty());  // after the range
  auto f = Match("# CHECK: relu\n# CHECK-NOT: tanh\n# CHECK: sum\n");
  REQUIRE(f.size() == 1);
  CHECK(f[0] ==
        "case.pbtxt:2: CHECK-NOT: \"tanh\" found on output line 5, searching output lines 4-6:\n"
        "     4 |   op 0: relu(X=x) -> (Out=y)\n"
        "     5 |   op 1: tanh(X=y) -> (Out=z)\n"
        "     6 |   op 2: sum(X=[z, w]) -> (Out=s)\n");
  CHECK(Match("# CHECK-NOT: fill_constant\n").size() == 1);  // to the end of the output
}

TEST_CASE("FileCheck: CHECK-LABEL cuts the output into regions") {
  CHECK(Match("# CHECK-LABEL: main block 0:\n# CHECK: var w: float32[4] persistable\n"
              "# CHECK-LABEL: startup block 0:\n# CHECK-NEXT: var w: float32[4] persistable\n"
              "# CHECK-NOT: relu\n")
            .empty());
  // fill_constant exists, but not in main's region: the CHECK fails there, not at the next label.
  auto f = Match(
      "# CHECK-LABEL: main block 0:\n# CHECK: fill_constant\n# CHECK-LABEL: startup block 0:\n"
      "# CHECK: fill_constant\n");
  REQUIRE(f.size() == 1);
  CHECK(f[0].starts_with("case.pbtxt:2: CHECK: \"fill_constant\" not found in output lines 1-6:\n"));
  // A CHECK-NOT in a region only sees that region.
  CHECK(Match("# CHECK-LABEL: main block 0:\n# CHECK-NOT: fill_constant\n# CHECK-LABEL: startup block 0:\n").empty());
  CHECK(Match("# CHECK-LABEL: startup block 0:\n# CHECK-NOT: fill_constant\n").size() == 1);
  // Labels are found in order; a missing one is reported and the other regions are still checked.
  f = Match(
      "# CHECK-LABEL: startup block 0:\n# CHECK-LABEL: main block 0:\n# CHECK-LABEL: nowhere\n"
      "# CHECK: never looked for\n");
  REQUIRE(f.size() == 2);
  CHECK(f[0].starts_with("case.pbtxt:2: CHECK-LABEL: \"main block 0:\" not found in output lines 7-9:\n"));
  CHECK(f[1].starts_with("case.pbtxt:3: CHECK-LABEL: \"nowhere\" not found in output lines 7-9:\n"));
  // A failure stops its own region only.
  f = Match(
      "# CHECK-LABEL: main block 0:\n# CHECK: nope\n# CHECK: relu\n# CHECK-LABEL: startup block 0:\n"
      "# CHECK: nope either\n");
  REQUIRE(f.size() == 2);
  CHECK(f[0].starts_with("case.pbtxt:2:"));
  CHECK(f[1].starts_with("case.pbtxt:5:"));
}

}  // namespace
}  // namespace paddlec::testing
