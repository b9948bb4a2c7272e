// The tensor family: creation, copies and casts (fill.cc), shape changes (shape.cc), joining and
// splitting and stacking (concat_split.cc), selection (top_k.cc) and indexing (index.cc).
#include "tensor/tensor_internal.h"

namespace paddlec::ops {

void RegisterTensorOps(OpRegistry& r) {
  RegisterFillOps(r);
  RegisterShapeOps(r);
  RegisterConcatSplitOps(r);
  RegisterTopKOps(r);
  RegisterIndexOps(r);
}

}  // namespace paddlec::ops
