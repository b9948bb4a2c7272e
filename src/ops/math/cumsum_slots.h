// cumsum's slots, attributes and line geometry, shared by its shape function and CPU kernels
// (cumsum.cc) and its CUDA kernels (cumsum_cuda.cc).
#pragma once

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::cumsum {

inline constexpr InSlot kX{0, "X"};
inline constexpr OutSlot kOut{0, "Out"};
// cumsum_grad: (X, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kGradX{0, "X"};
inline constexpr InSlot kGradDOut{1, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};

struct CumsumAttrs {
  int axis = -1;
  bool flatten = false, exclusive = false, reverse = false;
  static CumsumAttrs Decode(const AttrReader& a) {
    return {a.Get<int>("axis"), a.Get<bool>("flatten"), a.Get<bool>("exclusive"), a.Get<bool>("reverse")};
  }
  /// The gradient is the cumsum of Out@GRAD in the opposite direction (same exclusivity).
  CumsumAttrs Reversed() const { return {axis, flatten, exclusive, !reverse}; }
};

/// X seen as [outer, n, inner]: each of the outer * inner lines of n elements (stride inner) is
/// scanned. A flattened or 0-D X is one line.
struct ScanLines {
  int64_t outer = 1, n = 1, inner = 1;
};

/// The lines of X (fully known dims); the shape function has checked the axis.
inline ScanLines LinesOf(const Dims& x, const CumsumAttrs& a) {
  if (a.flatten || x.rank() == 0) return {1, x.Numel(), 1};
  const int axis = NormalizeAxis(a.axis, x.rank());
  return {x.Product(0, axis), x[axis], x.Product(axis + 1, x.rank())};
}

}  // namespace paddlec::ops::cumsum
