// arg_max's slots, attributes and line geometry, shared by its shape function and CPU kernel
// (top_k.cc) and its CUDA kernel (tensor_cuda.cc).
#pragma once

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::arg_max {

inline constexpr InSlot kX{0, "X"};
inline constexpr OutSlot kOut{0, "Out"};

struct ArgMaxAttrs {
  int64_t axis = 0;
  bool keepdims = false, flatten = false;
  int dtype = 3;  // VarType: 2 int32, 3 int64 (-1, PaddlePaddle 2.x's default, also means int64)

  static ArgMaxAttrs Decode(const AttrReader& a) {
    return {a.Get<int64_t>("axis"), a.Get<bool>("keepdims"), a.Get<bool>("flatten"), a.Get<int>("dtype")};
  }
  DType out_dtype() const { return dtype == 2 ? DType::kInt32 : DType::kInt64; }
};

/// X seen as [outer, n, inner]: the argmax runs along n, one result per (outer, inner) pair. A
/// flattened or 0-D X is one line of all its elements.
struct ArgLines {
  int64_t outer = 1, n = 1, inner = 1;
};

/// The lines of X (fully known dims) for `a`, whose axis the shape function has checked.
inline ArgLines LinesOf(const Dims& x, const ArgMaxAttrs& a) {
  if (a.flatten || x.rank() == 0) return {1, x.Numel(), 1};
  const int axis = NormalizeAxis(static_cast<int>(a.axis), x.rank());
  return {x.Product(0, axis), x[axis], x.Product(axis + 1, x.rank())};
}

}  // namespace paddlec::ops::arg_max
