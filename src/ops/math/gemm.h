// Batched matrix products for the math family: float32 on paddlec's register-tiled GEMM (2-D
// products of at least 6 x 16, B packed once while its contents stay the same; where oneDNN runs
// AVX-512, only those with B kept packed), on a row-times-panel product for 1 to 4 rows (B packed
// into 64-column panels while it stays the same) or a cached oneDNN matmul primitive (the rest),
// float64 on Eigen (oneDNN's matmul has no f64).
//
// Operands are row-major tensors read through strides, so transposed operands cost nothing: no
// reorders, no copies. A Gemm object belongs to one kernel instance and keeps its primitive (and
// the oneDNN memory objects bound to it) until the shape changes, so a steady-state call only
// swaps data pointers and executes.
#pragma once

#include <memory>
#include <vector>

#include "common/aligned_vector.h"
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

/// Which float products paddlec's tiled GEMM (math/gemm.cc, common/microkernel.h's tiles) takes from
/// oneDNN's matmul. kAuto, the default, follows the measurements there: where oneDNN runs AVX-512
/// kernels only products whose B stays packed between calls (an inference's weights), elsewhere
/// every product the tiles fit. kAlways runs the tiles wherever they fit, on any CPU (the tests
/// cover them so); kNever leaves everything to oneDNN (for comparisons).
enum class TiledGemmUse { kAuto, kAlways, kNever };

/// The process-wide choice. It starts from PADDLEC_TILED_GEMM: `off` is kNever, `always` kAlways,
/// anything else kAuto.
TiledGemmUse GetTiledGemmUse();
void SetTiledGemmUse(TiledGemmUse use);

/// Whether the tiled GEMM takes a product that fits it, under `use`: `b_kept` when B is packed from
/// an earlier call and unchanged, `onednn_avx512` when oneDNN runs AVX-512 kernels on this CPU.
bool TiledGemmTakes(TiledGemmUse use, bool b_kept, bool onednn_avx512);

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
  Status Run(runtime::CpuContext& cpu, const GemmShape& shape, const float* a, const float* b, float* c,
             uint64_t b_stamp = 0) {
    return Run(cpu, shape, {}, a, b, nullptr, c, b_stamp);
  }
  /// C = epilogue(A * B): with bias, `bias` holds N values (2-D products only). `b_stamp` is B's
  /// content stamp (Tensor::stamp), 0 when unknown: a product that sees the same non-zero stamp (and
  /// the same B) on two calls in a row keeps B packed from then on, as an inference's weights are,
  /// and packs it again only when the stamp changes. Training's weights change every step: they are
  /// copied a block at a time as the product needs them, or packed whole at each call above 128 rows
  /// (where oneDNN runs AVX-512, such products run on its matmul: TiledGemmUse).
  Status Run(runtime::CpuContext& cpu, const GemmShape& shape, GemmEpilogue epilogue, const float* a, const float* b,
             const float* bias, float* c, uint64_t b_stamp = 0);

 private:
  struct Primitive;
  std::unique_ptr<Primitive> prim_;
  struct PackedB {
    uint64_t stamp = 0;  // B's stamp at the last call
    const float* b = nullptr;
    GemmShape shape;
    bool ready = false;  // `data` holds that B, packed
    AlignedVector<float> data;
    /// Records this call's B and returns whether it is the last call's, unchanged (a non-zero stamp
    /// seen twice, same memory, same shape); if not, `data` no longer holds it.
    bool SameAsLast(const float* b_now, const GemmShape& s, uint64_t b_stamp) {
      const bool same = b_stamp != 0 && stamp == b_stamp && b == b_now && shape == s;
      if (!same) ready = false;
      stamp = b_stamp;
      b = b_now;
      shape = s;
      return same;
    }
  };
  PackedB packed_;
  bool backwards_ = false;  // the few-row path's block order at the last call (math/gemm.cc)
  /// Room for a transposed A copied into row tiles at each call (math/gemm.cc, PackTransposedTiles).
  float* PackedARoom(const GemmShape& s);
  AlignedVector<float> packed_a_;
};

template <>
class Gemm<double> {
 public:
  /// `b_stamp` is accepted for symmetry with Gemm<float> and not used: nothing is packed.
  Status Run(runtime::CpuContext& cpu, const GemmShape& shape, const double* a, const double* b, double* c,
             uint64_t b_stamp = 0);
};

}  // namespace paddlec::ops::math
