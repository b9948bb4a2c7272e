// Training checkpoints: a --save directory holds DIR/epoch-NNNN/{params.pdiparams, checkpoint.json}
// and DIR/LATEST (the name of the newest). Publication is one atomic step per file-system object, so
// a kill at any instant leaves every published checkpoint complete, and a resume finds the newest
// complete one even when the kill came before LATEST was switched.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "paddlec.pb.h"
#include "paddlec/core/error.h"

namespace paddlec::io {

inline constexpr std::string_view kCheckpointJson = "checkpoint.json";
inline constexpr std::string_view kCheckpointParams = "params.pdiparams";

/// Parses the text of a checkpoint.json; an error naming `path` for text that is not a checkpoint or
/// holds impossible values (negative epochs or steps, an unknown format version).
StatusOr<paddlec::proto::Checkpoint> ParseCheckpoint(std::string_view json, const std::string& path);

/// A checkpoint to resume from: its directory and its metadata.
struct ResumePoint {
  std::string dir;
  paddlec::proto::Checkpoint checkpoint;
};

/// Where `--resume PATH` continues. PATH itself when it holds a checkpoint.json (an error if that does
/// not parse); otherwise the newest complete epoch-* directory of the save directory PATH: the largest
/// generation, then the one LATEST names, then the largest epoch, whatever LATEST says. nullopt when
/// PATH does not exist or holds no complete checkpoint (a run killed before its first one).
StatusOr<std::optional<ResumePoint>> FindResumePoint(const std::string& path);

/// The generation the next checkpoint published in `save_dir` gets: one more than any there.
int64_t NextGeneration(const std::string& save_dir);

/// Publishes `save_dir`/`name`. `fill` writes the checkpoint's files into a fresh temporary directory
/// of `save_dir`; then that directory and `save_dir` are fsynced, the directory takes `name` in one
/// rename (one atomic exchange when `name` exists, which a previous run's checkpoint may), `save_dir`
/// is fsynced again and LATEST is switched with one rename. `before_latest` (a test hook) runs between
/// the last two steps. On failure the temporary directory is removed and `save_dir` keeps its
/// published checkpoints.
Status PublishCheckpoint(const std::string& save_dir, const std::string& name,
                         const std::function<Status(const std::string& tmp_dir)>& fill,
                         const std::function<void()>& before_latest = {});

/// Removes what processes killed while checkpointing left in `save_dir`: .epoch-*.tmp.PID and
/// .epoch-*.old.PID directories and LATEST.tmp.PID.* files whose process is gone. Returns how many.
int RemoveStaleTemporaries(const std::string& save_dir);

}  // namespace paddlec::io
