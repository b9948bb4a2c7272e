// Tests of the core layer: dims arithmetic, errors, dtypes, places, files and environment switches.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "paddlec/core/dims.h"
#include "paddlec/core/dtype.h"
#include "paddlec/core/env.h"
#include "paddlec/core/error.h"
#include "paddlec/core/file.h"
#include "paddlec/core/place.h"

namespace paddlec {
namespace {

TEST_CASE("Diagnostics escape terminal control sequences in names, keep printable UTF-8") {
  CHECK(EscapeForTerminal("plain name_0.w@GRAD") == "plain name_0.w@GRAD");
  CHECK(EscapeForTerminal("a\x1b[2Jb\x07\n\t\x7f") == "a\\x1b[2Jb\\x07\\x0a\\x09\\x7f");
  CHECK(EscapeForTerminal("gr\xc3\xb6\xc3\x9f" "e \xe2\x86\x92 \xf0\x9f\x98\x80") == "gr\xc3\xb6\xc3\x9f" "e \xe2\x86\x92 \xf0\x9f\x98\x80");
  CHECK(EscapeForTerminal("c1 \xc2\x9b" "31m") == "c1 \\xc2\\x9b31m");  // U+009B, the one-byte CSI
  CHECK(EscapeForTerminal("bad \xff\xc3 \xed\xa0\x80") == "bad \\xff\\xc3 \\xed\\xa0\\x80");  // not UTF-8
  Error e = MakeError(ErrorCode::kValidation, "undefined variable '{}'", "x\x1b]0;t\x07");
  e.At({.block = 0, .op = 1, .op_type = "re\x1blu"}).Note("did you mean '\x1b'?");
  CHECK(e.Render() ==
        "error: block 0, op 1 (re\\x1blu): undefined variable 'x\\x1b]0;t\\x07'\nnote: did you mean '\\x1b'?\n");
}

TEST_CASE("Dims: numel, unknown dims and printing") {
  CHECK(Dims{}.Numel() == 1);
  CHECK(Dims{2, 3, 4}.Numel() == 24);
  CHECK(Dims{-1, 784}.Numel() == -1);
  CHECK(Dims{2, 3, 4}.Product(1, 3) == 12);
  CHECK(Dims{-1, 784}.ToString() == "[-1, 784]");
  CHECK(Dims{}.ToString() == "[]");
  CHECK(DimsMatch({-1, 4}, {8, 4}));
  CHECK_FALSE(DimsMatch({3, 4}, {8, 4}));
  CHECK_FALSE(DimsMatch({4}, {1, 4}));
  CHECK(DimMul(-1, 4) == -1);
  CHECK(DimAdd(3, 4) == 7);
  CHECK(DimMerge(-1, 5) == 5);
  Dims d{1, 2, 3};
  d.insert(1, 9);
  CHECK(d == Dims{1, 9, 2, 3});
  d.erase(0);
  CHECK(d == Dims{9, 2, 3});
  CHECK(NormalizeAxis(-1, 3) == 2);
  CHECK(NormalizeAxis(3, 3) == -1);
}

TEST_CASE("Dims: rank and size limits") {
  std::vector<int64_t> ten(10, 1);
  auto too_deep = Dims::FromRange(ten.begin(), ten.end());
  REQUIRE_FALSE(too_deep.ok());
  CHECK(too_deep.error().message() == "rank exceeds the maximum of 9");
  CHECK(CheckDims({1000000, 1000000}).ok());
  Status huge = CheckDims({1000000, 1000000, 1000});
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().code() == ErrorCode::kResourceExhausted);
  // Products that would overflow int64 are caught, not wrapped.
  CHECK_FALSE(CheckDims({int64_t{1} << 40, int64_t{1} << 40}).ok());
  CHECK_FALSE(CheckDims({4, -2}).ok());
  CHECK(CheckDims({-1, 0, 5}).ok());
}

TEST_CASE("WindowOutputSize follows the conv/pool formula") {
  CHECK(WindowOutputSize(28, 3, 1, 1, 1, 1) == 28);
  CHECK(WindowOutputSize(28, 2, 0, 0, 2, 1) == 14);
  CHECK(WindowOutputSize(7, 3, 0, 0, 2, 1) == 3);
  CHECK(WindowOutputSize(7, 3, 0, 0, 2, 1, /*ceil_mode=*/true) == 3);
  CHECK(WindowOutputSize(8, 3, 0, 0, 2, 1, /*ceil_mode=*/true) == 4);
  CHECK(WindowOutputSize(13, 3, 2, 2, 1, 2) == 13);
  CHECK(WindowOutputSize(-1, 3, 1, 1, 1, 1) == -1);
  CHECK(WindowOutputSize(2, 5, 0, 0, 1, 1) == -2);
}

TEST_CASE("Error rendering: location, notes and further errors") {
  Error e = MakeError(ErrorCode::kValidation, "unknown op type '{}'", "relux");
  e.At({.file = "m.pbtxt", .line = 7, .column = 3, .block = 0, .op = 2, .op_type = "relux"});
  e.Note("did you mean 'relu'?");
  e.Append(Error(ErrorCode::kValidation, "second").At({.block = 1}));
  CHECK(e.Render() ==
        "error: m.pbtxt:7:3: block 0, op 2 (relux): unknown op type 'relux'\n"
        "note: did you mean 'relu'?\n"
        "error: block 1: second\n");
  CHECK(Error(ErrorCode::kIO, "plain").Render() == "error: plain\n");
}

TEST_CASE("StatusOr and the propagation macros") {
  auto half = [](int x) -> StatusOr<int> {
    PC_ENSURE(x % 2 == 0, ErrorCode::kInvalidArgument, "{} is odd", x);
    return x / 2;
  };
  auto quarter = [&](int x) -> StatusOr<int> {
    PC_ASSIGN_OR_RETURN(int h, half(x));
    return half(h);
  };
  CHECK(*quarter(8) == 2);
  auto bad = quarter(6);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message() == "3 is odd");
  Status ok;
  CHECK(ok.ok());
}

