// Winograd convolution on the CPU, F(2x2, 3x3) and F(4x4, 3x3), for 3x3 stride-1 convolutions with
// enough channels.
//
// A 3x3 convolution computes each 2x2 output tile from a 4x4 input patch. Winograd's minimal
// filtering does it with 16 multiplies per (input, output) channel pair instead of 36: the patch and
// the filter are transformed (V = B'dB, U = GgG'), the 16 transformed points are multiplied
// element-wise, summed over input channels (16 independent GEMMs of tiles x in-channels times
// in-channels x out-channels) and transformed back (Y = A'MA). A 4x4 tile from a 6x6 patch takes 36
// multiplies instead of 144. oneDNN 2.6 has no Winograd kernel below AVX-512, so on AVX2 machines
// this does 2.25x (4x) fewer multiplies than its direct kernels. The results differ from a direct
// convolution by float rounding only (winograd_test.cc bounds it at 1e-5 of the largest value).
//
// The work is cut into blocks of tiles sized so that a block's transformed input and products stay
// in the core's L2 cache; blocks are handed out one at a time to whichever thread is free (so a
// thread descheduled by another process delays only its block), and a block's output transform
// applies the bias, the relu and a 2x2 stride-2 pooling (the tile is the pooling window) before
// anything is written.
#pragma once

#include <cstdint>
#include <vector>

#include "common/aligned_vector.h"
#include "nn/conv_slots.h"

namespace paddlec::ops::nn {

/// An activation tensor's layout: plain NCHW (block 0) or oneDNN's channel-blocked nChw{block}c
/// (conv_onednn.h's ActivationBlockTag, channels a multiple of the block).
struct ActivationLayout {
  int block = 0;
};

/// Whether the convolution kernels may choose paddlec's own kernels (Winograd, and conv_direct.h's):
/// true unless the environment says PADDLEC_WINOGRAD=off (read once; for comparing against oneDNN).
bool WinogradEnabled();
/// Whether F(2x2, 3x3) computes `g` and pays off: 3x3, stride 1, no dilation, one group, padding
/// at most 2 per side, at least kWinogradMinChannels input and output channels. Such a `g` also has
/// its backward passes computed (backward-data is a convolution of dy with the flipped filter,
/// padded by 2 - g's padding on each side: at most 2 again, and covering dx exactly at stride 1).
bool WinogradFits(const ConvGeometry& g);
/// Below this many input or output channels the transforms cost more than the multiplies saved.
inline constexpr int64_t kWinogradMinChannels = 8;
/// The same for a plain NCHW input (copied to 8-channel groups first) and output (written a
/// channel at a time): measured, ResNet-20's 16-channel convolutions ran slower than oneDNN's
/// direct kernels, its 32- and 64-channel ones faster.
inline constexpr int64_t kWinogradPlainMinChannels = 32;
/// WinogradFits, with kWinogradPlainMinChannels when the input is plain NCHW.
bool WinogradPaysOff(const ConvGeometry& g, ActivationLayout input);
/// Whether F(2x2, 3x3) pays off for g's backward passes: from kWinogradPlainMinChannels whatever the
/// layout. Measured on ResNet-20's 16-channel stage in oneDNN's blocked layout (batch 64): the
/// backward passes took 4.0-4.4 ms on oneDNN against 4.8-5.3 on Winograd (the forward pass 2.0-2.2
/// on Winograd against 2.2-2.4); at 32 channels they were even.
bool WinogradBackwardPaysOff(const ConvGeometry& g);
/// Fewest tiles per block for which the filter gradient pays off in a tile size. Every block adds
/// its products into all of dU (points x C x K floats), and blocks shrink as channels grow (a
/// block's transformed input and gradient stay in L2): with few tiles per block those passes over
/// dU dominate. 2 threads, 2x2 tiles, 256->256 14x14 (8 tiles a block): 5.90 ms against oneDNN's
/// 3.57 at batch 2, 8.38 against 7.19 at batch 4; 4x4 tiles, 128->128 28x28 (7 tiles a block):
/// 2.63 against 1.71 in 2x2 tiles; 64->64 8x8 (14 tiles a block): 1.26 against 2.02.
inline constexpr int64_t kWinogradMinGradientBlockTiles = 12;
/// Whether Winograd pays off with a filter that changes at every call (training's forward pass and
/// filter gradient): not where AVX-512 doubles the FMA rate (common/microkernel.h's
/// Avx512DoublesFma). oneDNN's direct kernels run at that rate there, while the transforms here
/// stay on AVX2 and the filter's is redone at every call. Sapphire Rapids, 2 threads, ms, medians
/// of 5 alternating runs, Winograd / oneDNN for each part alone: LeNet training batch 64 forward 10.2
/// / 9.65, filter gradient 9.79 / 9.19, backward data even (10.3 / 10.3); all three 10.0 / 8.5, and
/// the ResNet bench 84.7 / 74.6 (3 runs). Inference, its filter transformed once, stays faster on
/// Winograd there: LeNet batch 64 1.52 / 1.93.
bool WinogradTrainingPaysOff();
/// WinogradBackwardPaysOff, and blocks of kWinogradMinGradientBlockTiles 2x2 tiles for the filter
/// gradient.
bool WinogradFilterGradientPaysOff(const ConvGeometry& g);

/// What a forward call does after the convolution, per output element.
struct WinogradEpilogue {
  const float* bias = nullptr;  // [out channels], or none
  bool relu = false;
  const ConvPool* pool = nullptr;  // only a 2x2 stride-2 unpadded pooling (WinogradPoolFits)
};
/// Whether `p` is a pooling the tiles of `g` can apply: 2x2 windows, stride 2, no padding, and even
/// output sizes (each 2x2 tile is one window).
bool WinogradPoolFits(const ConvGeometry& g, const ConvPool& p);

/// Outputs whose sides have at least this many pixels are computed in 4x4 tiles, F(4x4, 3x3), whose
/// transforms' coefficients reach 8 and 1/24: its rounding error measured about ten times F(2x2,
/// 3x3)'s, 1e-6 to 4e-6 of the largest value. Against 2x2 tiles, 2 threads, batch 64 (ms, forward /
/// backward-data with its filter transform): LeNet's 32->64 14x14 1.62 / 1.70 against 1.87 / 1.89,
/// ResNet-20's 16->16 32x32 1.78 / 1.82 against 2.60 / 2.57, 64->64 8x8 0.83 / 0.92 against 1.19 /
/// 1.22. Below 8 a 4x4 tile would be mostly padding.
inline constexpr int64_t kWinogradF4MinOutput = 8;
/// 4x4 tiles below which work whose per-call cost grows with the 36 points (a filter transformed at
/// every call, the filter gradient's sums) uses 2x2 tiles. 256->256 14x14, batch 1 (16 tiles): the
/// filter transform took 2.21 ms against 0.98, the forward pass 0.80 against 1.25; the filter
/// gradient of 32->64 14x14 took 0.207 ms against 0.101 (2.87 against 3.32 at batch 64).
inline constexpr int64_t kWinogradF4MinTiles = 64;
/// The output tile size for n outputs of out_h x out_w: 4 from kWinogradF4MinOutput, else 2; and
/// 2 below kWinogradF4MinTiles 4x4 tiles when `per_call` (the transforms are redone at every call).
int WinogradTile(int64_t n, int64_t out_h, int64_t out_w, bool per_call);

/// dw = conv_backward_weights(x, dy) of `g` (WinogradFits): x and dy in their layouts, OIHW dw, on
/// up to `threads` threads (each sums its blocks' products, then the sums are added), in output
/// tiles of `tile` (2 or 4; 0: WinogradTile's choice, per call, and 4 only with blocks of
/// kWinogradMinGradientBlockTiles tiles).
void WinogradBackwardWeights(const ConvGeometry& g, const float* x, ActivationLayout x_layout, const float* dy,
                             ActivationLayout dy_layout, float* dw, int threads, int tile = 0);

/// One convolution's transformed filter and its runs. Not thread-safe: one instance per op instance.
class WinogradConv {
 public:
  /// Transforms the OIHW filter of `g` for output tiles of `tile` (2 or 4; 0: WinogradTile's choice,
  /// with `per_call` when the filter is transformed again at every call, as in training).
  void SetFilter(const ConvGeometry& g, const float* w, int tile = 0, bool per_call = false);
  /// Transforms the filter for g's backward-data pass: dx = conv(dy, w flipped, in/out swapped), in
  /// tiles of `tile` (0: WinogradTile's choice, per call).
  void SetFilterForBackwardData(const ConvGeometry& g, const float* w, int tile = 0);

