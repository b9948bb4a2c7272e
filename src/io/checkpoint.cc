// Training checkpoints: parsing, atomic publication, finding the newest complete one, and removing
// what killed runs left behind.
#include "paddlec/io/checkpoint.h"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "paddlec/core/file.h"

namespace paddlec::io {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kLatest = "LATEST";
constexpr std::string_view kEpochPrefix = "epoch-";

Error FsError(std::string_view what, const fs::path& path, const std::error_code& ec) {
  return MakeError(ErrorCode::kIO, "{} '{}': {}", what, path.string(), ec.message());
}

/// The checkpoint in `dir` when it is complete (metadata written last, parameters present).
std::optional<paddlec::proto::Checkpoint> ReadComplete(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / kCheckpointParams, ec)) return std::nullopt;
  auto json = ReadFile((dir / kCheckpointJson).string(), 16 << 20);
  if (!json.ok()) return std::nullopt;
  auto ck = ParseCheckpoint(*json, (dir / kCheckpointJson).string());
  if (!ck.ok()) return std::nullopt;
  return *std::move(ck);
}

std::string ReadLatest(const fs::path& dir) {
  auto latest = ReadFile((dir / kLatest).string(), 4096);
  if (!latest.ok()) return "";
  std::string s = *latest;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

/// The process id in a temporary's name: the digits after `marker` ("x.tmp.123" -> 123), or -1.
long PidAfter(std::string_view name, std::string_view marker) {
  size_t at = name.find(marker);
  if (at == std::string_view::npos) return -1;
  std::string_view digits = name.substr(at + marker.size());
  long pid = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (ec != std::errc() || end == digits.data() || pid <= 0) return -1;
  return pid;
}

/// Whether another process with this id runs (ours counts as gone: whatever carries our id before we
/// wrote it is a dead run's, whose id was reused).
bool OtherProcessAlive(long pid) {
  return pid != ::getpid() && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

}  // namespace

StatusOr<paddlec::proto::Checkpoint> ParseCheckpoint(std::string_view json, const std::string& path) {
  paddlec::proto::Checkpoint ck;
  auto st = google::protobuf::util::JsonStringToMessage(std::string(json), &ck);
  if (!st.ok())
    return MakeError(ErrorCode::kParse, "'{}' is not a paddlec checkpoint: {}", path, std::string(st.message()));
  if (ck.format_version() != 1)
    return MakeError(ErrorCode::kParse, "'{}' has checkpoint format version {}; this paddlec reads version 1", path,
                     ck.format_version());
  if (ck.epoch() < 0 || ck.step() < 0 || ck.batch_size() < 0 || ck.generation() < 0)
    return MakeError(ErrorCode::kParse,
                     "'{}' is not a valid checkpoint: negative epoch, step, batch size or generation", path);
  return ck;
}

StatusOr<std::optional<ResumePoint>> FindResumePoint(const std::string& path) {
  fs::path dir(path);
  std::error_code ec;
  if (fs::exists(dir / kCheckpointJson, ec)) {
    PC_ASSIGN_OR_RETURN(std::string json, ReadFile((dir / kCheckpointJson).string(), 16 << 20));
    PC_ASSIGN_OR_RETURN(auto ck, ParseCheckpoint(json, (dir / kCheckpointJson).string()));
    return std::optional<ResumePoint>(ResumePoint{dir.string(), std::move(ck)});
  }
  if (!fs::is_directory(dir, ec)) return std::optional<ResumePoint>();
  const std::string latest = ReadLatest(dir);
  std::optional<ResumePoint> best;
  std::tuple<int64_t, bool, int64_t> best_key{-1, false, -1};
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (!name.starts_with(kEpochPrefix) || !e.is_directory(ec)) continue;
    auto ck = ReadComplete(e.path());
    if (!ck) continue;
    std::tuple<int64_t, bool, int64_t> key{ck->generation(), name == latest, ck->epoch()};
    if (!best || key > best_key) {
      best_key = key;
      best = ResumePoint{e.path().string(), *std::move(ck)};
    }
  }
  if (ec) return FsError("cannot list", dir, ec);
  if (best && !latest.empty() && fs::path(best->dir).filename() != latest)
    spdlog::warn("'{}' names {}, but {} is the newest complete checkpoint: resuming from it", (dir / kLatest).string(),
                 latest, best->dir);
  return best;
}

int64_t NextGeneration(const std::string& save_dir) {
  int64_t max = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(save_dir, ec)) {
    if (!e.path().filename().string().starts_with(kEpochPrefix)) continue;
    if (auto ck = ReadComplete(e.path())) max = std::max(max, ck->generation());
  }
  return max + 1;
}

Status PublishCheckpoint(const std::string& save_dir, const std::string& name,
                         const std::function<Status(const std::string& tmp_dir)>& fill,
                         const std::function<void()>& before_latest) {
  fs::path dir(save_dir), final_dir = dir / name;
  fs::path tmp = dir / fmt::format(".{}.tmp.{}", name, ::getpid());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return FsError("cannot create", dir, ec);
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) return FsError("cannot create", tmp, ec);
  // Until the directory is published, a failure (a full disk) leaves nothing behind.
  struct RemoveOnFailure {
    fs::path path;
    bool armed = true;
    ~RemoveOnFailure() {
      std::error_code ignored;
      if (armed) fs::remove_all(path, ignored);
    }
  } guard{tmp};
  PC_RETURN_IF_ERROR(fill(tmp.string()));
  PC_RETURN_IF_ERROR(SyncDirectory(tmp.string()));
  if (fs::exists(final_dir, ec)) {
    // A previous run's checkpoint of the same name: swap in one step, so `name` is always complete.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) != 0)
      return MakeError(ErrorCode::kIO, "cannot replace '{}': {}", final_dir.string(), std::strerror(errno))
          .Note("the file system must support renameat2(RENAME_EXCHANGE); save into a new directory instead");
  } else if (::rename(tmp.c_str(), final_dir.c_str()) != 0) {
    return MakeError(ErrorCode::kIO, "cannot publish checkpoint '{}': {}", final_dir.string(), std::strerror(errno));
  } else {
    guard.armed = false;
  }
  PC_RETURN_IF_ERROR(SyncDirectory(dir.string()));
  if (before_latest) before_latest();
  PC_RETURN_IF_ERROR(WriteFileAtomic((dir / kLatest).string(), name + "\n"));
  PC_RETURN_IF_ERROR(SyncDirectory(dir.string()));
  RemoveStaleTemporaries(save_dir);
  return Status::OK();  // `guard` removes the replaced checkpoint, now under the temporary name
}

int RemoveStaleTemporaries(const std::string& save_dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(save_dir, ec)) {
    std::string name = e.path().filename().string();
    long pid = -1;
    if (name.starts_with(".epoch-")) {
      pid = std::max(PidAfter(name, ".tmp."), PidAfter(name, ".old."));
    } else if (name.starts_with("LATEST.tmp.")) {
      pid = PidAfter(name, "LATEST.tmp.");
    }
    if (pid < 0 || OtherProcessAlive(pid)) continue;
    std::error_code rm;
    fs::remove_all(e.path(), rm);
    if (!rm) ++removed;
  }
  if (removed > 0) spdlog::info("removed {} temporaries of interrupted checkpoints from '{}'", removed, save_dir);
  return removed;
}

}  // namespace paddlec::io
