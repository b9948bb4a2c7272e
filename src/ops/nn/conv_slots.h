// conv2d's and fused_conv2d_bn_act's slots, shared by their CPU (conv.cc) and CUDA (conv_cuda.cc)
// kernels.
#pragma once

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::conv {

inline constexpr InSlot kInput{0, "Input"};
inline constexpr InSlot kFilter{1, "Filter"};
inline constexpr OutSlot kOutput{0, "Output"};
// conv2d_grad: (Input, Filter, Output@GRAD) -> (Input@GRAD, Filter@GRAD).
inline constexpr InSlot kDOutput{2, "Output@GRAD"};
inline constexpr OutSlot kDInput{0, "Input@GRAD"};
inline constexpr OutSlot kDFilter{1, "Filter@GRAD"};
// fused_conv2d_bn_act: (Input, Filter, Scale, Bias, Mean, Variance) -> Output.
inline constexpr InSlot kFScale{2, "Scale"};
inline constexpr InSlot kFBias{3, "Bias"};
inline constexpr InSlot kFMean{4, "Mean"};
inline constexpr InSlot kFVariance{5, "Variance"};

}  // namespace paddlec::ops::conv
