// The optimizer ops' slots and attributes, shared by their shape functions and CPU kernels
// (optimizer.cc) and their CUDA kernels (optimizer_cuda.cc), so that the devices bind the same slots
// and read the attributes the same way.
#pragma once

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::optimizer {

/// The slots every update op has.
struct ParamSlots {
  InSlot param, grad, lr, master;
  OutSlot param_out, master_out;
};

// ---- sgd -----------------------------------------------------------------------------------------

namespace sgd {
inline constexpr InSlot kParam{0, "Param"};
inline constexpr InSlot kLearningRate{1, "LearningRate"};
inline constexpr InSlot kGrad{2, "Grad"};
inline constexpr InSlot kMasterParam{3, "MasterParam"};
inline constexpr OutSlot kParamOut{0, "ParamOut"};
inline constexpr OutSlot kMasterParamOut{1, "MasterParamOut"};
inline constexpr ParamSlots kSlots{kParam, kGrad, kLearningRate, kMasterParam, kParamOut, kMasterParamOut};

struct Attrs {
  bool multi_precision;
  static Attrs Decode(const AttrReader& a) { return {a.Get<bool>("multi_precision")}; }
};
}  // namespace sgd

// ---- momentum ------------------------------------------------------------------------------------

namespace momentum {
inline constexpr InSlot kParam{0, "Param"};
inline constexpr InSlot kGrad{1, "Grad"};
inline constexpr InSlot kVelocity{2, "Velocity"};
inline constexpr InSlot kLearningRate{3, "LearningRate"};
inline constexpr InSlot kMasterParam{4, "MasterParam"};
inline constexpr OutSlot kParamOut{0, "ParamOut"};
inline constexpr OutSlot kVelocityOut{1, "VelocityOut"};
inline constexpr OutSlot kMasterParamOut{2, "MasterParamOut"};
inline constexpr ParamSlots kSlots{kParam, kGrad, kLearningRate, kMasterParam, kParamOut, kMasterParamOut};

struct Attrs {
  float mu;
  bool use_nesterov;
  bool l2_decay;
  float regularization_coeff;
  bool multi_precision;
  float rescale_grad;
  static Attrs Decode(const AttrReader& a) {
    return {a.Get<float>("mu"),
            a.Get<bool>("use_nesterov"),
            a.Get<std::string>("regularization_method") == "l2_decay",
            a.Get<float>("regularization_coeff"),
            a.Get<bool>("multi_precision"),
            a.Get<float>("rescale_grad")};
  }
};
}  // namespace momentum

// ---- adam ----------------------------------------------------------------------------------------

namespace adam {
inline constexpr InSlot kParam{0, "Param"};
inline constexpr InSlot kGrad{1, "Grad"};
inline constexpr InSlot kLearningRate{2, "LearningRate"};
inline constexpr InSlot kMoment1{3, "Moment1"};
inline constexpr InSlot kMoment2{4, "Moment2"};
inline constexpr InSlot kBeta1Pow{5, "Beta1Pow"};
inline constexpr InSlot kBeta2Pow{6, "Beta2Pow"};
inline constexpr InSlot kBeta1Tensor{7, "Beta1Tensor"};
inline constexpr InSlot kBeta2Tensor{8, "Beta2Tensor"};
inline constexpr InSlot kEpsilonTensor{9, "EpsilonTensor"};
inline constexpr InSlot kMasterParam{10, "MasterParam"};
inline constexpr InSlot kSkipUpdate{11, "SkipUpdate"};
inline constexpr InSlot kMoment2Max{12, "Moment2Max"};
inline constexpr OutSlot kParamOut{0, "ParamOut"};
inline constexpr OutSlot kMoment1Out{1, "Moment1Out"};
inline constexpr OutSlot kMoment2Out{2, "Moment2Out"};
inline constexpr OutSlot kBeta1PowOut{3, "Beta1PowOut"};
inline constexpr OutSlot kBeta2PowOut{4, "Beta2PowOut"};
inline constexpr OutSlot kMasterParamOut{5, "MasterParamOut"};
inline constexpr OutSlot kMoment2MaxOut{6, "Moment2MaxOut"};
inline constexpr ParamSlots kSlots{kParam, kGrad, kLearningRate, kMasterParam, kParamOut, kMasterParamOut};

struct Attrs {
  float beta1, beta2, epsilon;
  bool multi_precision;
  bool use_global_beta_pow;
  bool lazy_mode;
  static Attrs Decode(const AttrReader& a) {
    return {a.Get<float>("beta1"),        a.Get<float>("beta2"),
            a.Get<float>("epsilon"),      a.Get<bool>("multi_precision"),
            a.Get<bool>("use_global_beta_pow"), a.Get<bool>("lazy_mode")};
  }
};
}  // namespace adam

// ---- SelectedRows gradients (a sparse embedding's) -------------------------------------------------

/// A SelectedRows gradient's distinct rows, ascending, and the value rows that add into each:
/// value rows order[starts[u] .. starts[u + 1]) belong to rows[u]. Updates apply each distinct row
/// once (duplicate ids add first, as PaddlePaddle's MergeAdd does).
struct MergedRows {
  std::vector<int64_t> rows, starts, order;
};

inline MergedRows MergeRows(const std::vector<int64_t>& rows) {
  MergedRows m;
  m.order.resize(rows.size());
  std::iota(m.order.begin(), m.order.end(), int64_t{0});
  std::stable_sort(m.order.begin(), m.order.end(), [&](int64_t a, int64_t b) { return rows[a] < rows[b]; });
  for (size_t k = 0; k < m.order.size(); ++k)
    if (k == 0 || rows[m.order[k]] != rows[m.order[k - 1]]) {
      m.rows.push_back(rows[m.order[k]]);
      m.starts.push_back(static_cast<int64_t>(k));
    }
  m.starts.push_back(static_cast<int64_t>(m.order.size()));
  return m;
}

/// Checks a SelectedRows Grad against Param (height, row width, row range); empty when it fits.
inline Status CheckSparseGrad(const Tensor& grad, const Tensor& param, std::string_view op) {
  const Dims& p = param.dims();
  const int64_t width = p.rank() > 1 ? p.Product(1, p.rank()) : 1;
  const int64_t gwidth = grad.dims().rank() > 1 ? grad.dims().Product(1, grad.dims().rank()) : 1;
  if (p.rank() < 1 || grad.height() != p[0] || gwidth != width ||
      (grad.dims().rank() > 0 && grad.dims()[0] != static_cast<int64_t>(grad.rows().size())))
    return MakeError(ErrorCode::kRuntime,
                     "{}: the sparse Grad ({} rows of a {}-row table, values {}) does not fit Param {}", op,
                     grad.rows().size(), grad.height(), grad.dims().ToString(), p.ToString());
  for (int64_t r : grad.rows())
    if (r < 0 || r >= p[0])
      return MakeError(ErrorCode::kRuntime, "{}: the sparse Grad names row {} of Param {}", op, r, p.ToString());
  return Status::OK();
}

/// A dense Grad must hold Param's elements (the shape function lets a sparse one differ in rows).
inline Status CheckDenseGrad(const Tensor& grad, const Tensor& param, std::string_view op) {
  if (grad.numel() == param.numel()) return Status::OK();
  return MakeError(ErrorCode::kRuntime, "{}: Param has shape {} but Grad has shape {}: they must be equal", op,
                   param.dims().ToString(), grad.dims().ToString());
}

}  // namespace paddlec::ops::optimizer
