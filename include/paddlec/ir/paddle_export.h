// A ProgramDesc as PaddlePaddle's loaders take it (paddle.static.load_inference_model,
// paddle.inference): what Paddle requires of a .pdmodel that paddlec's own programs leave implicit.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "paddlec/core/error.h"
#include "paddlec/ir/program.h"

namespace paddlec::ir {

/// True when PaddlePaddle has a legacy op of this type: an op of the PIR translation table
/// (src/ir/pir/pir_op_table.cc), one that legacy programs use and PIR does not, or the `_grad` op
/// of one of those. paddlec's own fused ops (fused_conv2d_bn_act, ...) are not.
bool IsPaddleOp(std::string_view type);

/// Prepares `program` (a main program) for PaddlePaddle:
///   - feed ops (X = the `feed` holder, Out = each of `feeds`, col = its position) before the first
///     op and fetch ops (X = each of `fetches`, Out = the `fetch` holder) after the last, with their
///     holder variables, unless the program has feed or fetch ops already (Paddle finds a model's
///     inputs and outputs from them);
///   - batch_norm's ReserveSpace output bound to a variable of its own where it is empty (Paddle's
///     kernel writes it in training mode);
/// and fails, naming every one, on ops PaddlePaddle does not have.
Status ExportForPaddle(pb::ProgramDesc& program, const std::vector<std::string>& feeds,
                       const std::vector<std::string>& fetches);

}  // namespace paddlec::ir
