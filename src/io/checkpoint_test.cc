// Checkpoint publication, discovery and clean-up (io/checkpoint.h); the kills during training are
// in testdata/cli/train.test.
#include "paddlec/io/checkpoint.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "paddlec/core/file.h"
#include "paddlec/ir/serialize.h"

namespace paddlec::io {
namespace {

namespace fs = std::filesystem;

struct SaveDir {
  fs::path path = fs::temp_directory_path() / ("paddlec_checkpoint_test_" + std::to_string(::getpid()));
  SaveDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~SaveDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

/// Publishes a checkpoint of `epoch` with the given generation into `dir`.
Status Publish(const SaveDir& dir, int64_t epoch, int64_t generation) {
  paddlec::proto::Checkpoint ck;
  ck.set_format_version(1);
  ck.set_epoch(epoch);
  ck.set_generation(generation);
  std::string json = ir::Serialize(ck, ir::Format::kJson).value();
  return PublishCheckpoint(dir.path.string(), fmt::format("epoch-{:04d}", epoch), [&](const std::string& tmp) {
    PC_RETURN_IF_ERROR(WriteFileAtomic(tmp + "/params.pdiparams", "p"));
    return WriteFileAtomic(tmp + "/checkpoint.json", json);
  });
}

std::vector<std::string> Names(const SaveDir& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir.path)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("A resume takes the newest complete checkpoint, whatever LATEST says") {
  SaveDir dir;
  auto none = FindResumePoint(dir / "missing");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  REQUIRE(Publish(dir, 1, 1).ok());
  REQUIRE(Publish(dir, 2, 2).ok());
  CHECK(ReadFile(dir / "LATEST").value() == "epoch-0002\n");
  CHECK(NextGeneration(dir.path.string()) == 3);
  // A new run republishes epoch 1 and dies before switching LATEST: epoch-0001 is the newest.
  REQUIRE(Publish(dir, 1, 3).ok());
  REQUIRE(WriteFileAtomic(dir / "LATEST", "epoch-0002\n").ok());
  auto found = FindResumePoint(dir.path.string());
  REQUIRE(found.ok());
  REQUIRE(found->has_value());
  CHECK(fs::path((*found)->dir).filename() == "epoch-0001");
  CHECK((*found)->checkpoint.generation() == 3);
  // An incomplete directory (no parameters) never counts.
  fs::create_directories(dir / "epoch-0009");
  REQUIRE(
      WriteFileAtomic(dir / "epoch-0009/checkpoint.json", R"({"formatVersion": 1, "epoch": "9", "generation": "9"})")
          .ok());
  CHECK(fs::path((*FindResumePoint(dir.path.string()))->dir).filename() == "epoch-0001");
  // A checkpoint directory named directly is that checkpoint, and a broken one is an error.
  auto direct = FindResumePoint(dir / "epoch-0002");
  REQUIRE(direct.ok());
  CHECK((*direct)->checkpoint.epoch() == 2);
  auto broken = FindResumePoint(dir / "epoch-0009");
  CHECK(broken.ok());
  REQUIRE(WriteFileAtomic(dir / "epoch-0009/checkpoint.json", "{").ok());
  CHECK_FALSE(FindResumePoint(dir / "epoch-0009").ok());
}

TEST_CASE("A failed publication leaves nothing behind; killed runs' temporaries are removed") {
  SaveDir dir;
  REQUIRE(Publish(dir, 1, 1).ok());
  Status failed = PublishCheckpoint(dir.path.string(), "epoch-0002", [](const std::string&) -> Status {
    return MakeError(ErrorCode::kIO, "No space left on device");
  });
  CHECK_FALSE(failed.ok());
  CHECK(Names(dir) == std::vector<std::string>{"LATEST", "epoch-0001"});
  // Left by processes that are gone (pid 999999999 exceeds every pid_max) and by a live one (ours'
  // parent), which may still be writing.
  const std::string live = std::to_string(::getppid());
  fs::create_directories(dir / ".epoch-0002.tmp.999999999");
  fs::create_directories(dir / ".epoch-0001.old.999999999");
  fs::create_directories(dir / (".epoch-0003.tmp." + live));
  REQUIRE(WriteFileAtomic(dir / "LATEST.tmp.999999999.1f", "epoch-0002\n").ok());
  CHECK(RemoveStaleTemporaries(dir.path.string()) == 3);
  CHECK(Names(dir) == std::vector<std::string>{".epoch-0003.tmp." + live, "LATEST", "epoch-0001"});
}

TEST_CASE("Checkpoint metadata is checked") {
  CHECK(ParseCheckpoint(R"({"formatVersion": 1, "epoch": "3"})", "c.json").ok());
  auto version = ParseCheckpoint(R"({"formatVersion": 2})", "c.json");
  REQUIRE_FALSE(version.ok());
  CHECK(version.error().message() == "'c.json' has checkpoint format version 2; this paddlec reads version 1");
  auto negative = ParseCheckpoint(R"({"formatVersion": 1, "step": "-4"})", "c.json");
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().message() ==
        "'c.json' is not a valid checkpoint: negative epoch, step, batch size or generation");
  CHECK_FALSE(ParseCheckpoint("[1, 2]", "c.json").ok());
}

}  // namespace
}  // namespace paddlec::io
