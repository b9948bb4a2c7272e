// The reduce ops' slots and PaddlePaddle's rules for which axes they reduce, shared by their shape
// functions and CPU kernels (reduce.cc) and their CUDA kernels (reduce_cuda.cc).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::reduce {

inline constexpr InSlot kX{0, "X"};
inline constexpr OutSlot kOut{0, "Out"};
// Gradient ops: (X, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kGradX{0, "X"};
inline constexpr InSlot kGradDOut{1, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};

inline std::string DimList(const std::vector<int>& dim) {
  std::string s = "[";
  for (size_t i = 0; i < dim.size(); ++i) s += (i ? ", " : "") + std::to_string(dim[i]);
  return s + "]";
}

/// Which axes of X a reduce op reduces: bit i set = axis i reduced.
struct ReduceSpec {
  std::vector<int> dim;
  bool keep_dim = false;
  bool reduce_all = true;
  int out_dtype = -1;

  static ReduceSpec All() { return {}; }
  static ReduceSpec Decode(const AttrReader& a) {
    ReduceSpec s;
    s.dim = a.Get<std::vector<int>>("dim");
    s.keep_dim = a.Get<bool>("keep_dim");
    s.reduce_all = a.Get<bool>("reduce_all");
    s.out_dtype = a.Has("out_dtype") ? a.Get<int>("out_dtype") : -1;
    return s;
  }

  /// The reduced-axes mask for X of rank `rank`. As in PaddlePaddle, reduce_all, an empty `dim` or a
  /// `dim` naming every axis reduces everything; a 0-D X accepts dim 0 or -1.
  StatusOr<uint32_t> Mask(const Dims& x) const {
    const int rank = x.rank();
    const uint32_t all = (uint32_t{1} << rank) - 1;
    if (reduce_all || dim.empty()) return all;
    uint32_t mask = 0;
    for (int d : dim) {
      if (rank == 0 && (d == 0 || d == -1)) continue;
      const int a = NormalizeAxis(d, rank);
      if (a < 0)
        return MakeError(ErrorCode::kShape,
                         "dim {} is out of range for X of shape {} (rank {}): it must be in [{}, {}]", d, x.ToString(),
                         rank, -std::max(rank, 1), std::max(rank, 1) - 1);
      if (mask & (uint32_t{1} << a))
        return MakeError(ErrorCode::kShape, "dim {} names axis {} of X (shape {}) twice", DimList(dim), a,
                         x.ToString());
      mask |= uint32_t{1} << a;
    }
    return rank == 0 ? all : mask;
  }

  /// Mask, then Kept.
  StatusOr<Dims> KeptDims(const Dims& x) const {
    PC_ASSIGN_OR_RETURN(uint32_t mask, Mask(x));
    return Kept(x, mask);
  }

  /// X's dims with the reduced axes set to 1 (the output's layout inside X's rank).
  static Dims Kept(const Dims& x, uint32_t mask) {
    Dims d = x;
    for (int i = 0; i < x.rank(); ++i)
      if (mask & (uint32_t{1} << i)) d[i] = 1;
    return d;
  }
};

}  // namespace paddlec::ops::reduce
