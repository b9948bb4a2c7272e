// --check-nan-inf / check_nan_inf=True: every op's floating-point outputs checked after it runs.
//
// The check is chosen when a plan is built: each step's kernel is wrapped in one that runs it and
// then scans its outputs, so a plan built without the check runs exactly the kernels it always did
// (no flag tested per op in the hot loop).
#pragma once

#include <memory>

#include "paddlec/ir/program.h"
#include "paddlec/ops/kernel.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::exec {

/// `kernel` followed by a scan of the op's float16/bfloat16/float32/float64 outputs. The first
/// non-finite element fails the step with an error naming the output slot, the variable, the
/// element (flat index, multi-index) and its value, and the op's role; a note says whether an
/// input already held a non-finite value (a feed, a parameter) or the op produced it.
std::unique_ptr<ops::OpKernel> CheckNanInfAfter(std::unique_ptr<ops::OpKernel> kernel, const ops::OpInfo& info,
                                                const ir::pb::OpDesc& desc);

}  // namespace paddlec::exec
