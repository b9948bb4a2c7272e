// cos_sim's slots, shared by its CPU (cos_sim.cc) and CUDA (cos_sim_cuda.cc) kernels.
#pragma once

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::cos_sim {

inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kY{1, "Y"};
inline constexpr OutSlot kOut{0, "Out"};
inline constexpr OutSlot kXNorm{1, "XNorm"};
inline constexpr OutSlot kYNorm{2, "YNorm"};
// cos_sim_grad: (X, Y, Out, XNorm, YNorm, Out@GRAD) -> (X@GRAD, Y@GRAD).
inline constexpr InSlot kGradX{0, "X"};
inline constexpr InSlot kGradY{1, "Y"};
inline constexpr InSlot kGradOut{2, "Out"};
inline constexpr InSlot kGradXNorm{3, "XNorm"};
inline constexpr InSlot kGradYNorm{4, "YNorm"};
inline constexpr InSlot kGradDOut{5, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};
inline constexpr OutSlot kDY{1, "Y@GRAD"};

}  // namespace paddlec::ops::cos_sim
