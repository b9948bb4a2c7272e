// Placeholder until the math family is registered.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterMathOps(OpRegistry& registry) { (void)registry; }

}  // namespace paddlec::ops
