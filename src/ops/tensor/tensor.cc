// Placeholder until the tensor family is registered.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterTensorOps(OpRegistry& registry) { (void)registry; }

}  // namespace paddlec::ops
