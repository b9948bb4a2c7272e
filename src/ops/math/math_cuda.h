// Launchers of the math family's CUDA kernels (elementwise.cu, reduce.cu, math.cu, expand.cu,
// cumsum.cu, compare.cu), in plain types.
// Every launcher queues work on `s` and returns the launch error; none waits for the GPU.
// Products (mul, matmul_v2) run on cuBLAS from the host side and need no launcher of their own
// beyond the batch reductions here.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "math/compare_kind.h"
#include "math/fused_elementwise_kind.h"
#include "math/math_cuda_index.h"

namespace paddlec::ops::cuda {

// ---- elementwise.cu ----------------------------------------------------------------------------

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kMax, kMin };

/// out = op(x, y) over n elements of Out: x and y read at Out's index when `bcast` is null (equal
/// shapes), else at the offsets `bcast` gives (operand 0 = X, 1 = Y). T: float, double, int32, int64.
template <class T>
cudaError_t BinaryForward(BinaryOp op, const T* x, const T* y, T* out, int64_t n, const StridedIndex<2>* bcast,
                          cudaStream_t s);
/// Sets *flag (a device int the caller zeroed) to 1 when any of y[0 .. n) is 0. T: int32, int64.
template <class T>
cudaError_t AnyZero(const T* y, int64_t n, int* flag, cudaStream_t s);

/// The forward values a binary gradient reads (null where the op's gradient does not read them).
template <class T>
struct BinaryGradInputs {
  const T* dout;
  const T* x;
  const T* y;
  const T* out;  // elementwise_div only
};
/// A gradient shaped like Out (no reduction): grad[i] = dX (or dY) at Out index i; X and Y read
/// through `bcast` as in BinaryForward. T: float, double.
template <class T>
cudaError_t BinaryGradDirect(BinaryOp op, bool dx, const BinaryGradInputs<T>& in, T* grad, int64_t n,
                             const StridedIndex<2>* bcast, cudaStream_t s);
/// A gradient summed onto its broadcast operand: operands {Out-shaped, X, Y}, target X or Y.
/// `scratch` holds plan.scratch_elems * 8 bytes.
template <class T>
cudaError_t BinaryGradReduce(BinaryOp op, bool dx, const BinaryGradInputs<T>& in, T* grad, const ReduceIndex<3>& idx,
                             const ReducePlan& plan, void* scratch, cudaStream_t s);

// ---- fused_elementwise.cu, fc.cu -----------------------------------------------------------------

/// fused_elemwise_activation over n elements of equal-shaped X and Y: out = f(x, y) and, when `mid`
/// is not null, mid = the inner function's result. T: float, double.
template <class T>
cudaError_t FusedElementwise(const FusedFunctors& f, const T* x, const T* y, T* out, T* mid, int64_t n,
                             cudaStream_t s);
/// fc's epilogue in place over a row-major [rows, cols] product: y = act(y + bias[col]); bias may be
/// null, act = relu or identity. T: float, double.
template <class T>
cudaError_t RowBiasActivation(T* y, const T* bias, int64_t rows, int64_t cols, bool relu, cudaStream_t s);

// ---- reduce.cu ---------------------------------------------------------------------------------

/// out[j] = sum over j's contributions of TOut(x) (operands {x, out}); when `mean`, times `inv`
/// (1 / count, or NaN for an empty reduction), as the CPU kernel computes it. `scratch` holds
/// plan.scratch_elems * 8 bytes. TIn, TOut: float, double, int32, int64 (mean: float TOut only).
template <class TIn, class TOut>
cudaError_t ReduceSum(const TIn* x, TOut* out, const ReduceIndex<2>& idx, const ReducePlan& plan, bool mean, TOut inv,
                      void* scratch, cudaStream_t s);
/// dst[i] = scale * TDst(src[off(i)]) over n elements, src read at operand 1 of `idx` (operand 0 is
/// the destination's own index). TDst, TSrc: float, double.
template <class TDst, class TSrc>
cudaError_t BroadcastScaled(const TSrc* src, TDst* dst, int64_t n, const StridedIndex<2>& idx, TDst scale,
                            cudaStream_t s);

// ---- math.cu -----------------------------------------------------------------------------------

/// The element type of a ScaleTensor read on the device.
enum class ScalarType { kNone, kBool, kInt8, kUInt8, kInt16, kInt32, kInt64, kFloat32, kFloat64 };

/// y = scale * x + bias (bias_after_scale) or scale * (x + bias); with a ScaleTensor (`scale_ptr`
/// on the device, of type `scale_type` != kNone) its element, cast to T, replaces `scale`.
/// T: float, double, int32, int64.
template <class T>
cudaError_t Scale(const T* x, T* y, int64_t n, T scale, T bias, bool bias_after_scale, const void* scale_ptr,
                  ScalarType scale_type, cudaStream_t s);

