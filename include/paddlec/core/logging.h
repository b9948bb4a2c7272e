// Logging setup. Code logs through spdlog directly (spdlog::debug/info/warn); this sets the level
// from -v/-q and sends everything to stderr so stdout stays clean for program output.
#pragma once

namespace paddlec {

/// verbosity: -1 = quiet (errors only), 0 = warnings, 1 = info (-v), 2 = debug (-vv), 3+ = trace.
void InitLogging(int verbosity);

}  // namespace paddlec
