// oneDNN handles of a CPU context, for kernels that build oneDNN primitives.
#pragma once

#include <dnnl.hpp>

#include "paddlec/runtime/device_context.h"

namespace paddlec::runtime {

struct OneDnnHandles {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

}  // namespace paddlec::runtime
