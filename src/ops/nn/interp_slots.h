// nearest_interp_v2's and bilinear_interp_v2's slots, decoded attributes and geometry, shared by their
// shape functions and CPU kernels (interp.cc) and their CUDA kernels (interp_cuda.cc); the per-element
// bodies are interp_index.h's.
#pragma once

#include <string>
#include <vector>

#include "nn/interp_index.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::interp {

inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kOutSize{1, "OutSize"};
inline constexpr InSlot kSizeTensor{2, "SizeTensor"};
inline constexpr InSlot kScale{3, "Scale"};
inline constexpr OutSlot kOut{0, "Out"};
// <op>_grad: (X, OutSize, SizeTensor, Scale, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kDOut{4, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};

struct InterpAttrs {
  std::string op;  // the forward op type, for messages
  bool nearest = false;
  bool channel_last = false;
  int out_h = 0, out_w = 0;
  std::vector<float> scale;
  bool align_corners = true;
  int align_mode = 1;

  static InterpAttrs Decode(const AttrReader& a) {
    InterpAttrs p;
    std::string type = a.op().type();
    if (type.ends_with("_grad")) type.resize(type.size() - 5);
    p.op = type;
    p.nearest = type == "nearest_interp_v2";
    p.channel_last = a.Get<std::string>("data_layout") == "NHWC";
    p.out_h = a.Get<int>("out_h");
    p.out_w = a.Get<int>("out_w");
    p.scale = a.Get<std::vector<float>>("scale");
    p.align_corners = a.Get<bool>("align_corners");
    p.align_mode = a.Get<int>("align_mode");
    return p;
  }
};

/// The values of the tensor inputs that are bound (empty vectors for the unbound ones); at compile time
/// -1 for each value.
struct InterpValues {
  std::vector<int64_t> size_tensor;  // SizeTensor: one value per tensor (height, width)
  std::vector<int64_t> out_size;     // OutSize: (height, width)
  std::vector<double> scale;         // Scale: 1 value (both axes) or (height, width)
  bool scale_bound = false;          // Scale is bound (its values may still be unknown: compile time)
};

/// Computes the geometry of a run, in PaddlePaddle's order of precedence: SizeTensor, else the scale
/// (the Scale tensor, else the `scale` attribute when positive, else out_h / out_w), then OutSize over
/// the sizes; the ratio uses the scale whenever one was given. `out_dims`, when not null, are the
/// output's dims (a gradient's Out@GRAD), which then decide the sizes. interp.cc.
Status InterpShapeOf(const Dims& x, const InterpAttrs& a, const InterpValues& v, const Dims* out_dims,
                     nn::InterpShape& s);

/// Out's dims for geometry `s`, in its layout.
inline Dims InterpOutDims(const nn::InterpShape& s) {
  return s.channel_last ? Dims{s.n, s.axis[0].out, s.axis[1].out, s.c} : Dims{s.n, s.c, s.axis[0].out, s.axis[1].out};
}

}  // namespace paddlec::ops::interp
