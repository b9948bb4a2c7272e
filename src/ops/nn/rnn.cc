// rnn and rnn_grad on the CPU: PaddlePaddle's multi-layer, optionally bidirectional LSTM, GRU and simple
// RNN (tanh / relu) over time-major batches, with optional per-sequence lengths (rnn_slots.h has the
// layout).
//
// Per layer and direction, the input projection of every time step is one GEMM ([T * N, I] x [I, G * H],
// both biases folded in), and each step adds its recurrent term as one GEMM over the whole batch
// ([N, H] x [H, G * H], accumulated into that step's gates) before the element-wise gate math. A
// sequence shorter than T stops at its length: its state is carried through the later steps and its
// outputs there are zeros (PaddlePaddle's masking; the reverse direction thus starts at the sequence's
// last element). The backward pass runs the steps in reverse with one GEMM per step for the
// recurrent gradient, then one GEMM each for the weight gradients and the input gradient.
//
// Reserve keeps what the backward pass reads (CpuReserve): per cell the activated gates, the states after
// every step (and the cells, for LSTM; W_hc h + b_hc, for GRU), and every layer's output but the last.
// DropoutState keeps the dropout masks between layers (training with dropout_prob > 0), drawn from a
// Philox stream like dropout's; they scale kept values by 1 / (1 - dropout_prob).
#include <dnnl.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/cpu_kernels.h"
#include "common/host_values.h"
#include "common/philox.h"
#include "nn/nn.h"
#include "nn/rnn_slots.h"

