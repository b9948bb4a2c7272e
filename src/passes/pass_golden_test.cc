// Golden tests of every pass: testdata/passes/<pass>/<case>.in.pbtxt is compiled with the pipeline
// named on its "# passes:" header line (default "validate,<pass>") and the result must equal
// <case>.out.pbtxt byte for byte. Regenerate with scripts/update_goldens.py and review the diff.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "paddlec/core/file.h"
#include "paddlec/driver/driver.h"

namespace paddlec::passes {
namespace {

namespace fs = std::filesystem;

std::string PipelineFor(const fs::path& in, const std::string& pass_dir) {
  std::ifstream f(in);
  std::string line;
  while (std::getline(f, line))
    if (line.starts_with("# passes: ")) return line.substr(10);
  return pass_dir == "validate" ? "validate" : "validate," + pass_dir;
}

TEST_CASE("pass goldens") {
  fs::path root = fs::path(PADDLEC_SOURCE_DIR) / "testdata/passes";
  REQUIRE(fs::exists(root));
  // Paths in the output (source_file) are relative to the repository root, as the update script runs.
  REQUIRE(::chdir(PADDLEC_SOURCE_DIR) == 0);
  int cases = 0;
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    for (const auto& entry : fs::directory_iterator(dir.path())) {
      std::string name = entry.path().filename().string();
      if (!name.ends_with(".in.pbtxt")) continue;
      fs::path out = entry.path().parent_path() / (name.substr(0, name.size() - 9) + ".out.pbtxt");
      std::string rel = fs::relative(entry.path(), PADDLEC_SOURCE_DIR).string();
      SUBCASE(rel.c_str()) {
        driver::CompileOptions o;
        o.input = rel;
        o.output = "-";
        o.passes = PipelineFor(entry.path(), dir.path().filename().string());
        std::ostringstream got;
        Status st = driver::RunCompile(o, got);
        REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
        auto want = ReadFile(out.string());
        REQUIRE_MESSAGE(want.ok(), "missing golden " << out.string() << " (run scripts/update_goldens.py)");
        CHECK_MESSAGE(got.str() == *want, "output differs from " << out.string() << "; actual:\n" << got.str());
      }
      ++cases;
    }
  }
  CHECK(cases > 0);
}

}  // namespace
}  // namespace paddlec::passes
