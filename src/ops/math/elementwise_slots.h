// The binary element-wise ops' slots, shared by their CPU (elementwise.cc) and CUDA
// (elementwise_cuda.cc) kernels.
#pragma once

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::elementwise {

inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kY{1, "Y"};
inline constexpr OutSlot kOut{0, "Out"};
// Gradient ops: (X, Y, [Out,] Out@GRAD) -> (X@GRAD, Y@GRAD); only elementwise_div_grad reads Out.
inline constexpr InSlot kGradX{0, "X"};
inline constexpr InSlot kGradY{1, "Y"};
inline constexpr InSlot kGradOut{2, "Out"};
inline constexpr InSlot kGradDOut{2, "Out@GRAD"};          // ops whose gradient does not read Out
inline constexpr InSlot kGradDOutAfterOut{3, "Out@GRAD"};  // elementwise_div_grad
inline constexpr OutSlot kDX{0, "X@GRAD"};
inline constexpr OutSlot kDY{1, "Y@GRAD"};

}  // namespace paddlec::ops::elementwise
