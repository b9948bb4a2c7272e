// Placeholder until the nn family is registered.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterNnOps(OpRegistry& registry) { (void)registry; }

}  // namespace paddlec::ops
