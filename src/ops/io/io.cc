// Placeholder until the io family is registered.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterIoOps(OpRegistry& registry) { (void)registry; }

}  // namespace paddlec::ops
