// Tests of the io layer: .npy files, PaddlePaddle parameter files and the image datasets.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "paddlec/core/file.h"
#include "paddlec/io/dataset.h"
#include "paddlec/exec/executor.h"
#include "paddlec/io/npy.h"
#include "paddlec/io/params.h"
#include "paddlec/ir/serialize.h"
#include "testing/op_tester.h"

namespace paddlec::io {
namespace {

using testing::HostAllocator;
using testing::MakeTensor;
using testing::ToVector;

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("paddlec_io_test_" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

TEST_CASE("npy round trips for every supported dtype") {
  TempDir dir;
  auto check = [&](const runtime::Tensor& t) {
    REQUIRE(WriteNpy(dir / "t.npy", t).ok());
    auto back = ReadNpy(dir / "t.npy", HostAllocator());
    REQUIRE_MESSAGE(back.ok(), (back.ok() ? "" : back.error().Render()));
    CHECK(back->dtype() == t.dtype());
    CHECK(back->dims() == t.dims());
    CHECK(std::memcmp(back->raw_data(), t.raw_data(), t.nbytes()) == 0);
  };
  check(MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  check(MakeTensor<double>({1}, {3.5}));
  check(MakeTensor<int64_t>({3, 1}, {7, -8, 9}));
  check(MakeTensor<int32_t>({2}, {1, 2}));
  check(MakeTensor<uint8_t>({4}, {0, 1, 254, 255}));
  check(MakeTensor<bool>({2}, {true, false}));
  check(MakeTensor<float>({}, {42}));
  check(MakeTensor<float>({0, 3}, {}));
}

TEST_CASE("npy files numpy wrote parse (header padding, shape syntax)") {
  // np.save of np.arange(6, dtype='<f4').reshape(2, 3), byte for byte.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(118 - header.size() - 1, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(118) + '\0' + header;
  for (float v : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) bytes.append(reinterpret_cast<const char*>(&v), 4);
  auto t = ParseNpy(bytes, HostAllocator(), "a.npy");
  REQUIRE(t.ok());
  CHECK(t->dims() == Dims{2, 3});
  CHECK(ToVector<float>(*t)[5] == 5.f);
}

TEST_CASE("Malformed npy files are errors, never crashes or huge allocations") {
  auto parse = [](std::string bytes) { return ParseNpy(bytes, HostAllocator(), "bad.npy"); };
  std::string good = *SerializeNpy(MakeTensor<float>({2, 2}, {1, 2, 3, 4}));
  CHECK(parse("").error().message() == "'bad.npy' is not a valid .npy file: missing the \\x93NUMPY magic");
  auto truncated = parse(good.substr(0, good.size() - 3));
  CHECK(truncated.error().message() ==
        "'bad.npy' is not a valid .npy file: shape [2, 2] of float32 needs 16 data bytes, the file has 13");
  std::string huge = good;
  huge.replace(huge.find("(2, 2)"), 6, "(99999999999, 99999999)");
  CHECK_FALSE(parse(huge).ok());
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  CHECK(parse(fortran).error().message() == "'bad.npy' is in Fortran order; save it in C order");
  std::string c16 = good;
  c16.replace(c16.find("<f4"), 3, "<c8");
  CHECK(parse(c16).error().code() == ErrorCode::kUnimplemented);
  std::string big_endian = good;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  CHECK(parse(big_endian).error().code() == ErrorCode::kUnimplemented);
  CHECK_FALSE(parse(good.substr(0, 12)).ok());
}

std::unique_ptr<ir::Module> ParamsProgram() {
  auto m = ir::ParseModule(R"pb(
blocks {
  idx: 0
  parent_idx: -1
  vars { name: "w" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2 dims: 3 } } } persistable: true }
  vars { name: "b" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 3 } } } persistable: true }
  vars { name: "step" type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 dims: 1 } } } persistable: true }
}
)pb",
                           ir::Format::kText, "p.pbtxt");
  REQUIRE(m.ok());
  return std::move(m).value();
}

TEST_CASE("Tensor records follow PaddlePaddle's layout byte for byte") {
  runtime::Tensor t(DType::kFloat32, {784, 10});
  REQUIRE(t.Allocate(HostAllocator()).ok());
  auto rec = SerializeTensorRecord(t);
  REQUIRE(rec.ok());
  std::string header("\x00\x00\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x07\x00\x00\x00"
                     "\x08\x05\x10\x90\x06\x10\x0a", 27);
  CHECK(rec->substr(0, 27) == header);
  CHECK(rec->size() == 27 + 31360);
}

