// What every libFuzzer target (src/**/*_fuzzer.cc, built by scripts/fuzz.sh) asserts about a
// failure: it is a rendered "error: ..." diagnostic with a message. Anything else (a crash, an
// abort, an exception, a sanitizer report, a malformed error) is a bug the fuzzer reports.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "paddlec/core/error.h"

namespace paddlec::fuzz {

/// Aborts (which libFuzzer reports as a crash, saving the input) unless `st` is OK or a proper error.
inline void CheckDiagnostic(const Status& st) {
  if (st.ok()) return;
  std::string text = st.error().Render();
  if (!text.starts_with("error: ") || st.error().message().empty()) {
    std::fprintf(stderr, "malformed diagnostic: %s\n", text.c_str());
    std::abort();
  }
}

/// Aborts when an invariant the target checks on a success does not hold.
inline void Require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
  std::abort();
}

}  // namespace paddlec::fuzz
