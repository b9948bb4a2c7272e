// The shape logic of mul and matmul_v2, shared by their shape inference and CPU kernels
// (matmul.cc) and their CUDA kernels (matmul_cuda.cc): the slots, each op's analysis of its
// operands, and how a forward product and each gradient map onto one GemmShape. Keeping it in one
// place keeps the devices' products, and the batch-broadcast gradients in particular, identical.
//
// Gradients are products with transposed operands expressed as strides (no explicit transposes).
// When matmul_v2 broadcasts an operand over batch dims, its gradient is computed per batch and
// summed over the broadcast dims; the common case of a weight without batch dims (Y [K, N]
// against X [B..., M, K]) instead folds the batch into M, so the forward and both gradients are
// single GEMMs and the batch sum happens inside the contraction.
#pragma once

#include <algorithm>
#include <string_view>

#include "math/gemm.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::matmul {

using math::GemmShape;

inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kY{1, "Y"};
inline constexpr OutSlot kOut{0, "Out"};
// Gradient ops: (X, Y, Out@GRAD) -> (X@GRAD, Y@GRAD).
inline constexpr InSlot kGradX{0, "X"};
inline constexpr InSlot kGradY{1, "Y"};
inline constexpr InSlot kGradDOut{2, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};
inline constexpr OutSlot kDY{1, "Y@GRAD"};

// ---- mul ----------------------------------------------------------------------------------------

struct MulAttrs {
  int xn, yn;
  explicit MulAttrs(const AttrReader& a) : xn(a.Get<int>("x_num_col_dims")), yn(a.Get<int>("y_num_col_dims")) {}
};

/// mul's 2-D view: X flattened to [M, K] at x_num_col_dims, Y to [K, N] at y_num_col_dims.
struct MulDims {
  int64_t m, k, n;
  Dims out;

  GemmShape Forward() const { return GemmShape{{}, {}, {}, m, k, n, false, false}; }
  /// dX [M, K] = dOut [M, N] * Y^T, with (dOut, Y) as (A, B).
  GemmShape GradX() const { return GemmShape{{}, {}, {}, m, n, k, false, true}; }
  /// dY [K, N] = X^T * dOut, with (X, dOut) as (A, B).
  GemmShape GradY() const { return GemmShape{{}, {}, {}, k, m, n, true, false}; }
};

inline StatusOr<MulDims> AnalyzeMul(const Dims& x, const Dims& y, int xn, int yn) {
  if (xn >= x.rank())
    return MakeError(ErrorCode::kShape,
                     "X has shape {} (rank {}) but x_num_col_dims is {}: it must be less than X's rank", x.ToString(),
                     x.rank(), xn);
  if (yn >= y.rank())
    return MakeError(ErrorCode::kShape,
                     "Y has shape {} (rank {}) but y_num_col_dims is {}: it must be less than Y's rank", y.ToString(),
                     y.rank(), yn);
  MulDims d{x.Product(0, xn), x.Product(xn, x.rank()), y.Product(yn, y.rank()), {}};
  const int64_t ky = y.Product(0, yn);
  if (!DimMatch(d.k, ky))
    return MakeError(ErrorCode::kShape,
                     "X has shape {} and Y has shape {}: flattened at x_num_col_dims {} and y_num_col_dims {} they are "
                     "[{}, {}] and [{}, {}], so X's width {} must equal Y's height {}",
                     x.ToString(), y.ToString(), xn, yn, d.m, d.k, ky, d.n, d.k, ky);
  if (xn + y.rank() - yn > kMaxRank)
    return MakeError(ErrorCode::kShape, "X of shape {} and Y of shape {} would give an output of rank {} (at most {})",
                     x.ToString(), y.ToString(), xn + y.rank() - yn, kMaxRank);
  for (int i = 0; i < xn; ++i) d.out.push_back(x[i]);
  for (int i = yn; i < y.rank(); ++i) d.out.push_back(y[i]);
  return d;
}

// ---- matmul_v2 ----------------------------------------------------------------------------------

struct MatmulAttrs {
  bool trans_x, trans_y;
  explicit MatmulAttrs(const AttrReader& a) : trans_x(a.Get<bool>("trans_x")), trans_y(a.Get<bool>("trans_y")) {}
};

/// One operand's gradient as a product: `shape`, with Out@GRAD as its A operand when `dout_first`
/// (else as B, the other operand being X or Y), and the operand's own batch dims; when those
/// differ from shape.c_batch the operand was broadcast and the product is summed onto them.
struct GradGemm {
  GemmShape shape;
  bool dout_first = false;
  Dims operand_batch;

  bool reduces() const { return !(operand_batch == shape.c_batch); }
  /// The product's dims, [c_batch..., rows, cols].
  Dims ProductDims() const { return WithMatrix(shape.c_batch); }
  /// The gradient's dims the product is summed onto, [operand_batch..., rows, cols].
  Dims GradDims() const { return WithMatrix(operand_batch); }

