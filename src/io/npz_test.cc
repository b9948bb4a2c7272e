// .npz archives: what NumPy writes (stored and deflated) reads back, ours round-trips, and damaged
// archives are errors that name the archive and the member.
#include "paddlec/io/npz.h"

#include <doctest/doctest.h>

#include "paddlec/core/file.h"
#include "testing/op_tester.h"

namespace paddlec::io {
namespace {

using testing::HostAllocator;
using testing::MakeTensor;
using testing::ToVector;

void CheckNumpyArrays(const NamedTensors& got) {
  REQUIRE(got.size() == 2);
  CHECK(got[0].first == "x");
  CHECK(got[0].second.dims() == Dims{2, 3});
  CHECK(ToVector<float>(got[0].second) == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(got[1].first == "label");
  CHECK(got[1].second.dtype() == DType::kInt64);
  CHECK(ToVector<int64_t>(got[1].second) == std::vector<int64_t>{1, 7});
}

TEST_CASE("npz archives written by np.savez and np.savez_compressed are read") {
  for (const char* f : {"testdata/npz/stored.npz", "testdata/npz/deflated.npz"}) {
    CAPTURE(f);
    auto got = ReadNpz(f, HostAllocator());
    REQUIRE_MESSAGE(got.ok(), got.error().message());
    CheckNumpyArrays(*got);
  }
}

TEST_CASE("npz round trips, and the bytes are the same every time") {
  NamedTensors in;
  in.emplace_back("x", MakeTensor<float>({2, 3}, {0, 1, 2, 3, 4, 5}));
  in.emplace_back("label", MakeTensor<int64_t>({2, 1}, {1, 7}));
  auto bytes = SerializeNpz(in);
  REQUIRE(bytes.ok());
  CHECK(*SerializeNpz(in) == *bytes);
  auto back = ParseNpz(*bytes, HostAllocator(), "mem.npz");
  REQUIRE_MESSAGE(back.ok(), back.error().message());
  CheckNumpyArrays(*back);
}

TEST_CASE("damaged npz archives are errors naming the problem") {
  auto stored = ReadFile("testdata/npz/stored.npz");
  REQUIRE(stored.ok());
  auto message = [](std::string bytes) {
    auto r = ParseNpz(bytes, HostAllocator(), "a.npz");
    REQUIRE(!r.ok());
    return r.error().message();
  };
  CHECK(message("hello") == "'a.npz' is not a valid .npz archive: too short for a zip archive");
  CHECK(message(std::string(100, 'x')) ==
        "'a.npz' is not a valid .npz archive: no end-of-central-directory record (is it a zip file?)");
  std::string flipped = *stored;
  size_t p = flipped.rfind("\x93NUMPY");  // a data byte of the last member
  flipped[flipped.find("descr", p)] ^= 1;
  CHECK(message(flipped) == "'a.npz' is not a valid .npz archive: member 'label.npy' fails its CRC-32 check");
  // The central directory claims more than the file holds.
  std::string cut = stored->substr(0, 100) + stored->substr(stored->size() - 22);
  CHECK(message(cut).starts_with("'a.npz' is not a valid .npz archive: "));
}

}  // namespace
}  // namespace paddlec::io