TEST_CASE("DType names, sizes and wire numbers") {
  CHECK(SizeOf(DType::kFloat32) == 4);
  CHECK(SizeOf(DType::kInt64) == 8);
  CHECK(DTypeName(DType::kInt64) == "int64");
  CHECK(*ParseDType("FP32") == DType::kFloat32);
  CHECK(*ParseDType("int64") == DType::kInt64);
  CHECK_FALSE(ParseDType("complex64"));
  CHECK(*DTypeFromProto(5) == DType::kFloat32);
  CHECK_FALSE(DTypeFromProto(7).ok());  // LOD_TENSOR is a variable kind, not an element type
  int seen = 0;
  CHECK(VisitDType(DType::kFloat64, [&]<class T>() { seen = sizeof(T); }).ok());
  CHECK(seen == 8);
  CHECK_FALSE(VisitDType(DType::kFloat16, [&]<class T>() {}).ok());
}

TEST_CASE("Places parse as the CLI spells them") {
  CHECK(ParsePlace("cpu")->is_cpu());
  CHECK(*ParsePlace("gpu") == Place::CUDA(0));
  CHECK(*ParsePlace("gpu:2") == Place::CUDA(2));
  CHECK(ParsePlace("gpu:2")->ToString() == "gpu:2");
  CHECK_FALSE(ParsePlace("gpu:x").ok());
  CHECK_FALSE(ParsePlace("tpu").ok());
}

TEST_CASE("Files: atomic writes leave nothing behind on failure") {
  auto dir = std::filesystem::temp_directory_path() / ("paddlec_core_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "out.bin").string();
  REQUIRE(WriteFileAtomic(path, "first").ok());
  CHECK(*ReadFile(path) == "first");
  Status failed = WriteFileAtomicStreamed(path, [](const ByteSink& sink) -> Status {
    PC_RETURN_IF_ERROR(sink("partial"));
    return Error(ErrorCode::kIO, "disk full");
  });
  CHECK_FALSE(failed.ok());
  CHECK(*ReadFile(path) == "first");  // the old file is intact
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  CHECK(files == 1);  // and no temporary is left
  auto big = ReadFile(path, 3);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().code() == ErrorCode::kResourceExhausted);
  CHECK_FALSE(ReadFile((dir / "missing").string()).ok());
  CHECK_FALSE(ReadFile(dir.string()).ok());
  CHECK(FileExtension("a/b.PbTxt") == ".pbtxt");
  CHECK(FileExtension("a.b/c") == "");
  std::filesystem::remove_all(dir);
}