namespace paddlec::ops {

namespace rnn {

Status RnnGeometryOf(const Dims& input, const std::vector<Dims>& pre_state, const std::vector<Dims>& weights,
                     const Dims* seq_len, const RnnAttrs& a, RnnGeometry& g) {
  if (input.rank() != 3)
    return MakeError(ErrorCode::kShape, "Input has shape {} (rank {}) but rnn needs [time, batch, input_size]",
                     input.ToString(), input.rank());
  g.t = input[0];
  g.n = input[1];
  g.i = input[2];
  g.h = a.hidden_size;
  g.layers = a.num_layers;
  g.dirs = a.directions();
  g.gates = a.gates();
  if (g.i >= 0 && g.i != a.input_size)
    return MakeError(ErrorCode::kShape, "Input has shape {} but attribute 'input_size' is {}", input.ToString(),
                     a.input_size);
  if (static_cast<int>(pre_state.size()) != a.states())
    return MakeError(ErrorCode::kShape, "PreState has {} tensors but mode {} needs {}", pre_state.size(), a.mode_name,
                     a.states() == 2 ? "2 (h and c)" : "1 (h)");
  const Dims state{g.cells(), g.n, g.h};
  for (size_t s = 0; s < pre_state.size(); ++s)
    if (!DimsMatch(pre_state[s], state))
      return MakeError(ErrorCode::kShape,
                       "PreState {} has shape {} but {} layers x {} directions, batch {} and hidden_size {} need {}", s,
                       pre_state[s].ToString(), g.layers, g.dirs, g.n, g.h, state.ToString());
  const int cells = g.cells();
  if (static_cast<int>(weights.size()) != 4 * cells)
    return MakeError(ErrorCode::kShape,
                     "WeightList has {} tensors but {} layers x {} directions need {} (W_ih and W_hh of every cell, "
                     "then b_ih and b_hh of every cell)",
                     weights.size(), g.layers, g.dirs, 4 * cells);
  const int64_t gh = g.gates * g.h;
  for (int k = 0; k < cells; ++k) {
    const int layer = k / g.dirs;
    const std::pair<int, Dims> expected[] = {{RnnGeometry::WIh(k), Dims{gh, g.layer_input(layer)}},
                                             {RnnGeometry::WHh(k), Dims{gh, g.h}},
                                             {g.BIh(k), Dims{gh}},
                                             {g.BHh(k), Dims{gh}}};
    for (const auto& [pos, dims] : expected)
      if (!DimsMatch(weights[pos], dims))
        return MakeError(ErrorCode::kShape,
                         "WeightList {} (layer {}, direction {}) has shape {} but mode {} with hidden_size {} needs {}",
                         pos, layer, k % g.dirs, weights[pos].ToString(), a.mode_name, g.h, dims.ToString());
  }
  if (seq_len != nullptr && (seq_len->rank() != 1 || !DimMatch((*seq_len)[0], g.n)))
    return MakeError(ErrorCode::kShape, "SequenceLength has shape {} but Input {} has a batch of {}",
                     seq_len->ToString(), input.ToString(), g.n);
  return Status::OK();
}

}  // namespace rnn

namespace {

using namespace rnn;  // NOLINT: the op's shared slots and attributes

// ---- Shapes ------------------------------------------------------------------------------------

std::vector<Dims> SlotDims(const InferShapeContext& ctx, InSlot s) {
  std::vector<Dims> out;
  for (int i = 0; i < ctx.NumInputs(s); ++i) out.push_back(ctx.InputDims(s, i));
  return out;
}

Status InferRnn(InferShapeContext& ctx) {
  RnnAttrs a = RnnAttrs::Decode(ctx.attrs());
  RnnGeometry g;
  Dims seq = ctx.HasInput(kSequenceLength) ? ctx.InputDims(kSequenceLength) : Dims();
  PC_RETURN_IF_ERROR(RnnGeometryOf(ctx.InputDims(kInput), SlotDims(ctx, kPreState), SlotDims(ctx, kWeightList),
                                   ctx.HasInput(kSequenceLength) ? &seq : nullptr, a, g));
  if (ctx.NumOutputs(kState) != a.states())
    return ctx.Fail("State has {} tensors but mode {} needs {}", ctx.NumOutputs(kState), a.mode_name, a.states());
  const DType dt = ctx.InputDType(kInput);
  ctx.SetOutput(kOut, Dims{g.t, g.n, g.dirs * g.h}, dt);
  for (int s = 0; s < a.states(); ++s) ctx.SetOutput(kState, s, Dims{g.cells(), g.n, g.h}, dt);
  // Sized by the kernel: what the backward pass needs depends on the device.
  ctx.SetOutput(kReserve, Dims{kUnknownDim}, dt);
  ctx.SetOutput(kDropoutState, Dims{kUnknownDim}, DType::kUInt8);
  return Status::OK();
}

Status InferRnnGrad(InferShapeContext& ctx) {
  for (int i = 0; i < ctx.NumInputs(kPreState); ++i) ctx.ShareDims(kPreState, kGDPreState, i);
  for (int i = 0; i < ctx.NumInputs(kWeightList); ++i) ctx.ShareDims(kWeightList, kGDWeightList, i);
  ctx.ShareDims(kInput, kGDInput);
  return Status::OK();
}

// ---- Arithmetic --------------------------------------------------------------------------------

/// C = op(A) op(B) + beta C over row-major matrices with leading dimensions (C is m x n).
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
          float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j) c[r * ldc + j] *= beta;
    return;
  }
  dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb,
          double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using In = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;
  Eigen::Map<Mat, 0, Eigen::OuterStride<>> cm(c, m, n, Eigen::OuterStride<>(ldc));
  In am(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  In bm(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  if (beta == 0)
    cm.setZero();
  else
    cm *= beta;
  if (k == 0) return;
  if (ta && tb)
    cm.noalias() += am.transpose() * bm.transpose();
  else if (ta)
    cm.noalias() += am.transpose() * bm;
  else if (tb)
    cm.noalias() += am * bm.transpose();
  else
    cm.noalias() += am * bm;
}

// Row views for the element-wise gate math (Eigen vectorizes logistic and tanh).
template <class T>
using VecOf = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstVecOf = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

/// Rows of the batch per task in the element-wise gate loops: about 16K values each.
int64_t RowGrain(int64_t width) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1)); }

// ---- Reserve layout ----------------------------------------------------------------------------

/// Offsets (in elements of T) of what the forward pass keeps for the backward pass.
struct CpuReserve {
  int64_t cell_size = 0, gates = 0, states = 0, cells = 0, hc = 0;  // within one cell's block
  int64_t layer_outputs = 0;                                        // after every cell's block
  int64_t total = 0;

  explicit CpuReserve(const RnnGeometry& g, RnnMode mode) {
    const int64_t tn = g.t * g.n;
    gates = 0;
    states = tn * g.gates * g.h;
    cells = states + tn * g.h;
    hc = cells + (mode == RnnMode::kLstm ? tn * g.h : 0);
    cell_size = hc + (mode == RnnMode::kGru ? tn * g.h : 0);
    layer_outputs = cell_size * g.cells();
    total = layer_outputs + (g.layers - 1) * tn * g.dirs * g.h;
  }
  int64_t cell(int k) const { return k * cell_size; }
  int64_t layer_output(const RnnGeometry& g, int layer) const {
    return layer_outputs + layer * g.t * g.n * g.dirs * g.h;
  }
};

