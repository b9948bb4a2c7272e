// The training progress line: a bar with loss, throughput and the time left, redrawn in place on a
// terminal, or about ten plain lines per epoch for logs; nothing when quiet.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace paddlec::driver {

/// "42s", "3:07", "1:02:03": a duration the way progress bars show it.
std::string FormatDuration(double seconds);

class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  /// `total_steps`: the steps this run will take (epochs left x batches), for the ETA. `tty`: redraw
  /// one line with '\r' instead of printing lines.
  Progress(std::ostream& out, bool enabled, bool tty, int64_t total_steps);

  /// After step `batch` of `batches` in epoch `epoch` (1-based); `loss` is the epoch's running mean.
  void Update(int epoch, int epochs, int64_t batch, int64_t batches, double loss, double samples_per_s,
              Clock::time_point now = Clock::now());

  /// Seconds left at the mean time of the steps after the first; negative before the second step.
  double EtaSeconds(Clock::time_point now) const;

 private:
  std::ostream& out_;
  bool enabled_, tty_;
  int64_t total_steps_, done_ = 0;
  Clock::time_point start_{}, last_draw_{};
};

}  // namespace paddlec::driver
