// fill_constant's slots and its run-time shape from the ShapeTensor / ShapeTensorList values, shared by
// its shape function and CPU kernel (fill.cc) and its CUDA kernel (tensor_cuda.cc).
#pragma once

#include <vector>

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::fill {

inline constexpr InSlot kValueTensor{0, "ValueTensor"};
inline constexpr InSlot kShapeTensor{1, "ShapeTensor"};
inline constexpr InSlot kShapeTensorList{2, "ShapeTensorList"};
inline constexpr OutSlot kOut{0, "Out"};

/// Out's dims from the shape values read at run time (ShapeTensor's elements, or the one element of
/// each ShapeTensorList tensor); every value must be a size.
inline StatusOr<Dims> DimsFromShapeValues(const std::vector<int64_t>& values) {
  PC_ASSIGN_OR_RETURN(Dims dims, Dims::FromRange(values.begin(), values.end()));
  for (int i = 0; i < dims.rank(); ++i)
    if (dims[i] < 0)
      return MakeError(ErrorCode::kShape, "the shape tensors give {}, with the negative size {} at index {}",
                       dims.ToString(), dims[i], i);
  return dims;
}

}  // namespace paddlec::ops::fill
