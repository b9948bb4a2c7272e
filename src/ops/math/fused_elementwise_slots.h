// fused_elemwise_activation's slots and decoded functor list, shared by its CPU (fused_elementwise.cc)
// and CUDA (fused_elementwise_cuda.cc) kernels.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "math/fused_elementwise_kind.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::fused_elementwise {

inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kY{1, "Y"};
inline constexpr OutSlot kOut{0, "Out"};
inline constexpr OutSlot kIntermediateOut{1, "IntermediateOut"};

inline std::optional<FusedBinary> ParseBinary(const std::string& s) {
  if (s == "elementwise_add") return FusedBinary::kAdd;
  if (s == "elementwise_sub") return FusedBinary::kSub;
  if (s == "elementwise_mul") return FusedBinary::kMul;
  return std::nullopt;
}

inline std::optional<FusedUnary> ParseUnary(const std::string& s) {
  if (s == "relu") return FusedUnary::kRelu;
  if (s == "tanh") return FusedUnary::kTanh;
  if (s == "sigmoid") return FusedUnary::kSigmoid;
  if (s == "scale") return FusedUnary::kScale;
  return std::nullopt;
}

/// functor_list and scale decoded; an error names what is not supported.
inline StatusOr<FusedFunctors> DecodeFunctors(const AttrReader& a) {
  const auto list = a.Get<std::vector<std::string>>("functor_list");
  FusedFunctors f;
  f.scale = a.Get<float>("scale");
  if (list.size() == 2) {
    const auto u0 = ParseUnary(list[0]), u1 = ParseUnary(list[1]);
    const auto b0 = ParseBinary(list[0]), b1 = ParseBinary(list[1]);
    if (u0 && b1) {
      f.unary = *u0, f.binary = *b1, f.unary_outside = true;
      return f;
    }
    if (b0 && u1) {
      f.unary = *u1, f.binary = *b0, f.unary_outside = false;
      return f;
    }
  }
  std::string got;
  for (const auto& s : list) got += (got.empty() ? "" : ", ") + s;
  return MakeError(ErrorCode::kInvalidArgument,
                   "functor_list [{}] is not supported: expected one of elementwise_add, elementwise_sub, "
                   "elementwise_mul and one of relu, tanh, sigmoid, scale",
                   got);
}

}  // namespace paddlec::ops::fused_elementwise
