// Registration entry points of the nn family's concept files, called by RegisterNnOps (nn.cc).
#pragma once

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterConvOps(OpRegistry& registry);       // conv.cc: conv2d, depthwise_conv2d, conv2d_transpose
void RegisterPoolOps(OpRegistry& registry);       // pool.cc: pool2d
void RegisterNormOps(OpRegistry& registry);       // norm.cc: batch_norm, layer_norm
void RegisterDropoutOps(OpRegistry& registry);    // dropout.cc: dropout
void RegisterEmbeddingOps(OpRegistry& registry);  // embedding.cc: lookup_table_v2
void RegisterPadOps(OpRegistry& registry);        // pad.cc: pad3d
void RegisterInterpOps(OpRegistry& registry);     // interp.cc: nearest_interp_v2, bilinear_interp_v2
void RegisterRnnOps(OpRegistry& registry);        // rnn.cc: rnn

}  // namespace paddlec::ops
