// dropout's slots and attributes, shared by its shape function and CPU kernels (dropout.cc) and
// its CUDA kernels (dropout_cuda.cc), so both devices scale by the same factors.
#pragma once

#include <cstdint>
#include <string>

#include "paddlec/ops/kernel.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::dropout {

inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kSeed{1, "Seed"};
inline constexpr OutSlot kOut{0, "Out"};
inline constexpr OutSlot kMask{1, "Mask"};
// dropout_grad: (Mask, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kGMask{0, "Mask"};
inline constexpr InSlot kGDOut{1, "Out@GRAD"};
inline constexpr OutSlot kGDX{0, "X@GRAD"};

/// The Seed input, or null when the slot is unbound. A bound Seed must hold a value: the plan lets a
/// dispensable input name a variable nothing wrote (PaddlePaddle binds some that way).
inline StatusOr<const Tensor*> SeedInput(const KernelContext& ctx) {
  const Tensor* t = ctx.InOpt(kSeed);
  if (t != nullptr && !t->initialized())
    return MakeError(ErrorCode::kRuntime, "Seed is bound to a variable that holds no value");
  return t;
}

struct DropoutAttrs {
  float p;
  bool is_test, upscale;
  bool fixed_seed;
  int seed;

  static DropoutAttrs Decode(const AttrReader& a) {
    int seed = a.Get<int>("seed");
    return {a.Get<float>("dropout_prob"), a.Get<bool>("is_test"),
            a.Get<std::string>("dropout_implementation") == "upscale_in_train", a.Get<bool>("fix_seed") || seed != 0,
            seed};
  }
  /// The random stream's seed without a Seed input: the attribute when fixed, else the op instance's.
  uint64_t StreamSeed(uint64_t instance_seed) const {
    return fixed_seed ? static_cast<uint64_t>(static_cast<int64_t>(seed)) : instance_seed;
  }
  /// The factor kept elements are multiplied by in training.
  template <class T>
  T train_scale() const {
    return upscale ? T(1) / (T(1) - static_cast<T>(p)) : T(1);
  }
  /// The factor every element is multiplied by in inference.
  template <class T>
  T test_scale() const {
    return upscale ? T(1) : T(1) - static_cast<T>(p);
  }
};

}  // namespace paddlec::ops::dropout