/// What `fn` writes to stderr.
template <class F>
std::string CapturedStderr(F&& fn) {
  const auto path = std::filesystem::temp_directory_path() / ("paddlec_core_test_stderr_" + std::to_string(getpid()));
  std::fflush(stderr);
  const int saved = dup(2);
  std::FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  dup2(fileno(f), 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::fclose(f);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  return text.str();
}

TEST_CASE("Environment switches: their own values are taken, others are warned about and ignored") {
  constexpr std::string_view kChoices[] = {"auto", "off", "always"};
  const EnvSwitch choice_switch{"PADDLEC_CORE_TEST_SWITCH", kChoices}, number_switch{"PADDLEC_CORE_TEST_NUMBER", {}};
  auto choice = [&] { return EnvChoice(choice_switch); };
  const char* name = choice_switch.name;
  unsetenv(name);
  CHECK(CapturedStderr([&] { CHECK(!choice().has_value()); }).empty());
  setenv(name, "", 1);
  CHECK(CapturedStderr([&] { CHECK(!choice().has_value()); }).empty());
  setenv(name, "always", 1);
  CHECK(CapturedStderr([&] { CHECK(choice() == "always"); }).empty());
  setenv(name, "Off", 1);
  CHECK(CapturedStderr([&] { CHECK(!choice().has_value()); }) ==
        "warning: ignoring PADDLEC_CORE_TEST_SWITCH=Off: expected auto, off or always; the default applies\n");
  setenv(name, "o\x1b[2Jff", 1);  // a value is escaped as names in errors are
  CHECK(CapturedStderr([&] { CHECK(!choice().has_value()); }).find("=o\\x1b[2Jff:") != std::string::npos);
  unsetenv(name);

  name = number_switch.name;
  for (const char* good : {"0", "50", "2.5", "1e3"}) {
    setenv(name, good, 1);
    CHECK(CapturedStderr([&] { CHECK(EnvNonNegative(number_switch) == std::strtod(good, nullptr)); }).empty());
  }
  for (const char* bad : {"50us", "-1", "nan", "inf", "fast", " 5", "5 "}) {
    CAPTURE(bad);
    setenv(name, bad, 1);
    CHECK(CapturedStderr([&] { CHECK(!EnvNonNegative(number_switch).has_value()); }) ==
          "warning: ignoring PADDLEC_CORE_TEST_NUMBER=" + std::string(bad) +
              ": expected a number of at least 0; the default applies\n");
    CHECK(CapturedStderr([&] { CHECK(!EnvNonNegative(number_switch, false).has_value()); }).empty());
  }
  unsetenv(name);
  CHECK(CapturedStderr([&] { CHECK(!EnvNonNegative(number_switch).has_value()); }).empty());
}

TEST_CASE("Environment switches: the driver's check names every bad value") {
  for (const EnvSwitch* s : {&kTiledGemmSwitch, &kWinogradSwitch, &kAvx512Switch, &kSpinMicrosSwitch}) unsetenv(s->name);
  CHECK(CheckEnvSwitches().ok());
  setenv("PADDLEC_TILED_GEMM", "always", 1);
  setenv("PADDLEC_WINOGRAD", "off", 1);
  setenv("PADDLEC_AVX512", "auto", 1);
  setenv("PADDLEC_SPIN_US", "20", 1);
  CHECK(CheckEnvSwitches().ok());
  setenv("PADDLEC_TILED_GEMM", "Off", 1);
  setenv("PADDLEC_WINOGRAD", "no", 1);
  setenv("PADDLEC_SPIN_US", "50us", 1);
  const Status st = CheckEnvSwitches();
  REQUIRE(!st.ok());
  CHECK(st.error().code() == ErrorCode::kInvalidArgument);
  CHECK(st.error().Render() ==
        "error: PADDLEC_TILED_GEMM=Off is not auto, off or always (did you mean 'off'?)\n"
        "note: PADDLEC_WINOGRAD=no is not on or off\n"
        "note: PADDLEC_SPIN_US=50us is not a number of at least 0\n"
        "note: unset a switch for its default\n");
  for (const EnvSwitch* s : {&kTiledGemmSwitch, &kWinogradSwitch, &kAvx512Switch, &kSpinMicrosSwitch}) unsetenv(s->name);
}

}  // namespace
}  // namespace paddlec
