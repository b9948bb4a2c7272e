// The training progress line (see progress.h).
#include "progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

namespace paddlec::driver {

std::string FormatDuration(double seconds) {
  auto s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}:{:02d}", s / 60, s % 60);
  return fmt::format("{}:{:02d}:{:02d}", s / 3600, s / 60 % 60, s % 60);
}

Progress::Progress(std::ostream& out, bool enabled, bool tty, int64_t total_steps)
    : out_(out), enabled_(enabled), tty_(tty), total_steps_(total_steps) {}

double Progress::EtaSeconds(Clock::time_point now) const {
  // The clock starts after the first step, whose time includes allocating the plan's buffers: the
  // ETA is the steady-state estimate.
  if (done_ < 2) return -1;
  double per_step = std::chrono::duration<double>(now - start_).count() / static_cast<double>(done_ - 1);
  return per_step * static_cast<double>(std::max<int64_t>(0, total_steps_ - done_));
}

void Progress::Update(int epoch, int epochs, int64_t batch, int64_t batches, double loss, double samples_per_s,
                      Clock::time_point now) {
  if (done_++ == 0) start_ = now;
  if (!enabled_) return;
  bool last = batch == batches;
  double eta = EtaSeconds(now);
  std::string eta_text = eta < 0 ? "ETA --" : "ETA " + FormatDuration(eta);
  if (tty_) {
    if (!last && std::chrono::duration<double>(now - last_draw_).count() < 0.1) return;
    last_draw_ = now;
    int width = 30, filled = static_cast<int>(width * batch / std::max<int64_t>(1, batches));
    out_ << fmt::format("\repoch {}/{} [{}{}] {}/{}  loss {:.4f}  {:.0f} samples/s  {}\x1b[K", epoch, epochs,
                        std::string(filled, '='), std::string(width - filled, ' '), batch, batches, loss, samples_per_s,
                        eta_text)
         << (last ? "\n" : "") << std::flush;
  } else {
    // Plain lines for logs: about ten per epoch.
    int64_t every = std::max<int64_t>(1, batches / 10);
    if (batch % every != 0 && !last) return;
    out_ << fmt::format("epoch {}/{}  step {}/{}  loss {:.4f}  {:.0f} samples/s  {}\n", epoch, epochs, batch, batches,
                        loss, samples_per_s, eta_text);
  }
}

}  // namespace paddlec::driver
