// slice's and gather's slots, attributes and geometry, shared by their shape functions and CPU
// kernels (index.cc) and their CUDA kernels (index_cuda.cc): the box a slice takes and the
// [outer, rows, inner] view a gather moves rows in are computed here only.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::index {

// ---- slice ------------------------------------------------------------------------------------

inline constexpr InSlot kInput{0, "Input"};
inline constexpr InSlot kStartsTensor{1, "StartsTensor"};
inline constexpr InSlot kEndsTensor{2, "EndsTensor"};
inline constexpr InSlot kStartsTensorList{3, "StartsTensorList"};
inline constexpr InSlot kEndsTensorList{4, "EndsTensorList"};
inline constexpr OutSlot kOut{0, "Out"};
// slice_grad: (Input, Out@GRAD, the forward's tensor-valued starts and ends) -> Input@GRAD.
inline constexpr InSlot kGradInput{0, "Input"};
inline constexpr InSlot kGradDOut{1, "Out@GRAD"};
inline constexpr InSlot kGradStartsTensor{2, "StartsTensor"};
inline constexpr InSlot kGradEndsTensor{3, "EndsTensor"};
inline constexpr InSlot kGradStartsTensorList{4, "StartsTensorList"};
inline constexpr InSlot kGradEndsTensorList{5, "EndsTensorList"};
inline constexpr OutSlot kDInput{0, "Input@GRAD"};

struct SliceAttrs {
  std::vector<int64_t> axes, starts, ends, decrease_axis;
  static SliceAttrs Decode(const AttrReader& a) {
    return {a.Get<std::vector<int64_t>>("axes"), a.Get<std::vector<int64_t>>("starts"),
            a.Get<std::vector<int64_t>>("ends"), a.Get<std::vector<int64_t>>("decrease_axis")};
  }
};

/// The box a slice copies out of its input: per input axis the first index and the length (axes
/// not sliced: 0 and the whole dim), and Out's dims (the box without the decreased axes).
struct SliceBox {
  Dims start, len, out;
};

inline std::string ListString(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// PaddlePaddle's slice rule on `in` (unknown dims allowed): negative starts and ends count from
/// the end of their axis, both are clamped to [0, dim], and an end before its start gives an empty
/// axis. A sliced axis of unknown size has an unknown length. Each decreased axis must be sliced to
/// length 1 and disappears from Out. Errors name the attribute and the shapes.
inline StatusOr<SliceBox> MakeSliceBox(const Dims& in, const SliceAttrs& a) {
  if (a.starts.size() != a.axes.size() || a.ends.size() != a.axes.size())
    return MakeError(ErrorCode::kShape, "axes {}, starts {} and ends {} must have the same number of entries",
                     ListString(a.axes), ListString(a.starts), ListString(a.ends));
  SliceBox box{Dims::Filled(in.rank(), 0), in, {}};
  std::array<bool, kMaxRank> sliced{};
  for (size_t i = 0; i < a.axes.size(); ++i) {
    const int64_t axis = a.axes[i] < 0 ? a.axes[i] + in.rank() : a.axes[i];
    if (axis < 0 || axis >= in.rank())
      return MakeError(ErrorCode::kShape, "axes {} has entry {} out of range for Input of shape {}", ListString(a.axes),
                       a.axes[i], in.ToString());
    if (sliced[axis]) return MakeError(ErrorCode::kShape, "axes {} names axis {} twice", ListString(a.axes), axis);
    sliced[axis] = true;
    const int64_t dim = in[axis];
    if (dim < 0) {
      box.len[axis] = kUnknownDim;
      continue;
    }
    const int64_t s = std::clamp(a.starts[i] < 0 ? a.starts[i] + dim : a.starts[i], int64_t{0}, dim);
    const int64_t e = std::clamp(a.ends[i] < 0 ? a.ends[i] + dim : a.ends[i], int64_t{0}, dim);
    box.start[axis] = s;
    box.len[axis] = std::max<int64_t>(e - s, 0);
  }
  std::array<bool, kMaxRank> drop{};
  for (int64_t d : a.decrease_axis) {
    const int64_t axis = d < 0 ? d + in.rank() : d;
    if (axis < 0 || axis >= in.rank() || !sliced[axis])
      return MakeError(ErrorCode::kShape, "decrease_axis {} has entry {}, which is not an axis sliced by axes {}",
                       ListString(a.decrease_axis), d, ListString(a.axes));
    if (box.len[axis] >= 0 && box.len[axis] != 1)
      return MakeError(ErrorCode::kShape,
                       "decrease_axis removes axis {}, but the slice keeps {} entries of it (Input has shape {})", axis,
                       box.len[axis], in.ToString());
    drop[axis] = true;
  }
  for (int i = 0; i < in.rank(); ++i)
    if (!drop[i]) box.out.push_back(box.len[i]);
  return box;
}

// ---- gather -----------------------------------------------------------------------------------

inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kIndex{1, "Index"};
inline constexpr InSlot kAxis{2, "Axis"};
inline constexpr OutSlot kGatherOut{0, "Out"};
// gather_grad: (X, Index, Axis, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kGradX{0, "X"};
inline constexpr InSlot kGradIndex{1, "Index"};
inline constexpr InSlot kGradAxis{2, "Axis"};
inline constexpr InSlot kGatherDOut{3, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};

struct GatherAttrs {
  int axis;
  static GatherAttrs Decode(const AttrReader& a) { return {a.Get<int>("axis")}; }
};

/// X seen as [outer, rows, inner] around the gathered axis: Out row j of every outer slice is X row
/// Index[j] of it.
struct GatherView {
  int64_t outer = 1, rows = 1, inner = 1;
};

inline GatherView GatherViewOf(const Dims& x, int axis_attr) {
  const int axis = NormalizeAxis(axis_attr, x.rank());
  return {x.Product(0, axis), x[axis], x.Product(axis + 1, x.rank())};
}

}  // namespace paddlec::ops::index
