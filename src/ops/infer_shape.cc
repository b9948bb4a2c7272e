// Shared shape functions.
#include "paddlec/ops/infer_shape.h"

namespace paddlec::ops {

Status InferSameAsX(InferShapeContext& ctx) {
  constexpr InSlot kX{0, "X"};
  constexpr OutSlot kOut{0, "Out"};
  ctx.ShareDims(kX, kOut);
  return Status::OK();
}

}  // namespace paddlec::ops
