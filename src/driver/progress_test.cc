// The training progress line: the ETA from the steady-state step time, plain lines for logs, and
// nothing at all when quiet.
#include "progress.h"

#include <doctest/doctest.h>

#include <sstream>

namespace paddlec::driver {
namespace {

using std::chrono::milliseconds;

TEST_CASE("durations are shown as seconds, m:ss or h:mm:ss") {
  CHECK(FormatDuration(0) == "0s");
  CHECK(FormatDuration(59.4) == "59s");
  CHECK(FormatDuration(187) == "3:07");
  CHECK(FormatDuration(3723) == "1:02:03");
  CHECK(FormatDuration(-5) == "0s");
}

TEST_CASE("the ETA counts the steps left at the time per step after the first") {
  std::ostringstream out;
  Progress p(out, /*enabled=*/true, /*tty=*/false, /*total_steps=*/20);
  auto t0 = Progress::Clock::time_point{};
  // Two epochs of 10 steps; the first step is slow (buffers), the others take 100 ms each.
  p.Update(1, 2, 1, 10, 2.5, 100, t0 + milliseconds(900));
  CHECK(p.EtaSeconds(t0 + milliseconds(900)) < 0);
  for (int b = 2; b <= 10; ++b) p.Update(1, 2, b, 10, 2.0, 100, t0 + milliseconds(900 + 100 * (b - 1)));
  // 10 done, 10 left at 100 ms.
  CHECK(p.EtaSeconds(t0 + milliseconds(1800)) == doctest::Approx(1.0));
  std::string text = out.str();
  CHECK(text.find("epoch 1/2  step 1/10  loss 2.5000  100 samples/s  ETA --\n") != std::string::npos);
  CHECK(text.find("epoch 1/2  step 10/10  loss 2.0000  100 samples/s  ETA 1s\n") != std::string::npos);
}

TEST_CASE("a terminal gets one redrawn line per epoch with the ETA; disabled progress prints nothing") {
  std::ostringstream tty;
  Progress p(tty, true, /*tty=*/true, 3);
  auto t0 = Progress::Clock::time_point{};
  for (int b = 1; b <= 3; ++b) p.Update(1, 1, b, 3, 1.0, 50, t0 + std::chrono::seconds(100 * b));
  CHECK(tty.str().find("\repoch 1/1 [==============================] 3/3  loss 1.0000  50 samples/s  ETA 0s") !=
        std::string::npos);
  CHECK(tty.str().find("ETA 1:40") != std::string::npos);  // after step 2: 1 step of 100 s left
  CHECK(tty.str().back() == '\n');

  std::ostringstream quiet;
  Progress q(quiet, /*enabled=*/false, true, 3);
  for (int b = 1; b <= 3; ++b) q.Update(1, 1, b, 3, 1.0, 50, t0 + std::chrono::seconds(b));
  CHECK(quiet.str().empty());
}

}  // namespace
}  // namespace paddlec::driver
