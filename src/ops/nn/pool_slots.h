// pool2d's slots and attributes, shared by its shape function and CPU kernels (pool.cc) and its CUDA
// kernels (pool_cuda.cc).
#pragma once

#include <string>
#include <vector>

#include "nn/window.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::pool {

inline constexpr InSlot kX{0, "X"};
inline constexpr OutSlot kOut{0, "Out"};
// pool2d_grad: (X, Out, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kOutIn{1, "Out"};
inline constexpr InSlot kDOut{2, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};

struct PoolAttrs {
  bool max = true;
  std::vector<int> ksize;
  nn::WindowAttrs window;
  bool global = false, ceil_mode = false, exclusive = true, adaptive = false;
  std::string data_format;
  // X (with X@GRAD) and Out (with Out@GRAD) in oneDNN's channel-blocked layout (the layout pass;
  // CPU float32 only: the GPU kernels keep NCHW throughout).
  bool blocked_input = false, blocked_output = false;

  static PoolAttrs Decode(const AttrReader& a) {
    PoolAttrs p;
    p.max = a.Get<std::string>("pooling_type") == "max";
    p.ksize = a.Get<std::vector<int>>("ksize");
    p.window.strides = a.Get<std::vector<int>>("strides");
    p.window.paddings = a.Get<std::vector<int>>("paddings");
    p.window.algorithm = nn::ParsePaddingAlgorithm(a.Get<std::string>("padding_algorithm"));
    p.global = a.Get<bool>("global_pooling");
    p.ceil_mode = a.Get<bool>("ceil_mode");
    p.exclusive = a.Get<bool>("exclusive");
    p.adaptive = a.Get<bool>("adaptive");
    p.data_format = a.Get<std::string>("data_format");
    p.blocked_input = a.Get<bool>("blocked_input");
    p.blocked_output = a.Get<bool>("blocked_output");
    return p;
  }
};

}  // namespace paddlec::ops::pool