 private:
  Dims WithMatrix(Dims batch) const {
    batch.push_back(shape.m);
    batch.push_back(shape.n);
    return batch;
  }
};

/// matmul_v2's problem in NumPy terms. A 1-D X is a row [1, K] and a 1-D Y a column [K, 1] (their
/// transposes ignored, the extra dim dropped from Out); batch dims broadcast.
struct MatmulDims {
  Dims x_batch, y_batch, out_batch;  // aligned to one rank (left-padded with 1s)
  int64_t m = 0, k = 0, n = 0;
  bool trans_x = false, trans_y = false;  // effective: false for 1-D operands
  Dims out;

  /// Y has no batch to broadcast and X is not transposed: X's batch folds into M.
  bool FoldsBatch() const {
    return !trans_x && std::all_of(y_batch.begin(), y_batch.end(), [](int64_t d) { return d == 1; });
  }

  GemmShape Forward() const {
    if (FoldsBatch()) return GemmShape{{}, {}, {}, out_batch.Numel() * m, k, n, false, trans_y};
    return GemmShape{x_batch, y_batch, out_batch, m, k, n, trans_x, trans_y};
  }

  /// With op(.) the effective transposes and Out = op(X) op(Y):
  ///   dX = dOut op(Y)^T (stored transposed when trans_x: op(Y) dOut^T).
  GradGemm GradX() const {
    if (FoldsBatch()) return {GemmShape{{}, {}, {}, out_batch.Numel() * m, n, k, false, !trans_y}, true, {}};
    const Dims& cb = out_batch;
    if (!trans_x) return {GemmShape{cb, y_batch, cb, m, n, k, false, !trans_y}, true, x_batch};
    return {GemmShape{y_batch, cb, cb, k, n, m, trans_y, true}, false, x_batch};
  }

  ///   dY = op(X)^T dOut (stored transposed when trans_y: dOut^T op(X)).
  GradGemm GradY() const {
    if (FoldsBatch()) {
      const int64_t mb = out_batch.Numel() * m;
      if (trans_y) return {GemmShape{{}, {}, {}, n, mb, k, true, false}, true, {}};
      return {GemmShape{{}, {}, {}, k, mb, n, true, false}, false, {}};
    }
    const Dims& cb = out_batch;
    if (!trans_y) return {GemmShape{x_batch, cb, cb, k, m, n, !trans_x, false}, false, y_batch};
    return {GemmShape{cb, x_batch, cb, n, m, k, true, trans_x}, true, y_batch};
  }
};

inline StatusOr<MatmulDims> AnalyzeMatmul(const Dims& x, const Dims& y, bool trans_x, bool trans_y) {
  auto context = [&] {
    auto name = [](bool b) { return std::string_view(b ? "true" : "false"); };
    return fmt::format("X has shape {} and Y has shape {} (trans_x {}, trans_y {})", x.ToString(), y.ToString(),
                       name(trans_x), name(trans_y));
  };
  if (x.rank() == 0 || y.rank() == 0)
    return MakeError(ErrorCode::kShape, "{}: matmul_v2 needs operands of rank >= 1", context());
  MatmulDims d;
  const bool x_vec = x.rank() == 1, y_vec = y.rank() == 1;
  d.trans_x = trans_x && !x_vec;
  d.trans_y = trans_y && !y_vec;
  const int64_t xr = x_vec ? 1 : x[x.rank() - 2], xc = x.back();
  const int64_t yr = y_vec ? y[0] : y[y.rank() - 2], yc = y_vec ? 1 : y.back();
  d.m = d.trans_x ? xc : xr;
  d.k = d.trans_x ? xr : xc;
  const int64_t ky = d.trans_y ? yc : yr;
  d.n = d.trans_y ? yr : yc;
  if (!DimMatch(d.k, ky))
    return MakeError(ErrorCode::kShape, "{}: the contracted dims differ (X gives {}, Y gives {})", context(), d.k, ky);
  d.k = DimMerge(d.k, ky);
  const int xb = std::max(0, x.rank() - 2), yb = std::max(0, y.rank() - 2), rb = std::max(xb, yb);
  for (int i = 0; i < rb; ++i) {
    const int64_t a = i < rb - xb ? 1 : x[i - (rb - xb)];
    const int64_t b = i < rb - yb ? 1 : y[i - (rb - yb)];
    int64_t o;
    if (a == b || b == 1)
      o = a;
    else if (a == 1)
      o = b;
    else if (a < 0 || b < 0)
      o = std::max(a, b);
    else
      return MakeError(ErrorCode::kShape, "{}: batch dim {} differs ({} vs {}) and neither is 1", context(), i, a, b);
    d.x_batch.push_back(a);
    d.y_batch.push_back(b);
    d.out_batch.push_back(o);
  }
  d.out = d.out_batch;
  if (!x_vec) d.out.push_back(d.m);
  if (!y_vec) d.out.push_back(d.n);
  return d;
}

}  // namespace paddlec::ops::matmul
