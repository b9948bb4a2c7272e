// oneDNN convolution primitives (forward, backward-data, backward-weights) for one conv2d op
// instance, created on first use and re-created only when the geometry changes.
//
// Tensors stay NCHW / OIHW in paddlec. Each primitive is built either on those plain layouts or with
// format_tag::any, letting oneDNN pick its blocked layouts (nChw16c, OIhw16i16o, ...) and reordering
// into and out of them on every call. Which is faster depends on the direction and the channel
// counts; DefaultConvLayouts() encodes what was measured (numbers in conv.cc's header comment).
#pragma once

#include <dnnl.hpp>
#include <memory>
#include <optional>
#include <string>

#include "nn/conv_slots.h"
#include "paddlec/core/error.h"
#include "paddlec/runtime/onednn.h"

namespace paddlec::ops::nn {

enum class ConvLayout {
  kPlain,    // NCHW / OIHW on the caller's buffers (oneDNN's gemm-based implementation)
  kBlocked,  // oneDNN's preferred layouts (format_tag::any), reordered on every call
};

/// The layout of each of the three primitives.
struct ConvLayouts {
  ConvLayout forward = ConvLayout::kBlocked;
  ConvLayout backward_data = ConvLayout::kBlocked;
  ConvLayout backward_weights = ConvLayout::kBlocked;
};

/// The measured rule: blocked everywhere, except backward-data with fewer than 4 input channels per
/// group, where a blocked diff_src wastes most of each 16-channel block, unless the convolution is
/// depthwise (oneDNN's depthwise kernels need the blocked layout; numbers in conv.cc).
ConvLayouts DefaultConvLayouts(const ConvGeometry& g);

/// How a fused forward convolution meets its neighbours (fused_conv2d_bn_act's layout attributes).
struct ConvForwardIo {
  bool blocked_src = false;        // x is in ActivationBlockTag()'s layout (written so by a producer)
  bool blocked_dst = false;        // y is written in ActivationBlockTag()'s layout for a blocked reader
  bool weights_unchanged = false;  // w holds what it held at the last call: its reorder is reused
};

/// Which of a convolution's activations are in ActivationBlockTag()'s layout in a backward pass: x
/// and dx (blocked_src) share one, y's gradient dy (blocked_dst) the other (conv2d_grad's layout
/// attributes, set by the layout pass).
struct ConvBackwardIo {
  bool blocked_src = false;
  bool blocked_dst = false;
  friend bool operator==(const ConvBackwardIo&, const ConvBackwardIo&) = default;
};

/// The channel-blocked activation layout that oneDNN's direct convolutions and poolings prefer on this
/// CPU (nChw16c with AVX-512, nChw8c below). A tensor kept in it between two oneDNN ops skips a
/// reorder to NCHW and one back; `channels` must be a multiple of the block, so that the blocked
/// tensor has exactly the NCHW tensor's size (no padded channels). Returns undef when it is not.
dnnl::memory::format_tag ActivationBlockTag(int64_t channels);
/// The block ActivationBlockTag uses on this CPU (16 or 8 channels).
int ActivationBlockChannels();
/// An error unless the channels of each activation said to be blocked (x's for `blocked_src`, y's for
/// `blocked_dst`) are a whole number of blocks: every kernel checks it before it reads or writes one.
Status CheckBlockedChannels(const ConvGeometry& g, bool blocked_src, bool blocked_dst);

/// The threads for a convolution of `g` (runtime::OneDnnThreads of its multiply-adds), on oneDNN or
/// paddlec's own kernels. oneDNN primitives are created and run under the same count, since oneDNN
/// splits the work by the thread count it sees at creation.
int ConvThreads(const ConvGeometry& g);

/// float32 convolution on oneDNN. Not thread-safe: one instance per op instance.
class OneDnnConv {
 public:
  /// `forced` overrides DefaultConvLayouts (benchmarks compare the layouts with it).
  explicit OneDnnConv(std::optional<ConvLayouts> forced = std::nullopt);
  ~OneDnnConv();
  OneDnnConv(const OneDnnConv&) = delete;
  OneDnnConv& operator=(const OneDnnConv&) = delete;

  /// y = conv(x, w) [+ bias per output channel] [then relu] [then pooled]. All buffers are dense NCHW /
  /// OIHW float32 of the sizes in `g` (y of pool->w.out's when pooling); the bias and the relu run
  /// inside the primitive (oneDNN's bias and post-op).
  /// `io` says which of x and y are in ActivationBlockTag()'s layout, and whether w's last reorder holds.
  Status Forward(runtime::OneDnnHandles& h, const ConvGeometry& g, const float* x, const float* w, float* y,
                 const float* bias = nullptr, bool relu = false, const ConvPool* pool = nullptr, ConvForwardIo io = {});
  /// dx = conv_backward_data(w, dy); `io` says which activations are blocked, as in Backward.
  Status BackwardData(runtime::OneDnnHandles& h, const ConvGeometry& g, const float* w, const float* dy, float* dx,
                      ConvBackwardIo io = {});
  /// dw = conv_backward_weights(x, dy).
  Status BackwardWeights(runtime::OneDnnHandles& h, const ConvGeometry& g, const float* x, const float* dy, float* dw,
                         ConvBackwardIo io = {});
  /// Both gradients (either pointer may be null); dy is reordered once when both primitives want the
  /// same blocked layout for it. `io` says which of x, dx and dy are in ActivationBlockTag()'s layout.
  Status Backward(runtime::OneDnnHandles& h, const ConvGeometry& g, const float* x, const float* w, const float* dy,
                  float* dx, float* dw, ConvBackwardIo io = {});

  /// oneDNN's implementation names of the primitives built so far, e.g. "fwd=jit:avx512_core".
  std::string ImplInfo() const;

 private:
  Status BackwardWeightsImpl(runtime::OneDnnHandles& h, const ConvGeometry& g, const float* x, const float* dy,
                             float* dw, ConvBackwardIo io, bool dy_reordered_by_backward_data);

  struct Forward_;
  struct BackwardData_;
  struct BackwardWeights_;
  std::optional<ConvLayouts> forced_;
  std::unique_ptr<Forward_> fwd_;
  std::unique_ptr<BackwardData_> bwd_data_;
  std::unique_ptr<BackwardWeights_> bwd_weights_;
};

}  // namespace paddlec::ops::nn
