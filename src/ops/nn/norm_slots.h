// batch_norm's and layer_norm's slots and attributes, shared by their shape functions and CPU
// kernels (norm.cc) and their CUDA kernels (norm_cuda.cc).
#pragma once

#include <string>

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::norm {

// ---- batch_norm ----------------------------------------------------------------------------------

inline constexpr InSlot kBnX{0, "X"};
inline constexpr InSlot kBnScale{1, "Scale"};
inline constexpr InSlot kBnBias{2, "Bias"};
inline constexpr InSlot kBnMean{3, "Mean"};
inline constexpr InSlot kBnVariance{4, "Variance"};
inline constexpr InSlot kBnMomentum{5, "MomentumTensor"};
inline constexpr OutSlot kBnY{0, "Y"};
inline constexpr OutSlot kBnMeanOut{1, "MeanOut"};
inline constexpr OutSlot kBnVarianceOut{2, "VarianceOut"};
inline constexpr OutSlot kBnSavedMean{3, "SavedMean"};
inline constexpr OutSlot kBnSavedVariance{4, "SavedVariance"};
inline constexpr OutSlot kBnReserveSpace{5, "ReserveSpace"};
// batch_norm_grad: (X, Scale, Bias, SavedMean, SavedVariance, Y@GRAD) -> (X@GRAD, Scale@GRAD, Bias@GRAD).
inline constexpr InSlot kBnGX{0, "X"};
inline constexpr InSlot kBnGScale{1, "Scale"};
inline constexpr InSlot kBnGBias{2, "Bias"};
inline constexpr InSlot kBnGSavedMean{3, "SavedMean"};
inline constexpr InSlot kBnGSavedVariance{4, "SavedVariance"};
inline constexpr InSlot kBnGDY{5, "Y@GRAD"};
// Inputs PaddlePaddle's batch_norm_grad also takes (its backward binds them); paddlec's kernels use
// the saved statistics only.
inline constexpr InSlot kBnGMean{6, "Mean"};
inline constexpr InSlot kBnGVariance{7, "Variance"};
inline constexpr InSlot kBnGReserveSpace{8, "ReserveSpace"};
inline constexpr InSlot kBnGMeanOut{9, "MeanOut"};
inline constexpr InSlot kBnGVarianceOut{10, "VarianceOut"};
inline constexpr OutSlot kBnGDX{0, "X@GRAD"};
inline constexpr OutSlot kBnGDScale{1, "Scale@GRAD"};
inline constexpr OutSlot kBnGDBias{2, "Bias@GRAD"};

struct BatchNormAttrs {
  float momentum, epsilon;
  bool channel_last;
  bool global_stats;  // normalize with the running statistics
  bool blocked;       // X and Y (and their gradients) in oneDNN's channel-blocked layout (layout pass)

  static BatchNormAttrs Decode(const AttrReader& a) {
    bool test_mode = a.Get<bool>("is_test") && !a.Get<bool>("trainable_statistics");
    return {a.Get<float>("momentum"), a.Get<float>("epsilon"), a.Get<std::string>("data_layout") == "NHWC",
            test_mode || a.Get<bool>("use_global_stats"), a.Has("blocked") && a.Get<bool>("blocked")};
  }
};

// ---- layer_norm ----------------------------------------------------------------------------------

inline constexpr InSlot kLnX{0, "X"};
inline constexpr InSlot kLnScale{1, "Scale"};
inline constexpr InSlot kLnBias{2, "Bias"};
inline constexpr OutSlot kLnY{0, "Y"};
inline constexpr OutSlot kLnMean{1, "Mean"};
inline constexpr OutSlot kLnVariance{2, "Variance"};
// layer_norm_grad: (X, Scale, Bias, Mean, Variance, Y@GRAD) -> (X@GRAD, Scale@GRAD, Bias@GRAD).
inline constexpr InSlot kLnGMean{3, "Mean"};
inline constexpr InSlot kLnGVariance{4, "Variance"};
inline constexpr InSlot kLnGDY{5, "Y@GRAD"};
inline constexpr OutSlot kLnGDX{0, "X@GRAD"};
inline constexpr OutSlot kLnGDScale{1, "Scale@GRAD"};
inline constexpr OutSlot kLnGDBias{2, "Bias@GRAD"};

struct LayerNormAttrs {
  float epsilon;
  int begin_norm_axis;
  static LayerNormAttrs Decode(const AttrReader& a) { return {a.Get<float>("epsilon"), a.Get<int>("begin_norm_axis")}; }
};

}  // namespace paddlec::ops::norm
