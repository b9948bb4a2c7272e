// Whole-file reads and atomic writes. Every file paddlec writes goes through WriteFileAtomic, so a
// crash or a full disk never leaves a half-written output where the old one was.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "paddlec/core/error.h"

namespace paddlec {

/// Reads a whole file; files over `max_bytes` are rejected before anything is allocated.
StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes = uint64_t{4} << 30);

/// Writes `data` to `path` through a temporary file in the same directory, fsync and rename.
Status WriteFileAtomic(const std::string& path, std::string_view data);

/// Like WriteFileAtomic, but streams: `write` is called with a sink appending to the temp file.
/// If `write` returns an error the temp file is removed and `path` is left untouched.
using ByteSink = std::function<Status(std::string_view)>;
Status WriteFileAtomicStreamed(const std::string& path, const std::function<Status(const ByteSink&)>& write);

/// fsyncs a directory, so the renames and creations inside it survive a power cut.
Status SyncDirectory(const std::string& path);

/// "/a/b/c.pbtxt" -> ".pbtxt" (lower-cased, with the dot); "" when there is none.
std::string FileExtension(std::string_view path);

}  // namespace paddlec
