// `paddlec run` and `train` must start libgomp with a bounded spin (runtime/threads.h): checked on
// the real binary through libgomp's own report of its settings (OMP_DISPLAY_ENV), which it prints
// when it starts, in the first process and again in the re-executed one (whose report is the last).
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

namespace paddlec::driver {
namespace {

/// What libgomp last reports as GOMP_SPINCOUNT when `paddlec train --help` runs with `env` prepended.
std::string ReportedSpinCount(const std::string& env) {
  std::string cmd = env + " OMP_DISPLAY_ENV=VERBOSE " + PADDLEC_BINARY_DIR + "/paddlec train --help 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  ::pclose(p);
  size_t at = out.rfind("GOMP_SPINCOUNT = '");
  REQUIRE_MESSAGE(at != std::string::npos, out);
  at += 18;
  return out.substr(at, out.find('\'', at) - at);
}

TEST_CASE("libgomp starts with paddlec's bounded spin, or with the user's own setting") {
  const std::string ours = ReportedSpinCount("env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY PADDLEC_SPIN_US=50");
  CHECK(ours != "300000");  // libgomp's default, tens of milliseconds of spinning
  CHECK(std::stoll(ours) <= 100000);
  CHECK(ReportedSpinCount("env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY PADDLEC_SPIN_US=0") == "0");
  CHECK(ReportedSpinCount("env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=777") == "777");
}

}  // namespace
}  // namespace paddlec::driver