/// Sequence lengths (T for every sequence when SequenceLength is unbound), checked against T.
StatusOr<std::vector<int64_t>> SequenceLengths(const KernelContext& ctx, const RnnGeometry& g) {
  if (const Tensor* t = ctx.InOpt(kSequenceLength)) {
    PC_ASSIGN_OR_RETURN(std::vector<int64_t> len, HostValues<int64_t>(*t, "SequenceLength"));
    for (size_t n = 0; n < len.size(); ++n)
      if (len[n] < 0 || len[n] > g.t)
        return MakeError(ErrorCode::kInvalidArgument,
                         "SequenceLength {} is {} but must be in [0, {}] (Input's time steps)", n, len[n], g.t);
    return len;
  }
  return std::vector<int64_t>(static_cast<size_t>(g.n), g.t);
}

StatusOr<RnnGeometry> RunGeometry(const KernelContext& ctx, const RnnAttrs& a) {
  auto dims = [&](InSlot s) {
    std::vector<Dims> out;
    for (int i = 0; i < ctx.NumIn(s); ++i) out.push_back(ctx.In(s, i).dims());
    return out;
  };
  RnnGeometry g;
  const Tensor* seq = ctx.InOpt(kSequenceLength);
  PC_RETURN_IF_ERROR(
      RnnGeometryOf(ctx.In(kInput).dims(), dims(kPreState), dims(kWeightList), seq ? &seq->dims() : nullptr, a, g));
  return g;
}

/// The time step processed `s`-th by direction d, and whether it is the first.
int64_t StepTime(const RnnGeometry& g, int d, int64_t s) { return d == 0 ? s : g.t - 1 - s; }

// ---- Forward -----------------------------------------------------------------------------------

template <class T>
class RnnKernel final : public OpKernel {
  using Vec = VecOf<T>;
  using ConstVec = ConstVecOf<T>;

 public:
  explicit RnnKernel(const KernelInit& init)
      : attrs_(RnnAttrs::Decode(init.attrs)),
        philox_(attrs_.seed != 0 ? static_cast<uint64_t>(static_cast<int64_t>(attrs_.seed)) : init.seed),
        step_(init.start_step) {}

  Status Run(KernelContext& ctx) override {
    PC_ASSIGN_OR_RETURN(RnnGeometry g, RunGeometry(ctx, attrs_));
    PC_ASSIGN_OR_RETURN(std::vector<int64_t> len, SequenceLengths(ctx, g));
    const DType dt = ctx.In(kInput).dtype();
    const CpuReserve rs(g, attrs_.mode);
    PC_RETURN_IF_ERROR(ctx.ResizeOut(kOut, Dims{g.t, g.n, g.dirs * g.h}, dt));
    for (int s = 0; s < attrs_.states(); ++s)
      PC_RETURN_IF_ERROR(ctx.ResizeOut(kState, Dims{g.cells(), g.n, g.h}, dt, s));
    PC_RETURN_IF_ERROR(ctx.ResizeOut(kReserve, Dims{rs.total}, dt));
    const int64_t layer_values = g.t * g.n * g.dirs * g.h;
    const bool dropout = attrs_.dropout();
    if (ctx.OutOpt(kDropoutState) != nullptr)
      PC_RETURN_IF_ERROR(
          ctx.ResizeOut(kDropoutState, Dims{dropout ? (g.layers - 1) * layer_values : 0}, DType::kUInt8));
    T* reserve = ctx.Out(kReserve).data<T>();
    T* out = ctx.Out(kOut).data<T>();
    if (g.t == 0 || g.n == 0) {
      for (int s = 0; s < attrs_.states(); ++s) CopyState(ctx, s, g);
      return Status::OK();
    }
    const uint64_t step = dropout ? step_++ : 0;
    for (int layer = 0; layer < g.layers; ++layer) {
      const T* in = layer == 0 ? ctx.In(kInput).data<T>() : reserve + rs.layer_output(g, layer - 1);
      T* y = layer == g.layers - 1 ? out : reserve + rs.layer_output(g, layer);
      for (int d = 0; d < g.dirs; ++d) RunCell(ctx, g, rs, len, layer * g.dirs + d, in, y, reserve);
      if (layer < g.layers - 1 && dropout) {
        uint8_t* mask = ctx.Out(kDropoutState).data<uint8_t>() + layer * layer_values;
        Dropout(y, mask, layer_values, step, static_cast<uint64_t>(layer) * static_cast<uint64_t>(layer_values));
      }
    }
    return Status::OK();
  }

