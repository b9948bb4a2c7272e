// Host tests of the index arithmetic and scalar rules of the loss family's CUDA kernels (loss_index.h).
#include "loss/loss_index.h"

#include <doctest/doctest.h>

#include <cmath>
#include <initializer_list>
#include <limits>

namespace paddlec::ops::loss_index {
namespace {

TEST_CASE("loss_index: element -> (line, class) of an [outer, n, inner] view, and back") {
  for (int64_t outer : {1, 3})
    for (int64_t n : {1, 4, 7})
      for (int64_t inner : {1, 2, 5}) {
        CAPTURE(outer);
        CAPTURE(n);
        CAPTURE(inner);
        const AxisIndex ax{n, inner};
        int64_t e = 0;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t k = 0; k < n; ++k)
            for (int64_t i = 0; i < inner; ++i, ++e) {
              const int64_t line = o * inner + i;
              CHECK(ax.Line(e) == line);
              CHECK(ax.Class(e) == k);
              CHECK(ax.Base(line) + k * inner == e);
            }
      }
}

TEST_CASE("loss_index: bad labels are outside the classes and not ignore_index") {
  CHECK_FALSE(BadLabel(0, 7, -100));
  CHECK_FALSE(BadLabel(6, 7, -100));
  CHECK(BadLabel(7, 7, -100));
  CHECK(BadLabel(-1, 7, -100));
  CHECK_FALSE(BadLabel(-100, 7, -100));
  CHECK_FALSE(BadLabel(9, 7, 9));  // ignore_index may lie outside the classes
  CHECK(BadLabel(0, 0, -100));     // no classes: only ignore_index is valid
}

TEST_CASE("loss_index: the tolerable log bounds infinities at 1e20 and passes NaN") {
  CHECK(TolerableLog(0.0) == -1e20);
  CHECK(TolerableLog(0.0f) == -1e20f);
  CHECK(TolerableLog(std::numeric_limits<double>::infinity()) == 1e20);
  CHECK(TolerableLog(std::numeric_limits<float>::infinity()) == 1e20f);
  CHECK(std::isnan(TolerableLog(std::nan(""))));
  CHECK(std::isnan(TolerableLog(-1.0f)));
  CHECK(TolerableLog(0.5) == std::log(0.5));
  CHECK(TolerableLog(0.5f) == std::log(0.5f));
  CHECK(TolerableLog(std::numeric_limits<float>::denorm_min()) == std::log(std::numeric_limits<float>::denorm_min()));
}

}  // namespace
}  // namespace paddlec::ops::loss_index
