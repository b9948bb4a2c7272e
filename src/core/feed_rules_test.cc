// The feed rule the CLI and Python share: which dtypes convert (and which warn), which are refused,
// and the shape check with its note worded per front end.
#include "paddlec/core/feed_rules.h"

#include <doctest/doctest.h>

namespace paddlec {
namespace {

TEST_CASE("same-kind feeds convert, narrowing ones with a warning; other kinds are refused") {
  auto same = CheckFeedDType("img", DType::kFloat32, DType::kFloat32);
  REQUIRE(same.ok());
  CHECK(!same->convert);
  auto narrow = CheckFeedDType("img", DType::kFloat32, DType::kFloat64);
  REQUIRE(narrow.ok());
  CHECK(narrow->convert);
  CHECK(narrow->warning ==
        "input 'img' is declared float32: the fed float64 array is converted to it, which may lose "
        "precision");
  auto widen = CheckFeedDType("label", DType::kInt64, DType::kInt32);
  REQUIRE(widen.ok());
  CHECK((widen->convert && widen->warning.empty()));
  auto bad = CheckFeedDType("label", DType::kInt64, DType::kFloat32);
  REQUIRE(!bad.ok());
  CHECK(bad.error().message() == "input 'label' is declared int64 but the fed array is float32");
  auto complex = CheckFeedDType("x", DType::kFloat32, std::string_view("complex128"));
  REQUIRE(!complex.ok());
  CHECK(complex.error().message() == "input 'x' is declared float32 but the fed array is complex128");
  CHECK(!CheckFeedDType("m", DType::kBool, DType::kInt8).ok());
}

TEST_CASE("shape mismatches name both shapes; the reshape hint is the CLI's or Python's") {
  CHECK(CheckFeedDims("x", Dims{-1, 3}, Dims{5, 3}).ok());
  Status st = CheckFeedDims("label", Dims{-1, 1}, Dims{4});
  REQUIRE(!st.ok());
  CHECK(st.error().message() == "input 'label' is declared with shape [-1, 1] but the fed array has shape [4]");
  CHECK(st.error().NotesFor(Frontend::kCli) == std::vector<std::string>{"add a trailing dimension of 1: shape [4, 1]"});
  CHECK(st.error().NotesFor(Frontend::kPython) ==
        std::vector<std::string>{"add a trailing dimension of 1: array.reshape((4, 1))"});
  CHECK(st.error().Render(Frontend::kPython).find("--") == std::string::npos);
}

}  // namespace
}  // namespace paddlec
