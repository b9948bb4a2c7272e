// The math family's unary ops' slots and scale's attributes, shared by their CPU (math.cc) and CUDA
// (math_cuda.cc) kernels.
#pragma once

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::math_ops {

inline constexpr InSlot kX{0, "X"};
inline constexpr OutSlot kOut{0, "Out"};
// scale
inline constexpr InSlot kScaleTensor{1, "ScaleTensor"};
inline constexpr InSlot kBiasTensor{2, "BiasTensor"};
// square_grad: (X, Out@GRAD) -> X@GRAD
inline constexpr InSlot kGradX{0, "X"};
inline constexpr InSlot kGradDOut{1, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};

struct ScaleAttrs {
  float scale;
  float bias;
  bool bias_after_scale;
  static ScaleAttrs Decode(const AttrReader& a) {
    return {a.Get<float>("scale"), a.Get<float>("bias"), a.Get<bool>("bias_after_scale")};
  }
};

}  // namespace paddlec::ops::math_ops
