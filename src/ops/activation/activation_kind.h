// The element-wise activations as plain values: which function, its decoded parameters, and which
// forward values its gradient op reads. No paddlec headers, so the CPU file, the CUDA adapter and
// the device code (activation.cu) all include it.
#pragma once

namespace paddlec::ops {

enum class Activation {
  kRelu,
  kSigmoid,
  kTanh,
  kSqrt,
  kGelu,
  kGeluTanh,
  kLeakyRelu,
  kRelu6,
  kHardSwish,
  kHardSigmoid,
  kSwish,
  kSilu,
  kElu,
  kExp,
  kLog,
  kPow,
  kClip,
};

/// An activation's attributes, decoded once per op instance (activation_slots.h's
/// DecodeActivation names what a, b and c hold for each kind).
struct ActParams {
  float a = 0, b = 0, c = 0;
};

/// The forward values PaddlePaddle's gradient op of an activation reads, which fixes its input
/// slots: (Out, Out@GRAD), (X, Out@GRAD) or (X, Out, Out@GRAD). The derivative is always computed
/// from the first of them (X for kXOut).
enum class GradReads { kOut, kX, kXOut };

/// The index of Out@GRAD among the grad op's inputs.
constexpr int DOutSlotIndex(GradReads r) { return r == GradReads::kXOut ? 2 : 1; }

}  // namespace paddlec::ops
