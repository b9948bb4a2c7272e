// Golden tests of every pass, FileCheck-style. testdata/passes/<pass>/<case>.in.pbtxt is compiled
// with the pipeline on its "# passes:" line (default "validate,<pass>"), and the `# CHECK...` lines in
// its comments (testing/filecheck.h) are matched against the listing of the result, both programs
// (ir::FormatListing). Every case says what its pipeline's last pass is about:
//   - a change case states what that pass adds, removes, rewrites or sets, and the pass must change
//     the programs (and say so: Pass::Run returns true);
//   - a no-change case says CHECK-UNCHANGED: the programs come out exactly as the pipeline without
//     its last pass leaves them, and the pass returns false.
// scripts/pass_listing.py prints a case's listing before and after its last pass.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "paddlec/core/file.h"
#include "paddlec/ir/printer.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/filecheck.h"

namespace paddlec::passes {
namespace {

namespace fs = std::filesystem;

std::string PipelineFor(std::string_view text, const std::string& pass_dir) {
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("# passes: ")) return line.substr(10);
  return pass_dir == "validate" ? "validate" : "validate," + pass_dir;
}

struct Compiled {
  std::unique_ptr<ir::Module> module;
  bool last_changed = false;
};

// Runs the pipeline on the case, without its last pass when `drop_last`.
StatusOr<Compiled> Compile(const fs::path& path, const std::string& pipeline, bool drop_last) {
  PC_ASSIGN_OR_RETURN(auto passes, ParsePipelineSpec(pipeline));
  if (passes.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty pipeline '{}'", pipeline);
  if (drop_last) passes.pop_back();
  PassManager pm;
  for (const auto& [name, options] : passes) PC_RETURN_IF_ERROR(pm.AddPass(name, options));
  Compiled c;
  PC_ASSIGN_OR_RETURN(c.module, ir::LoadModule(path.string()));
  PassContext ctx{ops::GlobalOpRegistry()};
  PC_RETURN_IF_ERROR(pm.Run(*c.module, ctx));
  c.last_changed = !pm.timings().empty() && pm.timings().back().changed;
  return c;
}

// Both programs, every field (the listing leaves out bookkeeping attributes).
std::string Programs(const ir::Module& m) {
  auto main = ir::Serialize(m.compiled().main_program(), ir::Format::kText);
  auto startup = ir::Serialize(m.compiled().startup_program(), ir::Format::kText);
  return (main.ok() ? *main : "?") + "\n---\n" + (startup.ok() ? *startup : "?");
}

// The listing lines only one side has, in listing order, as "-" and "+" lines.
std::string ListingDiff(const std::string& before, const std::string& after) {
  auto lines = [](const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  auto only_in = [](const std::vector<std::string>& a, const std::vector<std::string>& b, const char* mark) {
    std::multiset<std::string> other(b.begin(), b.end());
    std::string d;
    for (const auto& l : a)
      if (auto it = other.find(l); it != other.end())
        other.erase(it);
      else
        d += mark + l + "\n";
    return d;
  };
  auto b = lines(before), a = lines(after);
  std::string d = only_in(b, a, "  - ") + only_in(a, b, "  + ");
  return d.empty() ? "  (the listings agree; a field it does not show differs)\n" : d;
}

TEST_CASE("pass goldens") {
  fs::path root = fs::path(PADDLEC_SOURCE_DIR) / "testdata/passes";
  REQUIRE(fs::exists(root));
  int cases = 0;
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    for (const auto& entry : fs::directory_iterator(dir.path())) {
      std::string name = entry.path().filename().string();
      if (!name.ends_with(".in.pbtxt")) continue;
      ++cases;
      std::string rel = fs::relative(entry.path(), PADDLEC_SOURCE_DIR).string();
      SUBCASE(rel.c_str()) {
        auto text = ReadFile(entry.path().string());
        REQUIRE(text.ok());
        auto checks = testing::ParseChecks(*text, rel);
        REQUIRE_MESSAGE(checks.ok(), (checks.ok() ? "" : checks.error().message()));
        REQUIRE_MESSAGE(!checks->empty(), rel << " has no CHECK lines: state what its last pass does, or write "
                                                 "CHECK-UNCHANGED (scripts/pass_listing.py "
                                              << rel << " shows the listing)");
        std::string pipeline = PipelineFor(*text, dir.path().filename().string());
        auto after = Compile(entry.path(), pipeline, false);
        REQUIRE_MESSAGE(after.ok(), (after.ok() ? "" : after.error().Render()));
        auto before = Compile(entry.path(), pipeline, true);
        REQUIRE_MESSAGE(before.ok(), (before.ok() ? "" : before.error().Render()));
        std::string listing = ir::FormatListing(*after->module);
        std::string last = ParsePipelineSpec(pipeline)->back().first;
        bool same = Programs(*before->module) == Programs(*after->module);
        std::string diff = same ? "  (nothing)\n" : ListingDiff(ir::FormatListing(*before->module), listing);
        auto failures = testing::MatchChecks(*checks, listing);
        for (const std::string& failure : failures) FAIL_CHECK(failure);
        if (!failures.empty())
          MESSAGE(rel << ": what pass '" << last << "' changed (scripts/pass_listing.py " << rel
                      << " prints the whole listing):\n"
                      << diff);

        if (checks->unchanged_line > 0) {
          CHECK_MESSAGE(same, rel << ":" << checks->unchanged_line << ": CHECK-UNCHANGED, but pass '" << last
                                  << "' changed the program:\n"
                                  << diff);
          CHECK_MESSAGE(!after->last_changed, rel << ":" << checks->unchanged_line << ": CHECK-UNCHANGED, but pass '"
                                                  << last << "' reported a change (Pass::Run returned true)");
        } else {
          CHECK_MESSAGE(!same, rel << ": pass '" << last << "' changed nothing; a no-change case says CHECK-UNCHANGED");
          CHECK_MESSAGE((after->last_changed || same), rel << ": pass '" << last
                                                           << "' changed the program but reported no change "
                                                              "(Pass::Run returned false):\n"
                                                           << diff);
        }
      }
    }
  }
  CHECK(cases > 0);
}

}  // namespace
}  // namespace paddlec::passes