  /// y = conv(x) per `g` (the geometry SetFilter saw), then the epilogue, on up to `threads` threads.
  void Forward(const ConvGeometry& g, const float* x, ActivationLayout x_layout, float* y, ActivationLayout y_layout,
               const WinogradEpilogue& e, int threads) const;
  /// dx = conv_backward_data(w, dy) per `g` (after SetFilterForBackwardData), each in its layout.
  void BackwardData(const ConvGeometry& g, const float* dy, ActivationLayout dy_layout, float* dx,
                    ActivationLayout dx_layout, int threads) const;

 private:
  struct Shape;
  template <class F>
  void Transform(int tile, int64_t in, int64_t out, F&& filter);
  void Run(const Shape& s, const float* x, ActivationLayout xl, float* y, ActivationLayout yl,
           const WinogradEpilogue& e, int threads) const;
  template <int kOut>
  void RunTiles(const Shape& s, const float* x, ActivationLayout xl, float* y, ActivationLayout yl,
                const WinogradEpilogue& e, int threads) const;

  int tile_ = 2;  // outputs per tile side
  // Channels of the transformed filter: in padded to 8 (one register), out to 16 (a micro-tile).
  int64_t in_ = 0, in_padded_ = 0, out_ = 0, out_padded_ = 0;
  AlignedVector<float> u_;                // [(tile + 2)^2][out_padded / 16][in_padded][16]
  mutable AlignedVector<float> reorder_;  // a plain input copied to nChw8c
};

}  // namespace paddlec::ops::nn
