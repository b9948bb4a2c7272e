// Helpers shared by the tensor family's concept files (fill, shape, concat_split, top_k, index).
#pragma once

#include <cstring>
#include <string>
#include <string_view>

#include "common/cpu_kernels.h"
#include "common/data_dtypes.h"
#include "paddlec/ir/program.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterFillOps(OpRegistry& r);
void RegisterShapeOps(OpRegistry& r);
void RegisterConcatSplitOps(OpRegistry& r);
void RegisterTopKOps(OpRegistry& r);
void RegisterIndexOps(OpRegistry& r);

namespace tensor_internal {

using ops::ForEachDType;
using ops::SupportedDTypeNumbers;

/// Bytes per thread below which a copy stays on one thread (a copy is memory-bound: splitting small
/// ones only adds fork/join cost).
inline constexpr int64_t kCopyGrainBytes = int64_t{1} << 18;

/// memcpy split across the CPU pool when large; a no-op when source and destination coincide
/// (in-place ops whose Out is X).
inline void CopyBytes(void* dst, const void* src, size_t n) {
  if (dst == src || n == 0) return;
  ParallelFor(static_cast<int64_t>(n), kCopyGrainBytes, [&](int64_t b, int64_t e) {
    std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b, static_cast<size_t>(e - b));
  });
}

/// "float32 (5)" for messages about dtype attributes.
inline std::string DTypeAttrName(int v) {
  auto d = DTypeFromProto(v);
  return d.ok() ? fmt::format("{} ({})", DTypeName(*d), v) : fmt::format("{}", v);
}

/// The error for PaddlePaddle's tensor-valued attribute inputs (ShapeTensor, AxisTensor, ...), which
/// paddlec does not take yet; OK when the slot is unbound.
inline Status RejectTensorInput(InferShapeContext& ctx, InSlot slot, std::string_view attr) {
  if (!ctx.HasInput(slot)) return Status::OK();
  return ctx.Fail("input {} (bound to '{}') is not supported yet: give `{}` as an attribute instead", slot.name,
                  ctx.InputName(slot), attr);
}

/// A new op of `type` for a gradient maker, carrying only the forward attributes `type` declares
/// (plus the framework's common ones), so the emitted op passes validation.
inline pb::OpDesc NewOpWithKnownAttrs(const GradMakerContext& ctx, const std::string& type) {
  pb::OpDesc op = ctx.NewOp(type);
  const OpInfo* info = ctx.registry().Find(type);
  auto* attrs = op.mutable_attrs();
  for (int i = attrs->size() - 1; i >= 0; --i) {
    const std::string& name = attrs->Get(i).name();
    if (info != nullptr && info->FindAttr(name) == nullptr && ctx.registry().FindCommonAttr(name) == nullptr)
      attrs->DeleteSubrange(i, 1);
  }
  return op;
}

/// Replaces (or adds) attribute `name` of an OpDesc.
template <class T>
void SetAttr(pb::OpDesc& op, const std::string& name, const T& value) {
  for (auto& a : *op.mutable_attrs())
    if (a.name() == name) {
      a = MakeAttr(name, value);
      return;
    }
  *op.add_attrs() = MakeAttr(name, value);
}

/// [0] + dims: PaddlePaddle's XShape, a zero-element tensor whose dims carry X's shape for the grad.
inline Dims XShapeOf(const Dims& x) {
  Dims d;
  d.push_back(0);
  for (int64_t v : x) d.push_back(v);
  return d;
}

/// X's dims recovered from an XShape ([0] + dims).
inline Dims DimsFromXShape(const Dims& xshape) {
  Dims d;
  for (int i = 1; i < xshape.rank(); ++i) d.push_back(xshape[i]);
  return d;
}

}  // namespace tensor_internal
}  // namespace paddlec::ops