 private:
  /// State s without any step to run: PreState unchanged.
  void CopyState(KernelContext& ctx, int s, const RnnGeometry& g) {
    const Tensor& src = ctx.In(kPreState, s);
    if (src.nbytes() > 0) std::memcpy(ctx.Out(kState, s).raw_data(), src.raw_data(), src.nbytes());
  }

  /// One layer and direction: input projection, then the steps in the direction's order.
  void RunCell(KernelContext& ctx, const RnnGeometry& g, const CpuReserve& rs, const std::vector<int64_t>& len, int k,
               const T* in, T* y, T* reserve) {
    const int d = k % g.dirs, layer = k / g.dirs;
    const int64_t H = g.h, G = g.gates, GH = G * H, N = g.n, T_ = g.t, I = g.layer_input(layer), DH = g.dirs * H;
    const T* w_ih = ctx.In(kWeightList, RnnGeometry::WIh(k)).template data<T>();
    const T* w_hh = ctx.In(kWeightList, RnnGeometry::WHh(k)).template data<T>();
    const T* b_ih = ctx.In(kWeightList, g.BIh(k)).template data<T>();
    const T* b_hh = ctx.In(kWeightList, g.BHh(k)).template data<T>();
    T* gates = reserve + rs.cell(k) + rs.gates;
    T* states = reserve + rs.cell(k) + rs.states;
    T* cells = reserve + rs.cell(k) + rs.cells;
    T* hcs = reserve + rs.cell(k) + rs.hc;
    const bool lstm = attrs_.mode == RnnMode::kLstm, gru = attrs_.mode == RnnMode::kGru;

    // Every step's input projection in one GEMM, with b_ih and b_hh (GRU: b_hh of r and z only, its
    // candidate's b_hh is added inside the reset gate's product).
    Gemm(false, true, T_ * N, GH, I, in, I, w_ih, I, T(0), gates, GH);
    bias_.resize(GH);
    for (int64_t j = 0; j < GH; ++j) bias_[j] = b_ih[j] + (gru && j >= 2 * H ? T(0) : b_hh[j]);
    ParallelFor(T_ * N, RowGrain(GH), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        for (int64_t j = 0; j < GH; ++j) gates[r * GH + j] += bias_[j];
    });
    if (gru) hh_.resize(N * GH);

