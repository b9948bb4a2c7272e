// The tensor family: creation, copies and casts (fill.cc), shape changes (shape.cc), joining and
// splitting (concat_split.cc) and selection (top_k.cc).
#include "tensor/tensor_internal.h"

namespace paddlec::ops {

void RegisterTensorOps(OpRegistry& r) {
  RegisterFillOps(r);
  RegisterShapeOps(r);
  RegisterConcatSplitOps(r);
  RegisterTopKOps(r);
}

}  // namespace paddlec::ops
