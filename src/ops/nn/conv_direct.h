// A direct CPU convolution for inputs of few channels (an image's first layer: 1 to 4 channels),
// where neither oneDNN's blocked kernels (whose 8- or 16-channel input blocks would be mostly
// padding) nor Winograd (whose transforms cost more than the few multiplies they save) fit.
//
// Each output pixel of 8 output channels is one AVX2 register accumulating C x KH x KW broadcast
// inputs times filter vectors; the bias, the relu and a 2x2 stride-2 pooling run on the registers,
// so with a pooling only the pooled result is written (LeNet's first layer: a quarter of the bytes).
// Where the tiles run on AVX-512 (common/microkernel.h's TilesUseAvx512), two groups of 8
// channels share 16-lane registers. Work is handed out per (image, 8 or 16 output channels) to
// whichever thread is free. The filter gradient (SmallConvBackwardWeights) runs the same way, with
// the 8 channels' taps as accumulators.
#pragma once

#include <vector>

#include "nn/winograd.h"

namespace paddlec::ops::nn {

/// Inputs of at most this many channels go to SmallChannelConv.
inline constexpr int64_t kSmallConvMaxChannels = 4;

/// Whether SmallChannelConv computes `g`: one group, at most kSmallConvMaxChannels input and at
/// least 8 output channels, stride 1, no dilation, a kernel of at most 7 x 7.
bool SmallConvFits(const ConvGeometry& g);

/// dF = the filter gradient (OIHW) of a convolution SmallConvFits accepts, from its NCHW input x and
/// its output gradient dy in `dy_layout`, on up to `threads` threads. Each 8 output channels' taps
/// accumulate in registers, one lane per channel, over every output pixel; images are summed in a
/// fixed order, so the result does not depend on the thread count. oneDNN 2.6 computed LeNet's
/// first-layer gradient (64 x 1 x 28 x 28 to 32 channels) in 1.7 ms, plus 0.5 ms reordering x and
/// dy into 8-channel blocks.
void SmallConvBackwardWeights(const ConvGeometry& g, const float* x, const float* dy, ActivationLayout dy_layout,
                              float* df, int threads);

/// One convolution's packed filter and its runs. Not thread-safe: one instance per op instance.
class SmallChannelConv {
 public:
  /// Packs the OIHW filter of `g`.
  void SetFilter(const ConvGeometry& g, const float* w);
  /// y = conv(x) per `g`, then the epilogue (its pooling as WinogradPoolFits requires); x is NCHW,
  /// y in `y_layout`; up to `threads` threads.
  void Forward(const ConvGeometry& g, const float* x, float* y, ActivationLayout y_layout, const WinogradEpilogue& e,
               int threads) const;

 private:
  int64_t out_padded_ = 0;  // output channels padded to 8
  AlignedVector<float> w_;  // [out_padded / 8][c][kh][kw][8]
  // Where the kernels run on AVX-512 (common/microkernel.h's TilesUseAvx512), pairs of w_'s groups
  // as 16 lanes, [out_padded / 16][c][kh][kw][16]; empty elsewhere.
  AlignedVector<float> w16_;
};

}  // namespace paddlec::ops::nn