    const T* h0 = ctx.In(kPreState, 0).template data<T>() + k * N * H;
    const T* c0 = lstm ? ctx.In(kPreState, 1).template data<T>() + k * N * H : nullptr;
    T* h_final = ctx.Out(kState, 0).template data<T>() + k * N * H;
    T* c_final = lstm ? ctx.Out(kState, 1).template data<T>() + k * N * H : nullptr;
    const T* h_prev = h0;
    const T* c_prev = c0;
    for (int64_t s = 0; s < T_; ++s) {
      const int64_t t = StepTime(g, d, s);
      T* gt = gates + t * N * GH;
      T* ht = states + t * N * H;
      T* ct = cells + t * N * H;
      T* hct = hcs + t * N * H;
      T* yt = y + t * N * DH + d * H;
      // The recurrent term over the whole batch: added to the gates, or (GRU) kept apart for the reset gate.
      if (gru)
        Gemm(false, true, N, GH, H, h_prev, H, w_hh, H, T(0), hh_.data(), GH);
      else
        Gemm(false, true, N, GH, H, h_prev, H, w_hh, H, T(1), gt, GH);
      ParallelFor(N, RowGrain(GH), [&](int64_t b, int64_t e) {
        for (int64_t n = b; n < e; ++n) {
          T* gr = gt + n * GH;
          const T* hp = h_prev + n * H;
          T* hn = ht + n * H;
          if (t >= len[n]) {  // past the sequence: the state carries over, the output is zero
            std::fill(gr, gr + GH, T(0));
            std::copy(hp, hp + H, hn);
            if (lstm) std::copy(c_prev + n * H, c_prev + (n + 1) * H, ct + n * H);
            if (gru) std::fill(hct + n * H, hct + (n + 1) * H, T(0));
            std::fill(yt + n * DH, yt + n * DH + H, T(0));
            continue;
          }
          Vec g(gr, GH);
          if (lstm) {  // i, f, c~, o
            g.head(2 * H) = g.head(2 * H).logistic();
            g.segment(2 * H, H) = g.segment(2 * H, H).tanh();
            g.tail(H) = g.tail(H).logistic();
            Vec c(ct + n * H, H);
            c = g.segment(H, H) * ConstVec(c_prev + n * H, H) + g.head(H) * g.segment(2 * H, H);
            Vec(hn, H) = g.tail(H) * c.tanh();
          } else if (gru) {  // r, z, c~ = tanh(x_c + r (W_hc h + b_hc)); h' = (h - c~) z + c~
            ConstVec hr(hh_.data() + n * GH, GH);
            g.head(2 * H) = (g.head(2 * H) + hr.head(2 * H)).logistic();
            Vec hc(hct + n * H, H);
            hc = hr.tail(H) + ConstVec(b_hh + 2 * H, H);
            g.tail(H) = (g.tail(H) + g.head(H) * hc).tanh();
            Vec(hn, H) = (ConstVec(hp, H) - g.tail(H)) * g.segment(H, H) + g.tail(H);
          } else {
            if (attrs_.mode == RnnMode::kTanh)
              g = g.tanh();
            else
              g = g.max(T(0));
            std::copy(gr, gr + H, hn);
          }
          std::copy(hn, hn + H, yt + n * DH);
        }
      });
      h_prev = ht;
      c_prev = ct;
    }
    std::memcpy(h_final, h_prev, sizeof(T) * N * H);
    if (lstm) std::memcpy(c_final, c_prev, sizeof(T) * N * H);
  }

  /// In place: y = keep ? y / (1 - p) : 0, keep drawn per element from the Philox stream.
  void Dropout(T* y, uint8_t* mask, int64_t n, uint64_t step, uint64_t offset) {
    const float p = attrs_.dropout_prob;
    const T scale = p >= 1.0f ? T(0) : T(1) / (T(1) - static_cast<T>(p));
    ParallelChunks(n, [&](int64_t b, int64_t count) {
      for (int64_t i = b; i < b + count; ++i) {
        const bool keep = philox_.UniformFloat(step, offset + static_cast<uint64_t>(i)) >= p;
        mask[i] = keep;
        y[i] = keep ? y[i] * scale : T(0);
      }
    });
  }

  RnnAttrs attrs_;
  Philox philox_;
  uint64_t step_;             // draw number of the next dropout masks (training runs so far)
  std::vector<T> bias_, hh_;  // per-cell scratch: combined biases; GRU's recurrent products of a step
};

// ---- Backward ----------------------------------------------------------------------------------

template <class T>
class RnnGradKernel final : public OpKernel {
  using Vec = VecOf<T>;
  using ConstVec = ConstVecOf<T>;

 public:
  explicit RnnGradKernel(const KernelInit& init) : attrs_(RnnAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    PC_ASSIGN_OR_RETURN(RnnGeometry g, RunGeometry(ctx, attrs_));
    PC_ASSIGN_OR_RETURN(std::vector<int64_t> len, SequenceLengths(ctx, g));
    const CpuReserve rs(g, attrs_.mode);
    const Tensor& reserve_t = ctx.In(kGReserve);
    if (reserve_t.numel() != rs.total || reserve_t.dtype() != ctx.In(kInput).dtype())
      return MakeError(ErrorCode::kInvalidArgument,
                       "Reserve holds {} {} values but the CPU rnn kernel's forward pass keeps {}: rnn_grad must read "
                       "the Reserve of the rnn op it differentiates, run on the same device",
                       reserve_t.numel(), DTypeName(reserve_t.dtype()), rs.total);
    const T* reserve = reserve_t.data<T>();
    const int64_t H = g.h, TN = g.t * g.n, DH = g.dirs * H, layer_values = TN * DH;
    const T zero = T(0);
    // Gradients arriving at the outputs; absent ones are zeros.
    const Tensor* dout = ctx.InOpt(kGDOut);
    dy_.assign(static_cast<size_t>(layer_values), zero);
    if (dout != nullptr && dout->numel() == layer_values)
      std::memcpy(dy_.data(), dout->data<T>(), sizeof(T) * layer_values);
    const bool dropout = attrs_.dropout();
    const uint8_t* masks = dropout ? ctx.In(kGDropoutState).data<uint8_t>() : nullptr;
    const T scale = attrs_.dropout_prob >= 1.0f ? T(0) : T(1) / (T(1) - static_cast<T>(attrs_.dropout_prob));

    for (int layer = g.layers - 1; layer >= 0; --layer) {
      const int64_t I = g.layer_input(layer);
      const T* in = layer == 0 ? ctx.In(kInput).data<T>() : reserve + rs.layer_output(g, layer - 1);
      // The gradient of this layer's input, summed over both directions.
      T* din = nullptr;
      if (layer > 0) {
        din_.assign(static_cast<size_t>(TN * I), zero);
        din = din_.data();
      } else if (Tensor* dx = ctx.OutOpt(kGDInput)) {
        din = dx->data<T>();
      }
      for (int d = 0; d < g.dirs; ++d) BackCell(ctx, g, rs, len, layer * g.dirs + d, in, reserve, din, d == 0);
      if (layer > 0) {
        // Through the dropout between the layers, into the previous layer's output gradient.
        const uint8_t* mask = masks ? masks + (layer - 1) * layer_values : nullptr;
        for (int64_t i = 0; i < layer_values; ++i) dy_[i] = mask ? (mask[i] ? din_[i] * scale : zero) : din_[i];
      }
    }
    return Status::OK();
  }

