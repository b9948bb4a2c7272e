// Placeholder until the loss family is registered.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterLossOps(OpRegistry& registry) { (void)registry; }

}  // namespace paddlec::ops
