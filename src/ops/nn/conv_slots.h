// The convolution ops' slots, decoded attributes and geometry, shared by their shape functions and
// CPU kernels (conv.cc) and their CUDA kernels (conv_cuda.cc): conv2d,
// depthwise_conv2d, conv2d_transpose and fused_conv2d_bn_act.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nn/window.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::conv {

inline constexpr InSlot kInput{0, "Input"};
inline constexpr InSlot kFilter{1, "Filter"};
inline constexpr OutSlot kOutput{0, "Output"};
// <conv>_grad: (Input, Filter, Output@GRAD) -> (Input@GRAD, Filter@GRAD).
inline constexpr InSlot kDOutput{2, "Output@GRAD"};
inline constexpr OutSlot kDInput{0, "Input@GRAD"};
inline constexpr OutSlot kDFilter{1, "Filter@GRAD"};
// fused_conv2d_bn_act: (Input, Filter, Scale, Bias, Mean, Variance) -> Output.
inline constexpr InSlot kFScale{2, "Scale"};
inline constexpr InSlot kFBias{3, "Bias"};
inline constexpr InSlot kFMean{4, "Mean"};
inline constexpr InSlot kFVariance{5, "Variance"};
// conv2d_transpose: (Input, Filter, Bias) -> Output; Bias is PaddlePaddle's oneDNN-only input, which
// its conv2d_transpose_grad also lists: (Input, Filter, Output@GRAD, Bias).
inline constexpr InSlot kTBias{2, "Bias"};
inline constexpr InSlot kTGBias{3, "Bias"};

/// The attributes of one convolution op instance, decoded once.
struct ConvAttrs {
  std::string op;  // the forward op type, for messages
  nn::WindowAttrs window;
  int groups = 1;
  std::string data_format;
  // conv2d_transpose only: extra output rows/columns, or the output size itself (empty = unset).
  std::vector<int> output_padding, output_size;
  // cuDNN hints of conv2d / depthwise_conv2d / conv2d_transpose (defaults: heuristics, 512 MB).
  bool exhaustive_search = false;
  int workspace_size_mb = 512;
  // conv2d / depthwise_conv2d (and their gradients) and fused_conv2d_bn_act: activations in oneDNN's
  // channel-blocked layout, set by the layout pass; Input (and Input@GRAD), and Output (and
  // Output@GRAD).
  bool blocked_input = false, blocked_output = false;

  static ConvAttrs Decode(const AttrReader& a) {
    ConvAttrs c;
    std::string_view type = a.op().type();
    if (type.ends_with("_grad")) type.remove_suffix(5);
    c.op = std::string(type);
    c.window.strides = a.Get<std::vector<int>>("strides");
    c.window.paddings = a.Get<std::vector<int>>("paddings");
    c.window.dilations = a.Get<std::vector<int>>("dilations");
    c.window.algorithm = nn::ParsePaddingAlgorithm(a.Get<std::string>("padding_algorithm"));
    c.groups = a.Get<int>("groups");
    c.data_format = a.Get<std::string>("data_format");
    if (a.Has("output_padding")) c.output_padding = a.Get<std::vector<int>>("output_padding");
    if (a.Has("output_size")) c.output_size = a.Get<std::vector<int>>("output_size");
    if (a.Has("exhaustive_search")) c.exhaustive_search = a.Get<bool>("exhaustive_search");
    if (a.Has("workspace_size_MB")) c.workspace_size_mb = a.Get<int>("workspace_size_MB");
    if (a.Has("blocked_input")) c.blocked_input = a.Get<bool>("blocked_input");
    if (a.Has("blocked_output")) c.blocked_output = a.Get<bool>("blocked_output");
    return c;
  }
};

}  // namespace paddlec::ops::conv

