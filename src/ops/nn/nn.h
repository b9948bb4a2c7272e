// Registration entry points of the nn family's concept files, called by RegisterNnOps (nn.cc).
#pragma once

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterConvOps(OpRegistry& registry);       // conv.cc: conv2d
void RegisterPoolOps(OpRegistry& registry);       // pool.cc: pool2d
void RegisterNormOps(OpRegistry& registry);       // norm.cc: batch_norm, layer_norm
void RegisterDropoutOps(OpRegistry& registry);    // dropout.cc: dropout
void RegisterEmbeddingOps(OpRegistry& registry);  // embedding.cc: lookup_table_v2

}  // namespace paddlec::ops