 private:
  /// The gradients of one layer and direction, from dy_ (this layer's output gradient) and the State
  /// gradients: PreState@GRAD and WeightList@GRAD of the cell, and `din` (+)= the input gradient.
  void BackCell(KernelContext& ctx, const RnnGeometry& g, const CpuReserve& rs, const std::vector<int64_t>& len, int k,
                const T* in, const T* reserve, T* din, bool first_direction) {
    const int d = k % g.dirs, layer = k / g.dirs;
    const int64_t H = g.h, GH = g.gates * H, N = g.n, T_ = g.t, TN = T_ * N, I = g.layer_input(layer), DH = g.dirs * H;
    const bool lstm = attrs_.mode == RnnMode::kLstm, gru = attrs_.mode == RnnMode::kGru;
    const T* w_ih = ctx.In(kWeightList, RnnGeometry::WIh(k)).template data<T>();
    const T* w_hh = ctx.In(kWeightList, RnnGeometry::WHh(k)).template data<T>();
    const T* gates = reserve + rs.cell(k) + rs.gates;
    const T* states = reserve + rs.cell(k) + rs.states;
    const T* cells = reserve + rs.cell(k) + rs.cells;
    const T* hcs = reserve + rs.cell(k) + rs.hc;
    const T* h0 = ctx.In(kPreState, 0).template data<T>() + k * N * H;
    const T* c0 = lstm ? ctx.In(kPreState, 1).template data<T>() + k * N * H : nullptr;

    // dh, dc: the gradient of the state after the step being undone (State@GRAD at the end).
    dh_.assign(static_cast<size_t>(N * H), T(0));
    dc_.assign(static_cast<size_t>(N * H), T(0));
    for (int s = 0; s < attrs_.states(); ++s) {
      const Tensor* ds = ctx.InOpt(kGDState, s);
      if (ds != nullptr && ds->numel() == g.cells() * N * H)
        std::memcpy((s == 0 ? dh_ : dc_).data(), ds->data<T>() + k * N * H, sizeof(T) * N * H);
    }
    dxg_.resize(TN * GH);
    if (gru) dhg_.resize(TN * GH);
    T* dxg = dxg_.data();
    T* dhg = gru ? dhg_.data() : dxg;  // the recurrent gates' gradient (GRU's differs in the candidate)
    hprev_.resize(TN * H);
    dh_next_.resize(N * H);
    dc_next_.resize(N * H);

    for (int64_t s = T_ - 1; s >= 0; --s) {
      const int64_t t = StepTime(g, d, s);
      const T* h_prev = s == 0 ? h0 : states + StepTime(g, d, s - 1) * N * H;
      const T* c_prev = lstm ? (s == 0 ? c0 : cells + StepTime(g, d, s - 1) * N * H) : nullptr;
      std::memcpy(hprev_.data() + t * N * H, h_prev, sizeof(T) * N * H);
      const T* gt = gates + t * N * GH;
      const T* ct = cells + t * N * H;
      const T* hct = hcs + t * N * H;
      const T* dyt = dy_.data() + t * N * DH + d * H;
      T* dxt = dxg + t * N * GH;
      T* dht = dhg + t * N * GH;
      ParallelFor(N, RowGrain(GH), [&](int64_t b, int64_t e) {
        for (int64_t n = b; n < e; ++n) {
          const int64_t q = n * H;
          T* dx = dxt + n * GH;
          T* dhr = dht + n * GH;
          if (t >= len[n]) {  // past the sequence: the state's gradient passes through unchanged
            std::fill(dx, dx + GH, T(0));
            if (gru) std::fill(dhr, dhr + GH, T(0));
            std::copy(dh_.data() + q, dh_.data() + q + H, dh_next_.data() + q);
            if (lstm) std::copy(dc_.data() + q, dc_.data() + q + H, dc_next_.data() + q);
            continue;
          }
          const T* gr = gt + n * GH;
          // The step's new state is both the state and the output: both gradients arrive.
          auto dhn = ConstVec(dh_.data() + q, H) + ConstVec(dyt + n * DH, H);
          Vec dh_prev(dh_next_.data() + q, H);
          if (lstm) {
            ConstVec i(gr, H), f(gr + H, H), c(gr + 2 * H, H), o(gr + 3 * H, H);
            auto tc = ConstVec(ct + q, H).tanh();
            // dc' first lands in dc_next_, which then becomes the previous cell's gradient.
            Vec dcn(dc_next_.data() + q, H);
            dcn = ConstVec(dc_.data() + q, H) + dhn * o * (T(1) - tc * tc);
            Vec(dx, H) = dcn * c * i * (T(1) - i);
            Vec(dx + H, H) = dcn * ConstVec(c_prev + q, H) * f * (T(1) - f);
            Vec(dx + 2 * H, H) = dcn * i * (T(1) - c * c);
            Vec(dx + 3 * H, H) = dhn * tc * o * (T(1) - o);
            dcn *= f;
            dh_prev.setZero();
          } else if (gru) {
            ConstVec r(gr, H), z(gr + H, H), c(gr + 2 * H, H), hc(hct + q, H);
            Vec dzz(dx + H, H), dzc(dx + 2 * H, H), dzr(dx, H);
            dzz = dhn * (ConstVec(h_prev + q, H) - c) * z * (T(1) - z);
            dzc = dhn * (T(1) - z) * (T(1) - c * c);
            dzr = dzc * hc * r * (T(1) - r);
            Vec(dhr, 2 * H) = Vec(dx, 2 * H);
            Vec(dhr + 2 * H, H) = dzc * r;
            dh_prev = dhn * z;
          } else {
            ConstVec hn(gr, H);
            if (attrs_.mode == RnnMode::kTanh)
              Vec(dx, H) = dhn * (T(1) - hn * hn);
            else
              Vec(dx, H) = dhn * (hn > T(0)).template cast<T>();
            dh_prev.setZero();
          }
        }
      });
      // The previous state's gradient through the recurrent weights, over the whole batch.
      Gemm(false, false, N, H, GH, dht, GH, w_hh, H, T(1), dh_next_.data(), H);
      std::swap(dh_, dh_next_);
      if (lstm) std::swap(dc_, dc_next_);
    }
    if (Tensor* dp = ctx.OutOpt(kGDPreState, 0)) std::memcpy(dp->data<T>() + k * N * H, dh_.data(), sizeof(T) * N * H);
    if (lstm)
      if (Tensor* dp = ctx.OutOpt(kGDPreState, 1))
        std::memcpy(dp->data<T>() + k * N * H, dc_.data(), sizeof(T) * N * H);

    // Weight and bias gradients over all steps at once; masked steps contribute zeros.
    auto out = [&](int pos) -> T* {
      Tensor* t = ctx.OutOpt(kGDWeightList, pos);
      return t ? t->data<T>() : nullptr;
    };
    if (T* dw = out(RnnGeometry::WIh(k))) Gemm(true, false, GH, I, TN, dxg, GH, in, I, T(0), dw, I);
    if (T* dw = out(RnnGeometry::WHh(k))) Gemm(true, false, GH, H, TN, dhg, GH, hprev_.data(), H, T(0), dw, H);
    for (auto [pos, grad] :
         {std::pair{g.BIh(k), static_cast<const T*>(dxg)}, std::pair{g.BHh(k), static_cast<const T*>(dhg)}})
      if (T* db = out(pos)) {
        std::fill(db, db + GH, T(0));
        for (int64_t r = 0; r < TN; ++r)
          for (int64_t j = 0; j < GH; ++j) db[j] += grad[r * GH + j];
      }
    if (din != nullptr) Gemm(false, false, TN, I, GH, dxg, GH, w_ih, I, first_direction ? T(0) : T(1), din, I);
  }

