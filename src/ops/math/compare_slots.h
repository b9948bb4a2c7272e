// The comparison ops' and where's slots and shape rules, shared by their shape functions and CPU
// kernels (compare.cc) and their CUDA kernels (compare_cuda.cc).
#pragma once

#include <array>

#include "math/compare_kind.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::compare {

inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kY{1, "Y"};
inline constexpr OutSlot kOut{0, "Out"};

/// The comparison ops and the relation each computes.
struct CompareOp {
  const char* type;
  Compare kind;
  const char* formula;
};
inline constexpr CompareOp kCompareOps[] = {
    {"equal", Compare::kEq, "X == Y"},       {"not_equal", Compare::kNe, "X != Y"},
    {"less_than", Compare::kLt, "X < Y"},    {"less_equal", Compare::kLe, "X <= Y"},
    {"greater_than", Compare::kGt, "X > Y"}, {"greater_equal", Compare::kGe, "X >= Y"},
};

struct CompareAttrs {
  int axis;
  static CompareAttrs Decode(const AttrReader& a) { return {a.Get<int>("axis")}; }
};

// ---- where --------------------------------------------------------------------------------------

inline constexpr InSlot kCondition{0, "Condition"};
inline constexpr InSlot kWhereX{1, "X"};
inline constexpr InSlot kWhereY{2, "Y"};
// where_grad: (Condition, X, Y, Out@GRAD) -> (X@GRAD, Y@GRAD).
inline constexpr InSlot kWhereDOut{3, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};
inline constexpr OutSlot kDY{1, "Y@GRAD"};

/// where's operands broadcast together (NumPy's rule: trailing alignment, size-1 axes repeat):
/// Out's dims and each operand's dims padded with leading 1s to Out's rank. Unknown dims propagate
/// as in math::BroadcastElementwise.
struct WhereShapes {
  Dims out;
  std::array<Dims, 3> aligned;  // Condition, X, Y
};

inline StatusOr<WhereShapes> BroadcastWhere(const Dims& cond, const Dims& x, const Dims& y) {
  const std::array<const Dims*, 3> in = {&cond, &x, &y};
  int rank = 0;
  for (const Dims* d : in) rank = std::max(rank, d->rank());
  WhereShapes s;
  for (int k = 0; k < 3; ++k) {
    s.aligned[k] = Dims::Filled(rank - in[k]->rank(), 1);
    for (int64_t v : *in[k]) s.aligned[k].push_back(v);
  }
  for (int i = 0; i < rank; ++i) {
    int64_t o = 1;
    for (int k = 0; k < 3; ++k) {
      const int64_t d = s.aligned[k][i];
      if (d == 1) continue;
      if (o == 1 || o == kUnknownDim) {
        o = (o == kUnknownDim && d == kUnknownDim) ? kUnknownDim : (d == kUnknownDim ? (o == 1 ? kUnknownDim : o) : d);
      } else if (d != kUnknownDim && d != o) {
        return MakeError(ErrorCode::kShape,
                         "Condition {}, X {} and Y {} do not broadcast: dimension {} of Out would be both {} and {}",
                         cond.ToString(), x.ToString(), y.ToString(), i, o, d);
      }
    }
    s.out.push_back(o);
  }
  return s;
}

}  // namespace paddlec::ops::compare
