// The activation family's slots, op table and attribute decoding, shared by the shape functions and
// CPU kernels (activation.cc) and the CUDA kernels (activation_cuda.cc): both sides register the
// ops of kActivations and decode attributes only through DecodeActivation.
#pragma once

#include "activation/activation_kind.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::activation {

inline constexpr InSlot kX{0, "X"};
inline constexpr OutSlot kOut{0, "Out"};
// pow's and clip's tensor-valued attributes (rejected by the shape functions for now).
inline constexpr InSlot kFactorTensor{1, "FactorTensor"};
inline constexpr InSlot kMin{1, "Min"};
inline constexpr InSlot kMax{2, "Max"};
// Gradient ops: the first input is X or Out (GradReads), Out@GRAD is at DOutSlotIndex. Kernels
// reach the first input by index (kGradA); shape functions, which compile-time contexts resolve by
// name, use kGradX or kGradOut.
inline constexpr InSlot kGradA{0, "X or Out"};
inline constexpr InSlot kGradX{0, "X"};
inline constexpr InSlot kGradOut{0, "Out"};
inline constexpr OutSlot kDX{0, "X@GRAD"};
// Their extra inputs, after Out@GRAD: pow_grad's FactorTensor, clip_grad's Min and Max.
inline constexpr InSlot kGradFactorTensor{2, "FactorTensor"};
inline constexpr InSlot kGradMin{2, "Min"};
inline constexpr InSlot kGradMax{3, "Max"};

constexpr InSlot DOutSlot(GradReads r) { return {DOutSlotIndex(r), "Out@GRAD"}; }

/// One element-wise activation op and its gradient op `<type>_grad`.
struct ActivationOp {
  const char* type;
  Activation kind;
  GradReads reads;
};

/// Every element-wise activation; gelu's kind becomes kGeluTanh when `approximate` is set.
inline constexpr ActivationOp kActivations[] = {
    {"relu", Activation::kRelu, GradReads::kOut},
    {"sigmoid", Activation::kSigmoid, GradReads::kOut},
    {"tanh", Activation::kTanh, GradReads::kOut},
    {"sqrt", Activation::kSqrt, GradReads::kOut},
    {"gelu", Activation::kGelu, GradReads::kX},
    {"leaky_relu", Activation::kLeakyRelu, GradReads::kX},
    {"relu6", Activation::kRelu6, GradReads::kOut},
    {"hard_swish", Activation::kHardSwish, GradReads::kX},
    {"hard_sigmoid", Activation::kHardSigmoid, GradReads::kOut},
    {"swish", Activation::kSwish, GradReads::kX},
    {"silu", Activation::kSilu, GradReads::kXOut},
    {"elu", Activation::kElu, GradReads::kXOut},
    {"exp", Activation::kExp, GradReads::kOut},
    {"log", Activation::kLog, GradReads::kX},
    {"pow", Activation::kPow, GradReads::kX},
    {"clip", Activation::kClip, GradReads::kX},
};

/// An activation as one op instance runs it.
struct ActivationCall {
  Activation kind;
  ActParams p;
};

/// Reads the attributes of an op of `kind` (its forward or its grad op, which carries the same
/// attributes) into the kind and parameters the kernels take.
inline ActivationCall DecodeActivation(Activation kind, const AttrReader& a) {
  ActivationCall c{kind, {}};
  switch (kind) {
    case Activation::kGelu:
      if (a.Get<bool>("approximate")) c.kind = Activation::kGeluTanh;
      break;
    case Activation::kLeakyRelu:
      c.p.a = a.Get<float>("alpha");
      break;
    case Activation::kRelu6:
      c.p.a = a.Get<float>("threshold");
      break;
    case Activation::kHardSwish:
      c.p = {a.Get<float>("threshold"), a.Get<float>("scale"), a.Get<float>("offset")};
      break;
    case Activation::kHardSigmoid:
      c.p = {a.Get<float>("slope"), a.Get<float>("offset"), 0};
      break;
    case Activation::kSwish:
      c.p.a = a.Get<float>("beta");
      break;
    case Activation::kElu:
      c.p.a = a.Get<float>("alpha");
      break;
    case Activation::kPow:
      c.p.a = a.Get<float>("factor");
      break;
    case Activation::kClip:
      c.p = {a.Get<float>("min"), a.Get<float>("max"), 0};
      break;
    default:
      break;
  }
  return c;
}

// ---- softmax / log_softmax ------------------------------------------------------------------

// Gradient ops: (Out, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kSoftmaxOut{0, "Out"};
inline constexpr InSlot kSoftmaxDOut{1, "Out@GRAD"};

struct SoftmaxAttrs {
  int axis;
  static SoftmaxAttrs Decode(const AttrReader& a) { return {a.Get<int>("axis")}; }
};

/// A tensor viewed as [outer, n, inner] around `axis` (a 0-D tensor is one line of one element).
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
inline AxisView ViewAround(const Dims& d, int axis) {
  if (d.rank() == 0) return {};
  const int a = NormalizeAxis(axis, d.rank());
  return {d.Product(0, a), d[a], d.Product(a + 1, d.rank())};
}

}  // namespace paddlec::ops::activation
