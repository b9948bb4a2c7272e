// The context a shape function reads inputs from and writes outputs to.
//
// One shape function per op serves compile time (VarDescs, dims may be -1) and run time (tensors,
// dims known): it uses the unknown-aware helpers of core/dims.h and never asks which it is.
#pragma once

#include <string_view>

#include "paddlec/core/dims.h"
#include "paddlec/core/dtype.h"
#include "paddlec/core/error.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/ops/slots.h"

namespace paddlec::ops {

class InferShapeContext {
 public:
  explicit InferShapeContext(const AttrReader& attrs) : attrs_(attrs) {}
  virtual ~InferShapeContext() = default;

  virtual std::string_view op_type() const = 0;
  /// Number of variables bound to a slot (0 when the slot is absent).
  virtual int NumInputs(InSlot s) const = 0;
  virtual int NumOutputs(OutSlot s) const = 0;
  bool HasInput(InSlot s) const { return NumInputs(s) > 0; }
  bool HasOutput(OutSlot s) const { return NumOutputs(s) > 0; }
  virtual Dims InputDims(InSlot s, int i = 0) const = 0;
  virtual DType InputDType(InSlot s, int i = 0) const = 0;
  virtual std::string_view InputName(InSlot s, int i = 0) const = 0;
  virtual std::string_view OutputName(OutSlot s, int i = 0) const = 0;
  /// Sets an output's shape and dtype; ignored when the slot or index is absent.
  virtual void SetOutput(OutSlot s, int i, const Dims& dims, DType dtype) = 0;
  void SetOutput(OutSlot s, const Dims& dims, DType dtype) { SetOutput(s, 0, dims, dtype); }
  /// Output `out` gets the shape and dtype of input `in` (the common elementwise case).
  void ShareDims(InSlot in, OutSlot out, int i = 0) {
    if (HasOutput(out)) SetOutput(out, i, InputDims(in, i), InputDType(in, i));
  }

  const AttrReader& attrs() const { return attrs_; }
  template <class T>
  T Attr(std::string_view name) const {
    return attrs_.Get<T>(name);
  }

  /// A shape error; the caller adds the op's location. Name the slots and both shapes in `f`.
  template <class... Args>
  Error Fail(fmt::format_string<Args...> f, Args&&... args) const {
    return Error(ErrorCode::kShape, fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  const AttrReader& attrs_;
};

using InferShapeFn = Status (*)(InferShapeContext& ctx);

/// Shape function for ops whose output `Out` has the shape of input `X` (activations, scale, ...).
Status InferSameAsX(InferShapeContext& ctx);

}  // namespace paddlec::ops
