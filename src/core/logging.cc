// spdlog configured for a command-line tool: stderr, short pattern, level from -v/-q.
#include "paddlec/core/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace paddlec {

void InitLogging(int verbosity) {
  static bool initialized = [] {
    auto logger = spdlog::stderr_logger_st("paddlec");
    logger->set_pattern("[%l] %v");
    spdlog::set_default_logger(logger);
    return true;
  }();
  (void)initialized;
  spdlog::level::level_enum level = spdlog::level::warn;
  if (verbosity < 0) level = spdlog::level::err;
  else if (verbosity == 1) level = spdlog::level::info;
  else if (verbosity == 2) level = spdlog::level::debug;
  else if (verbosity >= 3) level = spdlog::level::trace;
  spdlog::set_level(level);
}

}  // namespace paddlec
