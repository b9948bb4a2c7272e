// Placeholder until the activation family is registered.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterActivationOps(OpRegistry& registry) { (void)registry; }

}  // namespace paddlec::ops
