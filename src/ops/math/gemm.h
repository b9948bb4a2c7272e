// Batched matrix products for the math family: float32 on a cached oneDNN matmul primitive,
// float64 on Eigen (oneDNN's matmul has no f64).
//
// Operands are row-major tensors read through strides, so transposed operands cost nothing: no
// reorders, no copies. A Gemm object belongs to one kernel instance and keeps its primitive (and
// the oneDNN memory objects bound to it) until the shape changes, so a steady-state call only
// swaps data pointers and executes.
#pragma once

#include <memory>

#include "paddlec/core/dims.h"
#include "paddlec/core/error.h"
#include "paddlec/runtime/device_context.h"

namespace paddlec::ops::math {

/// C[b] = op(A[b]) * op(B[b]) for every batch index b of C. A is stored [a_batch..., M, K], or
/// [a_batch..., K, M] when trans_a; B is stored [b_batch..., K, N], or [b_batch..., N, K] when
/// trans_b; C is contiguous [c_batch..., M, N]. The three batch shapes have one rank; a_batch and
/// b_batch dims are either c_batch's or 1 (broadcast).
struct GemmShape {
  Dims a_batch, b_batch, c_batch;
  int64_t m = 0, k = 0, n = 0;
  bool trans_a = false, trans_b = false;

  friend bool operator==(const GemmShape& a, const GemmShape& b) {
    return a.a_batch == b.a_batch && a.b_batch == b.b_batch && a.c_batch == b.c_batch && a.m == b.m && a.k == b.k &&
           a.n == b.n && a.trans_a == b.trans_a && a.trans_b == b.trans_b;
  }
};

/// What a product may add before it writes C (the fc op's bias and activation): applied inside the
/// GEMM as oneDNN post-ops, so C is written once. `bias` has N values, added to every row.
struct GemmEpilogue {
  bool bias = false;
  bool relu = false;
  friend bool operator==(const GemmEpilogue&, const GemmEpilogue&) = default;
};

template <class T>
class Gemm;

template <>
class Gemm<float> {
 public:
  Gemm();
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  /// Runs the product, (re)building the oneDNN primitive when `shape` differs from the last call's.
  Status Run(runtime::CpuContext& cpu, const GemmShape& shape, const float* a, const float* b, float* c) {
    return Run(cpu, shape, {}, a, b, nullptr, c);
  }
  /// C = epilogue(A * B): with bias, `bias` holds N values (2-D products only).
  Status Run(runtime::CpuContext& cpu, const GemmShape& shape, GemmEpilogue epilogue, const float* a, const float* b,
             const float* bias, float* c);

 private:
  struct Primitive;
  std::unique_ptr<Primitive> prim_;
};

template <>
class Gemm<double> {
 public:
  Status Run(runtime::CpuContext& cpu, const GemmShape& shape, const double* a, const double* b, double* c);
};

}  // namespace paddlec::ops::math
