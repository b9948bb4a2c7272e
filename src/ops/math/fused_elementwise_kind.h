// fused_elemwise_activation's functions as plain values (no paddlec headers), for the CPU kernel
// (fused_elementwise.cc), the CUDA adapter (fused_elementwise_cuda.cc) and the device code
// (fused_elementwise.cu) alike.
#pragma once

namespace paddlec::ops {

enum class FusedBinary { kAdd, kSub, kMul };
enum class FusedUnary { kRelu, kTanh, kSigmoid, kScale };

/// The decoded functor list: Out = unary(binary(X, Y)), or binary(X, unary(Y)) when !unary_outside.
struct FusedFunctors {
  FusedBinary binary = FusedBinary::kAdd;
  FusedUnary unary = FusedUnary::kRelu;
  bool unary_outside = true;
  float scale = 1.0f;
};

}  // namespace paddlec::ops
