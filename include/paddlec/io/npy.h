// NumPy .npy files: the exchange format for feeds, fetches and test goldens.
//
// Reads format versions 1.0-3.0 with little-endian float32/float64/int32/int64/uint8/int8/bool
// data in C order; everything else (Fortran order, big-endian, object arrays) is a clear error.
// Sizes in the header are checked against the file before anything is allocated.
#pragma once

#include <string>
#include <string_view>

#include "paddlec/core/error.h"
#include "paddlec/runtime/tensor.h"

namespace paddlec::io {

/// Parses .npy bytes into a host tensor allocated from `alloc`. `name` is used in errors.
StatusOr<runtime::Tensor> ParseNpy(std::string_view bytes, runtime::Allocator& alloc, const std::string& name);
StatusOr<runtime::Tensor> ReadNpy(const std::string& path, runtime::Allocator& alloc);

/// Serializes a host tensor as .npy (version 1.0).
StatusOr<std::string> SerializeNpy(const runtime::Tensor& t);
/// Writes a host tensor atomically.
Status WriteNpy(const std::string& path, const runtime::Tensor& t);

}  // namespace paddlec::io
