// The spin of waiting threads in libgomp's terms, for the CLI and for the Python package's _spin
// module alike (runtime/spin_count.h).
#include "paddlec/runtime/spin_count.h"

#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "paddlec/core/number.h"

namespace paddlec::runtime {

double PauseNanos() {
  using Clock = std::chrono::steady_clock;
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    for (int i = 0; i < 128; ++i) _mm_pause();
    best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / 128);
  }
  return std::max(best, 0.5);
}

std::optional<int64_t> BoundedSpinCount() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return std::nullopt;
  const char* set = std::getenv(kSpinMicrosVariable);
  const double micros = (set != nullptr ? ParseNonNegative(set) : std::nullopt).value_or(kDefaultSpinMicros);
  return static_cast<int64_t>(std::clamp(micros * 1000.0 / PauseNanos(), 0.0, 1e6));
}

}  // namespace paddlec::runtime