namespace paddlec::ops::nn {

/// The sizes of one 2-D convolution. -1 marks dims unknown at compile time; kernels see known ones.
/// A transposed convolution is described by the convolution it transposes (ConvTransposeGeometryOf):
/// its output is that convolution's input and its input that convolution's output.
struct ConvGeometry {
  int64_t n = -1, c = -1, o = -1, groups = 1;
  Window2d w;

  int64_t c_per_group() const { return c / groups; }
  int64_t o_per_group() const { return o / groups; }
  /// Zero-sized batches, channels or planes: nothing to compute, outputs are zeros.
  bool empty() const {
    return n == 0 || c == 0 || o == 0 || w.out[0] <= 0 || w.out[1] <= 0 || w.in[0] <= 0 || w.in[1] <= 0;
  }
  bool operator==(const ConvGeometry&) const = default;
};

/// Checks a convolution's shapes and attributes and computes its geometry: Input `x` [N, C, H, W],
/// Filter `f` [O, C / groups, KH, KW]. Unknown dims stay -1. conv.cc.
Status ConvGeometryOf(const Dims& x, const Dims& f, const conv::ConvAttrs& a, ConvGeometry& g);

/// The same for conv2d_transpose: Input `x` [N, C, H, W], Filter `f` [C, O / groups, KH, KW], output
/// [N, O, OH, OW]. `g` is the convolution being transposed: g.c = O, g.o = C, g.w.in = (OH, OW),
/// g.w.out = (H, W). conv.cc.
Status ConvTransposeGeometryOf(const Dims& x, const Dims& f, const conv::ConvAttrs& a, ConvGeometry& g);

/// A pooling of a fused convolution's result (fuse-conv-pool): on the CPU it runs while the result is
/// still in oneDNN's layout (only the pooled result is reordered back, conv_onednn.h); on the GPU
/// pool.cu's kernel pools the convolution's NCHW result.
struct ConvPool {
  bool max = true;
  bool exclusive = true;  // averages over the window's input elements only
  Window2d w;             // w.in = the convolution's output size; w.out = the pooled size
  bool operator==(const ConvPool&) const = default;
};

/// The pooling fused after the convolution (fuse-conv-pool), or none.
struct FusedPoolAttrs {
  std::string type;  // "", "max" or "avg"
  std::vector<int> ksize, strides, paddings;
  bool exclusive = true;

  static FusedPoolAttrs Decode(const AttrReader& a) {
    return {a.Get<std::string>("pooling_type"), a.Get<std::vector<int>>("pool_ksize"),
            a.Get<std::vector<int>>("pool_strides"), a.Get<std::vector<int>>("pool_paddings"),
            a.Get<bool>("pool_exclusive")};
  }
  /// The pooling window over the convolution's output `g`; an error names what does not fit.
  StatusOr<ConvPool> Window(const ConvGeometry& g) const {
    if (ksize.size() != 2 || strides.size() != 2 || (paddings.size() != 2 && paddings.size() != 4))
      return MakeError(ErrorCode::kShape,
                       "pool_ksize and pool_strides need 2 values and pool_paddings 2 or 4, but they have {}, {} and "
                       "{}",
                       ksize.size(), strides.size(), paddings.size());
    ConvPool p;
    p.max = type == "max";
    p.exclusive = exclusive;
    for (int ax = 0; ax < 2; ++ax) {
      p.w.in[ax] = g.w.out[ax];
      p.w.kernel[ax] = ksize[ax];
      p.w.stride[ax] = strides[ax];
    }
    ResolvePadding(paddings, PaddingAlgorithm::kExplicit, p.w);
    ComputeOutputSize(p.w, /*ceil_mode=*/false);
    for (int ax = 0; ax < 2; ++ax)
      if (p.w.out[ax] == -2)
        return MakeError(ErrorCode::kShape, "the pooling window {} {} does not fit the convolution's output {} {}",
                         AxisName(ax), p.w.kernel[ax], AxisName(ax), p.w.in[ax]);
    return p;
  }
};

}  // namespace paddlec::ops::nn