TEST_CASE("Params files round trip and are verified on load") {
  TempDir dir;
  auto m = ParamsProgram();
  auto device = exec::CreateDeviceContext(Place::CPU());
  REQUIRE(device.ok());
  runtime::Scope scope;
  REQUIRE((*device)->CopyFromHost(MakeTensor<float>({3}, {0.5f, 1.5f, 2.5f}), scope.Var("b").tensor()).ok());
  REQUIRE((*device)->CopyFromHost(MakeTensor<int64_t>({1}, {12}), scope.Var("step").tensor()).ok());
  REQUIRE((*device)->CopyFromHost(MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}), scope.Var("w").tensor()).ok());
  std::vector<std::string> names = {"b", "step", "w"};
  REQUIRE(SaveParams(dir / "p.pdiparams", names, scope, **device).ok());

  runtime::Scope loaded;
  const ir::Block* block = &m->main().global_block();
  Status st = LoadParams(dir / "p.pdiparams", names, loaded, **device, block);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  CHECK(ToVector<float>(loaded.Find("w")->tensor()) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(ToVector<int64_t>(loaded.Find("step")->tensor()) == std::vector<int64_t>{12});

  auto bytes = *ReadFile(dir / "p.pdiparams");
  // Truncated inside the data of the last tensor: the error names it.
  REQUIRE(WriteFileAtomic(dir / "cut.pdiparams", bytes.substr(0, bytes.size() - 5)).ok());
  runtime::Scope s2;
  Status cut = LoadParams(dir / "cut.pdiparams", names, s2, **device, block);
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().message().find("ends inside the data of tensor 'w'") != std::string::npos);
  // More records than the program has parameters.
  REQUIRE(WriteFileAtomic(dir / "extra.pdiparams", bytes + bytes.substr(0, 40)).ok());
  Status extra = LoadParams(dir / "extra.pdiparams", names, s2, **device, block);
  REQUIRE_FALSE(extra.ok());
  CHECK(extra.error().message() ==
        "'" + (dir / "extra.pdiparams") + "' has 40 bytes after the last of the 3 parameters the program expects");
  // Records in the wrong order (a file from another program): the declaration check catches it.
  Status swapped = LoadParams(dir / "p.pdiparams", {"w", "step", "b"}, s2, **device, block);
  REQUIRE_FALSE(swapped.ok());
  CHECK(swapped.error().message().find("but the program declares parameter 'w' as float32 [2, 3]") !=
        std::string::npos);
  // A file that is not a params file at all.
  REQUIRE(WriteFileAtomic(dir / "junk", "\x80\x04\x95pickle").ok());
  Status junk = LoadParams(dir / "junk", names, s2, **device, block);
  REQUIRE_FALSE(junk.ok());
  CHECK(junk.error().notes().at(0) == "a .pdparams file (Python pickle) is not a .pdiparams file (save_combine)");
}

TEST_CASE("Saving a parameter that holds no value writes nothing") {
  TempDir dir;
  auto device = exec::CreateDeviceContext(Place::CPU());
  runtime::Scope scope;
  Status st = SaveParams(dir / "p", {"missing"}, scope, **device);
  REQUIRE_FALSE(st.ok());
  CHECK_FALSE(std::filesystem::exists(dir / "p"));
}

TEST_CASE("An image read as a sequence of rows ends at its last row with ink") {
  // Three 4x2 images: ink in rows 0 and 2 (so 3 rows, the blank row 1 inside is kept), none, all.
  ClassificationSet set{.count = 3, .height = 4, .width = 2};
  set.images = {1, 0, 0, 0, 0, 5, 0, 0, /**/ 0, 0, 0, 0, 0, 0, 0, 0, /**/ 0, 0, 0, 0, 0, 0, 0, 1};
  CHECK(set.InkedRows(0) == 3);
  CHECK(set.InkedRows(1) == 1);  // a blank image is one row: a sequence is never empty
  CHECK(set.InkedRows(2) == 4);
  // After mean/std normalization a blank pixel is no longer 0: `blank` says what it is.
  for (float& v : set.images) v = v * 0.5f - 0.25f;
  set.blank = -0.25f;
  CHECK(set.InkedRows(0) == 3);
  CHECK(set.InkedRows(1) == 1);
}

TEST_CASE("An image read as a bag of words gives one hashed id per 4x4 patch with ink") {
  ClassificationSet set{.count = 2, .height = 28, .width = 28};
  set.images.assign(2 * 28 * 28, 0.0f);
  auto pixel = [&](int i, int r, int c) -> float& { return set.images[(i * 28 + r) * 28 + c]; };
  pixel(0, 0, 0) = 1.0f;                          // patch 0: bit 0
  pixel(0, 4, 4) = 0.9f, pixel(0, 5, 5) = 0.6f;  // patch 8 (row 1, column 1): bits 0 and 5
  pixel(0, 4, 5) = 0.5f;                          // exactly half intensity: no ink
  pixel(0, 27, 27) = 0.7f;                        // patch 48: bit 15
  pixel(1, 10, 14) = 1.0f;                        // patch 17 (row 2, column 3): bit 10
  // The ids configs/sparse_bow.py's pattern_ids gives the same images (printed by it once).
  std::vector<int64_t> ids;
  set.AppendPatternIds(0, int64_t{1} << 40, ids);
  CHECK(ids == std::vector<int64_t>{1218333409, 1310946441, 3486994736});
  ids.clear();
  set.AppendPatternIds(0, 1000, ids);
  set.AppendPatternIds(1, 1000, ids);
  CHECK(ids == std::vector<int64_t>{409, 441, 736, 953});
  ids.clear();
  set.AppendPatternIds(0, 1000, ids);  // after mean/std normalization `half` is the threshold
  for (float& v : set.images) v = v * 2.0f - 1.0f;
  set.half = 0.0f;
  std::vector<int64_t> normalized;
  set.AppendPatternIds(0, 1000, normalized);
  CHECK(normalized == ids);
}

}  // namespace
}  // namespace paddlec::io
