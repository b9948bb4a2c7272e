// pad3d's slots, decoded attributes and geometry, shared by its shape function and CPU kernels
// (pad.cc) and its CUDA kernels (pad_cuda.cc); the per-element bodies are pad_index.h's.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "nn/pad_index.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::pad {

inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kPaddings{1, "Paddings"};
inline constexpr OutSlot kOut{0, "Out"};
// pad3d_grad: (X, Paddings, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kDOut{2, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};

struct Pad3dAttrs {
  std::vector<int> paddings;  // left, right, top, bottom, front, back
  nn::PadMode mode = nn::PadMode::kConstant;
  float value = 0;
  bool channel_last = false;

  static Pad3dAttrs Decode(const AttrReader& a) {
    Pad3dAttrs p;
    p.paddings = a.Get<std::vector<int>>("paddings");
    std::string mode = a.Get<std::string>("mode");
    p.mode = mode == "reflect"     ? nn::PadMode::kReflect
             : mode == "replicate" ? nn::PadMode::kReplicate
             : mode == "circular"  ? nn::PadMode::kCircular
                                   : nn::PadMode::kConstant;
    p.value = a.Get<float>("value");
    p.channel_last = a.Get<std::string>("data_format") == "NDHWC";
    return p;
  }
};

/// Checks X's shape against the paddings (the attribute, or `values` of the Paddings tensor when not
/// empty) and computes the geometry; unknown dims stay -1. pad.cc.
Status Pad3dShapeOf(const Dims& x, const Pad3dAttrs& a, std::span<const int64_t> values, nn::Pad3dShape& p);

/// Out's dims for geometry `p`, in its layout.
inline Dims Pad3dOutDims(const nn::Pad3dShape& p) {
  const int64_t d = p.axis[0].out, h = p.axis[1].out, w = p.axis[2].out;
  return p.channel_last ? Dims{p.n, d, h, w, p.c} : Dims{p.n, p.c, d, h, w};
}

}  // namespace paddlec::ops::pad
