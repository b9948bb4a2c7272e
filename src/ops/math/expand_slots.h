// expand_v2's and tile's slots, attributes and broadcast views, shared by their shape functions and
// CPU kernels (expand.cc) and their CUDA kernels (expand_cuda.cc).
//
// Both ops are one broadcast: Out, seen as `out_view`, reads X seen as `x_view` (same rank, 1 on the
// broadcast axes). expand_v2 aligns X to the trailing axes of `shape`. tile views each axis of Out
// as [repeat, dim] and X's as [1, dim], so a tile is an expand of that interleaved view; axes of size
// 1 are left out of the view, which keeps it within kMaxRank for every tile PaddlePaddle allows
// (rank <= 6) unless more than kMaxRank view axes remain (then the shape function says so).
#pragma once

#include <string>
#include <vector>

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::expand {

inline constexpr InSlot kX{0, "X"};
inline constexpr OutSlot kOut{0, "Out"};
// expand_v2's and tile's tensor-valued attributes (rejected by the shape functions for now).
inline constexpr InSlot kShape{1, "Shape"};
inline constexpr InSlot kExpandShapesTensor{2, "expand_shapes_tensor"};
inline constexpr InSlot kRepeatTimes{1, "RepeatTimes"};
inline constexpr InSlot kRepeatTimesTensor{2, "repeat_times_tensor"};
// Gradient ops: (X, Out@GRAD, the forward's tensor-valued attributes) -> X@GRAD.
inline constexpr InSlot kGradX{0, "X"};
inline constexpr InSlot kGradDOut{1, "Out@GRAD"};
inline constexpr InSlot kGradShape{2, "Shape"};
inline constexpr InSlot kGradExpandShapesTensor{3, "expand_shapes_tensor"};
inline constexpr InSlot kGradRepeatTimes{2, "RepeatTimes"};
inline constexpr InSlot kGradRepeatTimesTensor{3, "repeat_times_tensor"};
inline constexpr OutSlot kDX{0, "X@GRAD"};

inline std::string IntList(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// One op instance's broadcast: its attribute (expand_v2's `shape` or tile's `repeat_times`) and
/// which op reads it.
struct BroadcastAttrs {
  bool tile = false;
  std::vector<int> sizes;
};

/// BroadcastAttrs as MakeKernel decodes them, per op.
template <bool kTile>
struct AttrsOf : BroadcastAttrs {
  static AttrsOf Decode(const AttrReader& a) {
    AttrsOf r;
    r.tile = kTile;
    r.sizes = a.Get<std::vector<int>>(kTile ? "repeat_times" : "shape");
    return r;
  }
};
using ExpandAttrs = AttrsOf<false>;
using TileAttrs = AttrsOf<true>;

/// Out's dims and the equal-rank views of Out and X the kernels walk.
struct BroadcastView {
  Dims out, out_view, x_view;
};

/// PaddlePaddle's expand_v2 rule: X aligns with the trailing entries of `shape`; an entry of -1
/// keeps X's dim, a positive entry must equal X's dim or X's dim must be 1 (leading entries, which
/// X lacks, must be positive). Unknown dims of X are taken to fit.
inline StatusOr<BroadcastView> ExpandView(const Dims& x, const std::vector<int>& shape) {
  const int r = static_cast<int>(shape.size());
  if (r < x.rank() || r > kMaxRank)
    return MakeError(ErrorCode::kShape, "shape {} has {} entries, but X has shape {} (rank {}): it needs {} to {}",
                     IntList(shape), r, x.ToString(), x.rank(), x.rank(), kMaxRank);
  const int diff = r - x.rank();
  BroadcastView v;
  for (int i = 0; i < r; ++i) {
    const int64_t xd = i < diff ? 1 : x[i - diff];
    const int s = shape[i];
    if (s == -1 && i >= diff) {
      v.out.push_back(xd);
    } else if (s <= 0) {
      return MakeError(ErrorCode::kShape, "shape {} has entry {} at index {}: entries must be positive{}",
                       IntList(shape), s, i, i >= diff ? " or -1 (keep X's dimension)" : " where X has no dimension");
    } else if (xd != 1 && xd != kUnknownDim && xd != s) {
      return MakeError(ErrorCode::kShape,
                       "cannot expand X of shape {} to shape {}: dimension {} of X is {}, neither 1 nor {}",
                       x.ToString(), IntList(shape), i - diff, xd, s);
    } else {
      v.out.push_back(s);
    }
    v.x_view.push_back(xd);
  }
  v.out_view = v.out;
  return v;
}

/// PaddlePaddle's tile rule: the shorter of X's dims and `repeat_times` is padded with leading 1s;
/// Out's dim i is X's dim i times repeat_times[i] (each >= 1).
inline StatusOr<BroadcastView> TileView(const Dims& x, const std::vector<int>& repeat) {
  const int r = std::max(x.rank(), static_cast<int>(repeat.size()));
  if (r > kMaxRank)
    return MakeError(ErrorCode::kShape, "repeat_times {} has more than {} entries", IntList(repeat), kMaxRank);
  BroadcastView v;
  for (int i = 0; i < r; ++i) {
    const int ri = i - (r - static_cast<int>(repeat.size()));
    const int xi = i - (r - x.rank());
    const int64_t rep = ri >= 0 ? repeat[ri] : 1;
    const int64_t d = xi >= 0 ? x[xi] : 1;
    if (rep <= 0)
      return MakeError(ErrorCode::kShape, "repeat_times {} has entry {} at index {}: entries must be positive",
                       IntList(repeat), rep, ri);
    v.out.push_back(DimMul(d, rep));
    // [repeat, dim] with the size-1 parts left out: the repeat axis reads X with stride 0.
    if (v.out_view.rank() + (rep != 1) + (d != 1) > kMaxRank)
      return MakeError(ErrorCode::kShape,
                       "tiling X of shape {} by repeat_times {} needs more than {} broadcast axes: not supported",
                       x.ToString(), IntList(repeat), kMaxRank);
    if (rep != 1) {
      v.out_view.push_back(rep);
      v.x_view.push_back(1);
    }
    if (d != 1) {
      v.out_view.push_back(d);
      v.x_view.push_back(d);
    }
  }
  return v;
}

/// The view an op instance of `a` broadcasts X of dims `x` with.
inline StatusOr<BroadcastView> ViewOf(const Dims& x, const BroadcastAttrs& a) {
  return a.tile ? TileView(x, a.sizes) : ExpandView(x, a.sizes);
}

}  // namespace paddlec::ops::expand
