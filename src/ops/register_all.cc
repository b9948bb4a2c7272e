// RegisterAllOps and the process-wide registry.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

#define PADDLEC_OP_FAMILY(Family) void Register##Family##Ops(OpRegistry& registry);
#include "ops.def"
#undef PADDLEC_OP_FAMILY
void RegisterPaddleExtraAttrs(OpRegistry& registry);  // paddle_extras.cc

void RegisterAllOps(OpRegistry& registry) {
#define PADDLEC_OP_FAMILY(Family) Register##Family##Ops(registry);
#include "ops.def"
#undef PADDLEC_OP_FAMILY
  RegisterPaddleExtraAttrs(registry);
}

static OpRegistry& Instance() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();  // never destroyed: kernels may be referenced during static teardown
    RegisterAllOps(*r);
    return r;
  }();
  return *registry;
}

const OpRegistry& GlobalOpRegistry() { return Instance(); }
OpRegistry& MutableGlobalOpRegistry() { return Instance(); }

}  // namespace paddlec::ops
