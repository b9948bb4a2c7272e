// fc's slots and decoded attributes, shared by its CPU (fc.cc) and CUDA (matmul_cuda.cc) kernels.
#pragma once

#include <string>

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::fc {

inline constexpr InSlot kInput{0, "Input"};
inline constexpr InSlot kW{1, "W"};
inline constexpr InSlot kBias{2, "Bias"};
inline constexpr OutSlot kFcOut{0, "Out"};

struct FcAttrs {
  int in_num_col_dims;
  bool relu;
  explicit FcAttrs(const AttrReader& a)
      : in_num_col_dims(a.Get<int>("in_num_col_dims")), relu(a.Get<std::string>("activation_type") == "relu") {}
};

}  // namespace paddlec::ops::fc
