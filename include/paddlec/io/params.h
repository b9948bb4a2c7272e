// Parameter files in PaddlePaddle's combined tensor-stream layout (what save_combine writes and
// `.pdiparams` holds): one record per tensor, back to back, in the order of the sorted names, with
// no names stored. See docs/formats.md ("Parameters") for the byte layout.
//
// Loading checks every record against the program's declaration of the variable it should hold
// (dtype, dims), so a params file from another program, a truncated file or one with extra data is
// an error naming the tensor, never a silent misload.
#pragma once

#include <string>
#include <vector>

#include "paddlec/core/error.h"
#include "paddlec/ir/program.h"
#include "paddlec/runtime/device_context.h"
#include "paddlec/runtime/scope.h"

namespace paddlec::io {

/// Serializes one tensor (host memory) as a PaddlePaddle tensor record.
StatusOr<std::string> SerializeTensorRecord(const runtime::Tensor& host);

/// Writes the named tensors of `scope` (any device; copied to the host) in the given order,
/// atomically. Every name must hold an initialized tensor.
Status SaveParams(const std::string& path, const std::vector<std::string>& names, const runtime::Scope& scope,
                  runtime::DeviceContext& device);

/// Reads a params file whose records belong to `names` (in order) and places each tensor in `scope`
/// on `device`. `block` supplies the declarations each record is checked against (may be null).
Status LoadParams(const std::string& path, const std::vector<std::string>& names, runtime::Scope& scope,
                  runtime::DeviceContext& device, const ir::Block* block);
/// LoadParams on the bytes of a file already read; `path` names it in errors.
Status ParseParams(std::string_view bytes, const std::string& path, const std::vector<std::string>& names,
                   runtime::Scope& scope, runtime::DeviceContext& device, const ir::Block* block);

}  // namespace paddlec::io