/// Inputs one pass of Sum reads; more inputs chain passes through `scratch`.
inline constexpr int kSumMaxInputs = 64;
/// out = inputs[0] + inputs[1] + ... (left to right, in T, as the CPU adds), n elements each;
/// `inputs` is a host array of `count` >= 1 device pointers; out may alias any input. With more than
/// kSumMaxInputs inputs, `scratch` (n elements of T) holds the running sum between passes.
template <class T>
cudaError_t Sum(const T* const* inputs, int count, T* out, int64_t n, T* scratch, cudaStream_t s);

/// y = x * x; dx = 2 * x * dout.
template <class T>
cudaError_t Square(const T* x, T* y, int64_t n, cudaStream_t s);
template <class T>
cudaError_t SquareGrad(const T* x, const T* dout, T* dx, int64_t n, cudaStream_t s);

/// cos_sim over n rows of d features; Y has one row broadcast to all when `bcast`. xnorm / ynorm may
/// be null (intermediate outputs left out).
template <class T>
cudaError_t CosSimForward(const T* x, const T* y, T* out, T* xnorm, T* ynorm, int64_t n, int64_t d, bool bcast,
                          cudaStream_t s);

template <class T>
struct CosSimGradInputs {
  const T* x;
  const T* y;
  const T* out;
  const T* xnorm;
  const T* ynorm;
  const T* dout;
  int64_t n, d;
  bool bcast;
};
/// The broadcast-Y gradient's two reductions: sum_i dOut_i Out_i (one target, rows) and the column
/// sums over the n rows (d targets, columns), run one after the other in the same scratch.
inline ReducePlan CosSimGzPlan(int64_t n) { return PlanReduce(1, n, true); }
inline ReducePlan CosSimDyPlan(int64_t n, int64_t d) { return PlanReduce(d, n, false); }
/// Scratch (8-byte elements) CosSimGrad needs: 0 unless Y is broadcast.
inline int64_t CosSimGradScratchElems(int64_t n, int64_t d, bool bcast) {
  if (!bcast) return 0;
  const int64_t a = CosSimGzPlan(n).scratch_elems, b = CosSimDyPlan(n, d).scratch_elems;
  return 1 + (a > b ? a : b);
}
/// dx, dy may be null (not requested).
template <class T>
cudaError_t CosSimGrad(const CosSimGradInputs<T>& in, T* dx, T* dy, void* scratch, cudaStream_t s);

// ---- expand.cu -----------------------------------------------------------------------------------

/// dst[i] = src[off(i)] for the n elements of dst (operand 0 of `idx` is dst's own flat index,
/// operand 1 the source), moving elements of `elem_bytes` (1, 2, 4 or 8) bytes: every dtype.
cudaError_t BroadcastCopy(const void* src, void* dst, int elem_bytes, int64_t n, const StridedIndex<2>& idx,
                          cudaStream_t s);

// ---- cumsum.cu -----------------------------------------------------------------------------------

/// y = the scan of x over [outer, n, inner] lines: y[k] = x[0] + ... + x[k] along each line (exclusive:
/// up to x[k - 1]; reverse: from the end), summed in order in T as on the CPU. Long single lines
/// (inner == 1) take a block each. T: float, double, int32, int64.
template <class T>
cudaError_t Cumsum(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse,
                   cudaStream_t s);

// ---- compare.cu ----------------------------------------------------------------------------------

/// out = Relate<kind>(x, y) over the n elements of Out; x and y at Out's index when `bcast` is null,
/// else at its operands 0 (X) and 1 (Y). T: float, double, int32, int64, bool.
template <class T>
cudaError_t CompareForward(Compare kind, const T* x, const T* y, bool* out, int64_t n, const StridedIndex<2>* bcast,
                           cudaStream_t s);
/// out = c ? x : y over the n elements of Out; operands at Out's index when `bcast` is null, else at
/// its operands 0 (Condition), 1 (X), 2 (Y). T: float, double, int32, int64, bool.
template <class T>
cudaError_t WhereForward(const bool* c, const T* x, const T* y, T* out, int64_t n, const StridedIndex<3>* bcast,
                         cudaStream_t s);
/// grad = (c == when_true ? dout : 0) summed onto the target: operands {Out-shaped, Condition,
/// target}. `scratch` holds plan.scratch_elems * 8 bytes. T: float, double.
template <class T>
cudaError_t WhereGrad(const bool* c, const T* dout, T* grad, bool when_true, const ReduceIndex<3>& idx,
                      const ReducePlan& plan, void* scratch, cudaStream_t s);

}  // namespace paddlec::ops::cuda