  RnnAttrs attrs_;
  // Scratch, sized once per shape: the layer's output and input gradients, the cell's gate gradients
  // (input side; GRU's recurrent side), the states before every step, and the state gradients.
  std::vector<T> dy_, din_, dxg_, dhg_, hprev_, dh_, dc_, dh_next_, dc_next_;
};

}  // namespace

void RegisterRnnOps(OpRegistry& r) {
  r.Add("rnn")
      .Doc(
          "A stack of recurrent layers over a time-major batch, PaddlePaddle's rnn op: LSTM (i, f, g, o gates; "
          "c' = f c + i g, h' = o tanh(c')), GRU (r, z, c gates; c = tanh(W_ic x + b_ic + r (W_hc h + b_hc)), h' = "
          "(h - c) z + c) or a simple RNN (h' = tanh or relu of W_ih x + b_ih + W_hh h + b_hh), each layer optionally "
          "bidirectional (the two directions' outputs concatenated), with dropout between layers in training. A "
          "sequence shorter than T stops at its length: zeros after it, its final state from its last step.")
      .Input(kInput, "Input [T, N, input_size], time-major.")
      .Input(kPreState, "Initial states [num_layers * directions, N, hidden_size]: h, then c for LSTM.", kDuplicable)
      .Input(kWeightList,
             "W_ih [G * hidden_size, layer input] and W_hh [G * hidden_size, hidden_size] of every cell (layer-major, "
             "forward direction first), then b_ih and b_hh [G * hidden_size] of every cell in the same order.",
             kDuplicable)
      .Input(kSequenceLength, "Length of every sequence [N] (int32 or int64), at most T.", kDispensable)
      .Output(kOut, "Output [T, N, directions * hidden_size]; zeros past a sequence's length.")
      .Output(kDropoutState, "The dropout masks between layers (uint8), kept for the gradient.", kDispensable)
      .Output(kState, "Final states, shaped like PreState.", kDuplicable)
      .Output(kReserve, "What the gradient needs from the forward pass (device-specific).", kIntermediate)
      .Attr("dropout_prob", 0.0f, "Dropout probability between layers in training.")
      .Range(0, 1)
      .Attr("is_bidirec", false, "Run every layer in both directions.")
      .Attr("input_size", 10, "Size of an input step; must match Input.")
      .Min(1)
      .Attr("hidden_size", 100, "Size of the hidden state.")
      .Min(1)
      .Attr("num_layers", 1, "Number of stacked layers.")
      .Min(1)
      .Attr("mode", "RNN_TANH", "The cell: LSTM, GRU, RNN_TANH or RNN_RELU.")
      .AllowedValues({"LSTM", "GRU", "RNN_TANH", "RNN_RELU"})
      .Attr("seed", 0, "Seed of the dropout masks; 0 takes the op instance's seed.")
      .Attr("is_test", false, "Inference: no dropout.")
      .InferShape(InferRnn)
      .OutputDimsFromKernel()
      .NoGradInput(kSequenceLength)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<RnnKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<RnnKernel<double>>());

  r.Add("rnn_grad")
      .GradOf("rnn")
      .Doc("Gradient of rnn: back-propagation through time from Out@GRAD and State@GRAD.")
      .Input(kInput, "The forward Input.")
      .Input(kPreState, "The forward PreState.", kDuplicable)
      .Input(kWeightList, "The forward WeightList.", kDuplicable)
      .Input(kSequenceLength, "The forward SequenceLength, when bound.", kDispensable)
      .Input(kGOut, "The forward Out.")
      .Input(kGDropoutState, "The forward DropoutState.", kDispensable)
      .Input(kGReserve, "The forward Reserve.")
      .Input(kGDOut, "Gradient of the loss with respect to Out.", kDispensable)
      .Input(kGDState, "Gradients of the loss with respect to State.", kDuplicable | kDispensable)
      .Output(kGDInput, "Gradient of the loss with respect to Input.")
      .Output(kGDPreState, "Gradients of the loss with respect to PreState.", kDuplicable)
      .Output(kGDWeightList, "Gradients of the loss with respect to WeightList.", kDuplicable)
      .InferShape(InferRnnGrad)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<RnnGradKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<RnnGradKernel<double>>());
}

}  // namespace paddlec::ops
