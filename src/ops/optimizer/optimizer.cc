// Placeholder until the optimizer family is registered.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterOptimizerOps(OpRegistry& registry) { (void)registry; }

}  // namespace paddlec::ops
