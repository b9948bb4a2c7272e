// The nn family: convolution, pooling, normalization, dropout, embedding, padding, resizing and recurrent
// ops (one concept file each).
#include "nn/nn.h"

namespace paddlec::ops {

void RegisterNnOps(OpRegistry& registry) {
  RegisterConvOps(registry);
  RegisterPoolOps(registry);
  RegisterNormOps(registry);
  RegisterDropoutOps(registry);
  RegisterEmbeddingOps(registry);
  RegisterPadOps(registry);
  RegisterInterpOps(registry);
  RegisterRnnOps(registry);
}

}  // namespace paddlec::ops
