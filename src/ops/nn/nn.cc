// The nn family: convolution, pooling, normalization, dropout and embedding ops (one concept file each).
#include "nn/nn.h"

namespace paddlec::ops {

void RegisterNnOps(OpRegistry& registry) {
  RegisterConvOps(registry);
  RegisterPoolOps(registry);
  RegisterNormOps(registry);
  RegisterDropoutOps(registry);
  RegisterEmbeddingOps(registry);
}

}  // namespace paddlec::ops
