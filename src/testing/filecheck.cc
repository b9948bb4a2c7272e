// The FileCheck matcher of filecheck.h: parsing `# CHECK` directives and matching them by substring.
#include "testing/filecheck.h"

#include <algorithm>
#include <optional>

namespace paddlec::testing {
namespace {

constexpr std::string_view kBlanks = " \t\r";

std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(kBlanks);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kBlanks) - b + 1);
}

std::optional<CheckKind> KindFromName(std::string_view name) {
  for (CheckKind k : {CheckKind::kCheck, CheckKind::kNext, CheckKind::kSame, CheckKind::kNot, CheckKind::kLabel})
    if (CheckKindName(k) == name) return k;
  return std::nullopt;
}

// The output as lines, addressed by byte offsets into it. A pattern holds no newline, so a match
// found between two offsets never spans lines.
class Output {
 public:
  explicit Output(std::string_view text) : text_(text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n' && i + 1 < text.size()) starts_.push_back(i + 1);
  }
  size_t size() const { return text_.size(); }
  int num_lines() const { return text_.empty() ? 0 : static_cast<int>(starts_.size()); }
  /// 1-based line holding offset `pos` (the last line for pos == size()).
  int LineOf(size_t pos) const {
    return static_cast<int>(std::upper_bound(starts_.begin(), starts_.end(), pos) - starts_.begin());
  }
  size_t LineStart(int line) const { return starts_[line - 1]; }
  /// Offset of the newline ending `line` (or the end of the text).
  size_t LineEnd(int line) const {
    if (line < static_cast<int>(starts_.size())) return starts_[line] - 1;
    return text_.ends_with('\n') ? text_.size() - 1 : text_.size();
  }
  std::string_view Line(int line) const { return text_.substr(LineStart(line), LineEnd(line) - LineStart(line)); }
  /// Offset of `pattern` in [from, to), or npos.
  size_t Find(std::string_view pattern, size_t from, size_t to) const {
    if (from > to) return std::string_view::npos;
    size_t p = text_.substr(from, to - from).find(pattern);
    return p == std::string_view::npos ? p : from + p;
  }
  /// The numbered lines that overlap [from, to): what a directive was looked for in.
  std::string Show(size_t from, size_t to) const {
    if (num_lines() == 0) return "    (the output is empty)\n";
    constexpr int kMaxShown = 200;
    int first = LineOf(from), last = std::max(first, LineOf(to == from ? to : to - 1));
    last = std::min(last, num_lines());
    std::string out;
    for (int l = first; l <= last && l < first + kMaxShown; ++l) out += fmt::format("{:>6} | {}\n", l, Line(l));
    if (last - first + 1 > kMaxShown) out += fmt::format("       ... {} more lines\n", last - first + 1 - kMaxShown);
    return out;
  }
  std::string Lines(size_t from, size_t to) const {
    if (num_lines() == 0) return "the output";
    int first = LineOf(from), last = std::max(first, LineOf(to == from ? to : to - 1));
    return first == last ? fmt::format("output line {}", first) : fmt::format("output lines {}-{}", first, last);
  }

 private:
  std::string_view text_;
  std::vector<size_t> starts_;
};

class Matcher {
 public:
  Matcher(const CheckFile& checks, const Output& out) : checks_(checks), out_(out) {}

  // Matches the directives [first, last) inside [begin, end); `prev_end` ends the label's match, if any.
  void MatchRegion(size_t first, size_t last, size_t begin, size_t end, std::optional<size_t> prev_end) {
    size_t cursor = prev_end.value_or(begin);
    std::vector<const CheckDirective*> nots;
    for (size_t i = first; i < last; ++i) {
      const CheckDirective& d = checks_.checks[i];
      if (d.kind == CheckKind::kNot) {
        nots.push_back(&d);
        continue;
      }
      size_t from = cursor, to = end;
      std::string where;
      size_t show_from = from, show_to = to;
      if (d.kind == CheckKind::kNext || d.kind == CheckKind::kSame) {
        // The parser guarantees an earlier positive match in the region (a label counts).
        int prev_line = out_.LineOf(*prev_end);
        int line = d.kind == CheckKind::kNext ? prev_line + 1 : prev_line;
        show_from = out_.LineStart(prev_line);
        if (line > out_.num_lines() || out_.LineStart(line) >= end) {
          Fail(d, fmt::format("found no output line after line {} in its region", prev_line), show_from, end);
          return;
        }
        if (d.kind == CheckKind::kNext) from = out_.LineStart(line);
        to = show_to = std::min(end, out_.LineEnd(line));
        where = d.kind == CheckKind::kNext ? fmt::format("on output line {}, the line after the previous match", line)
                                           : fmt::format("on output line {} after the previous match", line);
      }
      size_t at = out_.Find(d.pattern, from, to);
      if (at == std::string_view::npos) {
        Fail(d, "not found " + (where.empty() ? "in " + out_.Lines(from, to) : where), show_from, show_to);
        return;  // later directives of the region depend on this match
      }
      CheckNots(nots, cursor, at);
      nots.clear();
      cursor = at + d.pattern.size();
      prev_end = cursor;
    }
    CheckNots(nots, cursor, end);
  }

