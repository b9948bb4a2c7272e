// PaddlePaddle's elementwise broadcast rule (shapes only; the loops are in broadcast.h).
#include "math/broadcast.h"

namespace paddlec::ops::math {

StatusOr<ElementwiseShapes> BroadcastElementwise(const Dims& x, const Dims& y, int axis) {
  if (x == y) return ElementwiseShapes{x, x, y};
  // The rule places the lower-rank operand ("small") inside the other ("big"); with equal ranks Y
  // is the small one, and modern Paddle handles rank(Y) > rank(X) by swapping the roles.
  const bool y_small = y.rank() <= x.rank();
  const Dims& big = y_small ? x : y;
  const Dims& small = y_small ? y : x;
  const char* big_name = y_small ? "X" : "Y";
  const char* small_name = y_small ? "Y" : "X";
  const int start = axis == -1 ? big.rank() - small.rank() : axis;
  Dims trimmed = small;
  while (trimmed.rank() > 0 && trimmed.back() == 1) trimmed.resize(trimmed.rank() - 1);
  const int max_axis = big.rank() - trimmed.rank();
  if (start < 0 || start > max_axis)
    return MakeError(ErrorCode::kShape,
                     "axis {} is out of range for X of shape {} and Y of shape {}: {} (without trailing 1s) must "
                     "fit in {} starting at axis, so axis must be -1 or in [0, {}]",
                     axis, x.ToString(), y.ToString(), small_name, big_name, max_axis);

  ElementwiseShapes s;
  Dims aligned = Dims::Filled(big.rank(), 1);
  for (int i = 0; i < trimmed.rank(); ++i) aligned[start + i] = trimmed[i];
  for (int i = 0; i < big.rank(); ++i) {
    const int64_t b = big[i], a = aligned[i];
    int64_t o;
    if (b == a || a == 1) {
      o = b;
    } else if (b == 1) {
      o = a;
    } else if (b < 0 || a < 0) {
      o = std::max(a, b);  // the known one; it must be what the unknown turns out to be (or 1)
    } else {
      const int xi = y_small ? i : i - start, yi = y_small ? i - start : i;
      const int64_t xd = y_small ? b : a, yd = y_small ? a : b;
      return MakeError(ErrorCode::kShape,
                       "Broadcast dimension mismatch. Operands could not be broadcast together with the shape of X = "
                       "{} and the shape of Y = {} at axis {}: X's dim {} ({}) and Y's dim {} ({}) differ and "
                       "neither is 1",
                       x.ToString(), y.ToString(), axis, xi, xd, yi, yd);
    }
    s.out.push_back(o);
  }
  s.x = y_small ? big : aligned;
  s.y = y_small ? aligned : big;
  return s;
}

}  // namespace paddlec::ops::math
