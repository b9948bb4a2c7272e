// Placeholder until the random family is registered.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterRandomOps(OpRegistry& registry) { (void)registry; }

}  // namespace paddlec::ops
