// How long paddlec's waiting threads spin before they sleep, and the same spin in libgomp's terms.
// Nothing here needs the rest of paddlec: the Python package's _spin module compiles it to set
// GOMP_SPINCOUNT before it loads the library that loads libgomp (runtime/threads.h).
#pragma once

#include <cstdint>
#include <optional>

namespace paddlec::runtime {

/// The spin before an idle worker, or a caller waiting for one, sleeps, unless PADDLEC_SPIN_US says
/// otherwise. 200 rather than 50: beside busy processes 50 us let a bound team's two threads fall
/// out of step with each other, each join waiting for the other CPU's busy process, where 200 kept
/// them together; on an idle machine the two measured alike (docs/performance.md, "What two busy
/// processes leave a two-core machine").
inline constexpr int kDefaultSpinMicros = 200;

/// The variable that sets the spin: core/env.cc's kSpinMicrosSwitch names the same one (checked in
/// runtime_test.cc), which this file cannot use without the rest of core.
inline constexpr char kSpinMicrosVariable[] = "PADDLEC_SPIN_US";

/// One `pause` on this CPU, in ns (the least of a few timed runs): from ~1 to ~150 ns across x86
/// generations, so a fixed count of them expresses no time.
double PauseNanos();

/// The GOMP_SPINCOUNT that spins about PADDLEC_SPIN_US (kDefaultSpinMicros when unset or not a
/// number of at least 0) microseconds of this CPU's `pause`, at most a million; nullopt when the
/// user set OMP_WAIT_POLICY or GOMP_SPINCOUNT, which are theirs to decide.
std::optional<int64_t> BoundedSpinCount();

}  // namespace paddlec::runtime
