// paddlec's switches in the environment (PADDLEC_TILED_GEMM, PADDLEC_WINOGRAD, PADDLEC_AVX512,
// PADDLEC_SPIN_US): each is read once, where it is used, deep below any Status. A value that is not
// one of the switch's own is not silently taken for the default: it gets a warning on stderr naming
// what the switch takes, as libgomp does for OMP_* variables, since figures compared under a
// misspelled switch (PADDLEC_TILED_GEMM=Off) would be the default's.
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>

namespace paddlec {

/// The value of `name` when it is one of `choices`; nullopt when it is unset or empty, and when it
/// is anything else, which is warned about on stderr.
std::optional<std::string_view> EnvChoice(const char* name, std::initializer_list<std::string_view> choices);

/// The value of `name` as a finite number of at least 0 (the whole value: "50us" is not one);
/// nullopt when it is unset or empty, and when it is anything else, which is warned about on stderr
/// unless `warn` is false.
std::optional<double> EnvNonNegative(const char* name, bool warn = true);

}  // namespace paddlec
