// NumPy .npz archives (what np.savez / np.savez_compressed write, and tvmc and onnxruntime's tools
// exchange): a zip of .npy members, one per named array.
//
// Reads stored and deflated members (zip64 records included); every size is checked against the
// archive before anything is allocated, and each member's CRC-32 is verified. Writes stored members.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "paddlec/core/error.h"
#include "paddlec/runtime/tensor.h"

namespace paddlec::io {

/// The arrays of an .npz archive, in archive order, named without the ".npy" suffix.
using NamedTensors = std::vector<std::pair<std::string, runtime::Tensor>>;

StatusOr<NamedTensors> ParseNpz(std::string_view bytes, runtime::Allocator& alloc, const std::string& name);
StatusOr<NamedTensors> ReadNpz(const std::string& path, runtime::Allocator& alloc);

/// An uncompressed archive holding each tensor as NAME.npy (np.load reads it).
StatusOr<std::string> SerializeNpz(const NamedTensors& tensors);
/// Writes the archive atomically.
Status WriteNpz(const std::string& path, const NamedTensors& tensors);

}  // namespace paddlec::io
