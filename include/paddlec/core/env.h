// paddlec's tuning switches in the environment, listed here once with the values each takes. A
// value that is not one of them is not silently taken for the default, since figures compared under
// a misspelled switch (PADDLEC_TILED_GEMM=Off) would be the default's: `paddlec run` and `train` stop
// with an error before they start (CheckEnvSwitches), and the kernels, which read a switch once
// where they use it, deep below any Status, warn on stderr (the Python package and the benchmark
// reach them without the driver's check), as libgomp does for OMP_* variables.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "paddlec/core/error.h"

namespace paddlec {

/// A switch and the values it takes; none listed: a number of at least 0.
struct EnvSwitch {
  const char* name;
  std::span<const std::string_view> choices;
};

extern const EnvSwitch kTiledGemmSwitch;   // PADDLEC_TILED_GEMM: auto, off, always (math/gemm.h)
extern const EnvSwitch kWinogradSwitch;    // PADDLEC_WINOGRAD: on, off (nn/winograd.h)
extern const EnvSwitch kAvx512Switch;      // PADDLEC_AVX512: auto, on, off (common/microkernel.h)
extern const EnvSwitch kSpinMicrosSwitch;  // PADDLEC_SPIN_US: microseconds (runtime/threads.h)

/// The switch's value when it is one of its choices; nullopt when it is unset or empty, and when it
/// is anything else, which is warned about on stderr.
std::optional<std::string_view> EnvChoice(const EnvSwitch& s);

/// The switch's value as a finite number of at least 0 (the whole value: "50us" is not one);
/// nullopt when it is unset or empty, and when it is anything else, which is warned about on stderr
/// unless `warn` is false.
std::optional<double> EnvNonNegative(const EnvSwitch& s, bool warn = true);

/// An error naming every switch set to a value it does not take (the first in the message, the rest
/// in notes); OK otherwise.
Status CheckEnvSwitches();

}  // namespace paddlec