  void Fail(const CheckDirective& d, const std::string& what, size_t from, size_t to) {
    failures_.push_back(fmt::format("{}:{}: {}: \"{}\" {}:\n{}", checks_.file, d.line, CheckKindName(d.kind), d.pattern,
                                    what, out_.Show(from, to)));
  }

  std::vector<std::string> TakeFailures() { return std::move(failures_); }

 private:
  void CheckNots(const std::vector<const CheckDirective*>& nots, size_t from, size_t to) {
    for (const CheckDirective* d : nots) {
      size_t at = out_.Find(d->pattern, from, to);
      if (at != std::string_view::npos)
        Fail(*d, fmt::format("found on output line {}, searching {}", out_.LineOf(at), out_.Lines(from, to)), from, to);
    }
  }

  const CheckFile& checks_;
  const Output& out_;
  std::vector<std::string> failures_;
};

}  // namespace

std::string_view CheckKindName(CheckKind kind) {
  switch (kind) {
    case CheckKind::kCheck:
      return "CHECK";
    case CheckKind::kNext:
      return "CHECK-NEXT";
    case CheckKind::kSame:
      return "CHECK-SAME";
    case CheckKind::kNot:
      return "CHECK-NOT";
    case CheckKind::kLabel:
      return "CHECK-LABEL";
  }
  return "?";
}

StatusOr<CheckFile> ParseChecks(std::string_view text, std::string_view file) {
  CheckFile result;
  result.file = std::string(file);
  bool have_match = false;  // a positive directive earlier in the current region
  int line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    line = Trim(line);
    if (!line.starts_with('#')) continue;
    line = Trim(line.substr(1));
    if (!line.starts_with("CHECK")) continue;
    size_t name_end = line.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ-");
    std::string_view name = line.substr(0, name_end);
    std::string_view rest = name_end == std::string_view::npos ? std::string_view() : line.substr(name_end);
    if (name == "CHECK-UNCHANGED") {
      if (!Trim(rest).empty() && Trim(rest) != ":")
        return MakeError(ErrorCode::kInvalidArgument, "{}:{}: CHECK-UNCHANGED takes no pattern, found '{}'", file,
                         line_no, Trim(rest));
      result.unchanged_line = line_no;
      continue;
    }
    std::optional<CheckKind> kind = KindFromName(name);
    if (!kind)
      return MakeError(ErrorCode::kInvalidArgument,
                       "{}:{}: unknown directive '{}' (known: CHECK, CHECK-NEXT, CHECK-SAME, CHECK-NOT, CHECK-LABEL, "
                       "CHECK-UNCHANGED)",
                       file, line_no, name);
    if (!rest.starts_with(':'))
      return MakeError(ErrorCode::kInvalidArgument, "{}:{}: '{}' must be followed by ':'", file, line_no, name);
    std::string_view pattern = Trim(rest.substr(1));
    if (pattern.empty())
      return MakeError(ErrorCode::kInvalidArgument, "{}:{}: {} has an empty pattern", file, line_no, name);
    if ((*kind == CheckKind::kNext || *kind == CheckKind::kSame) && !have_match)
      return MakeError(ErrorCode::kInvalidArgument,
                       "{}:{}: {} needs an earlier CHECK, CHECK-NEXT, CHECK-SAME or CHECK-LABEL in its region", file,
                       line_no, name);
    if (*kind != CheckKind::kNot) have_match = true;
    result.checks.push_back({*kind, std::string(pattern), line_no});
  }
  return result;
}

std::vector<std::string> MatchChecks(const CheckFile& checks, std::string_view output) {
  Output out(output);
  Matcher matcher(checks, out);
  // Labels first, in order: each is searched after the previous one's match.
  struct Label {
    size_t index;                 // in checks.checks
    std::optional<size_t> begin;  // match start; nullopt when it was not found
    size_t end;                   // match end
  };
  std::vector<Label> labels;
  size_t cursor = 0;
  for (size_t i = 0; i < checks.checks.size(); ++i) {
    const CheckDirective& d = checks.checks[i];
    if (d.kind != CheckKind::kLabel) continue;
    size_t at = out.Find(d.pattern, cursor, out.size());
    if (at == std::string_view::npos) {
      matcher.Fail(d, "not found in " + out.Lines(cursor, out.size()), cursor, out.size());
      labels.push_back({i, std::nullopt, cursor});
      continue;
    }
    labels.push_back({i, at, at + d.pattern.size()});
    cursor = at + d.pattern.size();
  }
  // Then each region: before the first label, and from each label to the next one found.
  auto next_found = [&](size_t k) {
    for (; k < labels.size(); ++k)
      if (labels[k].begin) return *labels[k].begin;
    return out.size();
  };
  size_t first_label = labels.empty() ? checks.checks.size() : labels[0].index;
  matcher.MatchRegion(0, first_label, 0, next_found(0), std::nullopt);
  for (size_t k = 0; k < labels.size(); ++k) {
    if (!labels[k].begin) continue;  // its region is unknown; the label's failure says why
    size_t last = k + 1 < labels.size() ? labels[k + 1].index : checks.checks.size();
    matcher.MatchRegion(labels[k].index + 1, last, labels[k].end, next_found(k + 1), labels[k].end);
  }
  return matcher.TakeFailures();
}

}  // namespace paddlec::testing
