// Wall-clock figures for the skipped benchmark cases of the unit tests (run with --no-skip): each
// of `runs` runs repeats `fn` for at least `min_ms`, and the median run's time per call is the
// figure, so a noise burst on a shared machine moves it less than a mean.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace paddlec::testing {

/// Milliseconds per call of `fn`: the median of `runs` runs of at least `min_ms`, after 3 warm-ups.
template <class F>
double MedianWallMs(F&& fn, double min_ms = 100, int runs = 7) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> per_call;
  for (int r = 0; r < runs; ++r) {
    int reps = 0;
    double elapsed = 0;
    const auto t0 = std::chrono::steady_clock::now();
    do {
      fn();
      ++reps;
      elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    } while (elapsed < min_ms);
    per_call.push_back(elapsed / reps);
  }
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

}  // namespace paddlec::testing
