// The rnn op's slots, decoded attributes and geometry (PaddlePaddle's multi-layer, optionally
// bidirectional LSTM / GRU / simple RNN), shared by its shape function and CPU kernels (rnn.cc) and its
// cuDNN kernels (rnn_cuda.cc).
//
// Layout, as PaddlePaddle writes it: Input [T, N, I] (time-major); PreState and State hold [L * D, N, H]
// tensors (h, then c for LSTM) where cell k = layer * D + direction; WeightList holds the weights of
// every cell (W_ih [G * H, I_layer], W_hh [G * H, H]) in cell order, then their biases (b_ih, b_hh
// [G * H]) in the same order. Gates are stacked in PaddlePaddle's (and cuDNN's) order: LSTM i, f, g, o;
// GRU r, z, c (with the reset gate applied to W_hh h + b_hh); simple RNN one.
#pragma once

#include <string>
#include <vector>

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::rnn {

inline constexpr InSlot kInput{0, "Input"};
inline constexpr InSlot kPreState{1, "PreState"};
inline constexpr InSlot kWeightList{2, "WeightList"};
inline constexpr InSlot kSequenceLength{3, "SequenceLength"};
inline constexpr OutSlot kOut{0, "Out"};
inline constexpr OutSlot kDropoutState{1, "DropoutState"};
inline constexpr OutSlot kState{2, "State"};
inline constexpr OutSlot kReserve{3, "Reserve"};
// rnn_grad: (Input, PreState, WeightList, SequenceLength, Out, DropoutState, Reserve, Out@GRAD,
// State@GRAD) -> (Input@GRAD, PreState@GRAD, WeightList@GRAD).
inline constexpr InSlot kGOut{4, "Out"};
inline constexpr InSlot kGDropoutState{5, "DropoutState"};
inline constexpr InSlot kGReserve{6, "Reserve"};
inline constexpr InSlot kGDOut{7, "Out@GRAD"};
inline constexpr InSlot kGDState{8, "State@GRAD"};
inline constexpr OutSlot kGDInput{0, "Input@GRAD"};
inline constexpr OutSlot kGDPreState{1, "PreState@GRAD"};
inline constexpr OutSlot kGDWeightList{2, "WeightList@GRAD"};

enum class RnnMode { kLstm, kGru, kTanh, kRelu };

struct RnnAttrs {
  RnnMode mode = RnnMode::kTanh;
  std::string mode_name;
  int num_layers = 1, hidden_size = 100, input_size = 10;
  bool bidirectional = false;
  float dropout_prob = 0;
  bool is_test = false;
  int seed = 0;

  static RnnAttrs Decode(const AttrReader& a) {
    RnnAttrs r;
    r.mode_name = a.Get<std::string>("mode");
    r.mode = r.mode_name == "LSTM"       ? RnnMode::kLstm
             : r.mode_name == "GRU"      ? RnnMode::kGru
             : r.mode_name == "RNN_RELU" ? RnnMode::kRelu
                                         : RnnMode::kTanh;
    r.num_layers = a.Get<int>("num_layers");
    r.hidden_size = a.Get<int>("hidden_size");
    r.input_size = a.Get<int>("input_size");
    r.bidirectional = a.Get<bool>("is_bidirec");
    r.dropout_prob = a.Get<float>("dropout_prob");
    r.is_test = a.Get<bool>("is_test");
    r.seed = a.Get<int>("seed");
    return r;
  }
  /// Gates per cell: 4 (LSTM), 3 (GRU), 1.
  int gates() const { return mode == RnnMode::kLstm ? 4 : mode == RnnMode::kGru ? 3 : 1; }
  /// State tensors: h and c (LSTM), h.
  int states() const { return mode == RnnMode::kLstm ? 2 : 1; }
  int directions() const { return bidirectional ? 2 : 1; }
  /// Dropout runs between layers in training only.
  bool dropout() const { return !is_test && dropout_prob > 0 && num_layers > 1; }
};

/// The sizes of one rnn op instance. -1 marks sizes unknown at compile time.
struct RnnGeometry {
  int64_t t = -1, n = -1, i = -1, h = 0;
  int layers = 1, dirs = 1, gates = 1;

  int cells() const { return layers * dirs; }
  int64_t layer_input(int layer) const { return layer == 0 ? i : dirs * h; }
  /// WeightList positions of cell k's tensors.
  static int WIh(int k) { return 2 * k; }
  static int WHh(int k) { return 2 * k + 1; }
  int BIh(int k) const { return 2 * cells() + 2 * k; }
  int BHh(int k) const { return 2 * cells() + 2 * k + 1; }
};

/// Checks the shapes of the inputs against the attributes and computes the geometry; `seq_len` is
/// null when SequenceLength is unbound. rnn.cc.
Status RnnGeometryOf(const Dims& input, const std::vector<Dims>& pre_state, const std::vector<Dims>& weights,
                     const Dims* seq_len, const RnnAttrs& a, RnnGeometry& g);

}  // namespace paddlec::ops::rnn
