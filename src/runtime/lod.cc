// Validation of LoD offsets against the tensor they describe.
#include <fmt/format.h>

#include "paddlec/runtime/tensor.h"

namespace paddlec::runtime {

std::string LoDProblem(const LoD& lod, int64_t rows) {
  for (size_t k = 0; k < lod.size(); ++k) {
    const auto& level = lod[k];
    if (level.empty()) return fmt::format("level {} is empty (it needs at least the offset 0)", k);
    if (level.front() != 0) return fmt::format("level {} starts at {}, not 0", k, level.front());
    for (size_t i = 1; i < level.size(); ++i)
      if (level[i] < level[i - 1])
        return fmt::format("level {} decreases at position {} ({} after {})", k, i, level[i], level[i - 1]);
    // Each level indexes the next one's sequences; the last indexes the tensor's rows.
    uint64_t want = k + 1 < lod.size() ? lod[k + 1].size() - 1 : static_cast<uint64_t>(rows < 0 ? 0 : rows);
    if (k + 1 == lod.size() && rows < 0) continue;  // rows unknown (a compile-time check)
    if (level.back() != want)
      return k + 1 < lod.size()
                 ? fmt::format("level {} ends at {} but level {} has {} sequences", k, level.back(), k + 1, want)
                 : fmt::format("level {} ends at {} but the tensor has {} rows", k, level.back(), want);
  }
  return "";
}

}  // namespace paddlec::runtime
