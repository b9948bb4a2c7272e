// Sliding-window geometry shared by conv2d and pool2d: PaddlePaddle's padding attributes, padding
// algorithms (EXPLICIT / SAME / VALID) and output sizes, with unknown (-1) input sizes propagated.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "paddlec/core/dims.h"

namespace paddlec::ops::nn {

enum class PaddingAlgorithm { kExplicit, kSame, kValid };

inline PaddingAlgorithm ParsePaddingAlgorithm(std::string_view s) {
  if (s == "SAME") return PaddingAlgorithm::kSame;
  if (s == "VALID") return PaddingAlgorithm::kValid;
  return PaddingAlgorithm::kExplicit;
}

/// The window of one 2-D sliding-window op instance, per spatial axis (0 = height, 1 = width).
struct Window2d {
  int64_t in[2] = {-1, -1};  // input size, -1 when unknown
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {1, 1};
  int64_t pad[4] = {0, 0, 0, 0};  // top, bottom, left, right, after the padding algorithm
  int64_t out[2] = {-1, -1};      // output size, -1 when unknown, -2 when the window does not fit

  int64_t pad_before(int axis) const { return pad[2 * axis]; }
  int64_t pad_after(int axis) const { return pad[2 * axis + 1]; }
  /// Extent of the dilated kernel along an axis.
  int64_t span(int axis) const { return dilation[axis] * (kernel[axis] - 1) + 1; }
  bool operator==(const Window2d&) const = default;
};

/// The attribute values from which a Window2d is resolved.
struct WindowAttrs {
  std::vector<int> strides;
  std::vector<int> paddings;   // 2 values (symmetric per axis) or 4 (top, bottom, left, right)
  std::vector<int> dilations;  // empty = 1
  PaddingAlgorithm algorithm = PaddingAlgorithm::kExplicit;
};

/// Fills `w.pad` from `paddings` (2 or 4 values) and applies the padding algorithm the way
/// PaddlePaddle's UpdatePadding(AndDilation) does: VALID pads nothing; SAME pads so that
/// out = ceil(in / stride), the odd pixel going after (bottom/right), and resets dilations to 1.
/// Precondition: w.in, w.kernel and w.stride are set and `paddings` has 2 or 4 values.
inline void ResolvePadding(const std::vector<int>& paddings, PaddingAlgorithm algorithm, Window2d& w) {
  for (int a = 0; a < 2; ++a) {
    if (paddings.size() == 4) {
      w.pad[2 * a] = paddings[2 * a];
      w.pad[2 * a + 1] = paddings[2 * a + 1];
    } else {
      w.pad[2 * a] = w.pad[2 * a + 1] = paddings[a];
    }
  }
  if (algorithm == PaddingAlgorithm::kValid) std::fill(w.pad, w.pad + 4, 0);
  if (algorithm == PaddingAlgorithm::kSame) {
    for (int a = 0; a < 2; ++a) {
      w.dilation[a] = 1;
      if (w.in[a] < 0) {
        w.pad[2 * a] = w.pad[2 * a + 1] = 0;  // unknown until run time; the output size is unknown too
        continue;
      }
      int64_t out = (w.in[a] + w.stride[a] - 1) / w.stride[a];
      int64_t total = std::max<int64_t>((out - 1) * w.stride[a] + w.kernel[a] - w.in[a], 0);
      w.pad[2 * a] = total / 2;
      w.pad[2 * a + 1] = total - total / 2;
    }
  }
}

/// Output sizes from the resolved window; -1 for unknown inputs, -2 where the window does not fit.
inline void ComputeOutputSize(Window2d& w, bool ceil_mode) {
  for (int a = 0; a < 2; ++a)
    w.out[a] =
        WindowOutputSize(w.in[a], w.kernel[a], w.pad_before(a), w.pad_after(a), w.stride[a], w.dilation[a], ceil_mode);
}

inline const char* AxisName(int axis) { return axis == 0 ? "height" : "width"; }

}  // namespace paddlec::ops::nn
