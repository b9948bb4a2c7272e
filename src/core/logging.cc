// spdlog configured for a command-line tool: stderr, short pattern, level from -v/-q.
#include "paddlec/core/logging.h"

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "paddlec/core/error.h"

namespace paddlec {
namespace {

/// stderr, with names from the input escaped as in error messages (EscapeForTerminal).
class EscapingStderrSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    std::string_view text(buf.data(), buf.size());
    if (text.ends_with('\n')) text.remove_suffix(1);
    std::string line = EscapeForTerminal(text) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

}  // namespace

void InitLogging(int verbosity) {
  static bool initialized = [] {
    auto logger = std::make_shared<spdlog::logger>("paddlec", std::make_shared<EscapingStderrSink>());
    spdlog::register_logger(logger);
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
