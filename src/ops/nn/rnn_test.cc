// rnn / rnn_grad: LSTM, GRU and simple RNNs (several layers, bidirectional, sequence lengths) against
// checksums recorded from PaddlePaddle and a reference written here, gradient checks, dropout between
// layers, and shape errors.
#include <cmath>
#include <string_view>

#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

struct RnnCase {
  std::string_view mode;
  int layers = 1;
  bool bidirectional = false;
  bool lengths = false;  // bind SequenceLength: T, 2, T - 1, 1, T, 2, ...
  int64_t t = 5, n = 3, i = 4, h = 6;

  int dirs() const { return bidirectional ? 2 : 1; }
  int gates() const { return mode == "LSTM" ? 4 : mode == "GRU" ? 3 : 1; }
  int states() const { return mode == "LSTM" ? 2 : 1; }
  /// WeightList shapes: W_ih, W_hh of every cell, then b_ih, b_hh of every cell.
  std::vector<Dims> WeightDims() const {
    std::vector<Dims> w, b;
    for (int k = 0; k < layers * dirs(); ++k) {
      int64_t in = k < dirs() ? i : dirs() * h;
      w.push_back({gates() * h, in});
      w.push_back({gates() * h, h});
      b.push_back({gates() * h});
      b.push_back({gates() * h});
    }
    w.insert(w.end(), b.begin(), b.end());
    return w;
  }
};

struct RnnInputs {
  Tensor x;
  std::vector<Tensor> pre_state, weights;
  Tensor lengths;
};

/// Sequence lengths T, 2, T - 1, 1, T, 2, ... for the batch.
Tensor Lengths(const RnnCase& c, DType dt) {
  std::vector<int64_t> len;
  for (int64_t n = 0; n < c.n; ++n) len.push_back(std::vector<int64_t>{c.t, 2, c.t - 1, 1}[n % 4]);
  return Cast(MakeTensor<int64_t>({c.n}, len), dt);
}

/// 0.5 * f(0.37 * i + offset) in the shape `d` (the inputs of the recorded PaddlePaddle runs).
Tensor Wave(const Dims& d, double offset, double (*f)(double)) {
  std::vector<float> v(d.Numel());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(0.5 * f(0.37 * static_cast<double>(i) + offset));
  return MakeTensor<float>(d, v);
}

RnnInputs WaveInputs(const RnnCase& c) {
  RnnInputs in;
  auto sin_ = [](double v) { return std::sin(v); };
  auto cos_ = [](double v) { return std::cos(v); };
  in.x = Wave({c.t, c.n, c.i}, 0.1, sin_);
  Dims state{c.layers * c.dirs(), c.n, c.h};
  in.pre_state.push_back(Wave(state, 0.2, sin_));
  if (c.states() == 2) in.pre_state.push_back(Wave(state, 0.3, cos_));
  std::vector<Dims> wd = c.WeightDims();
  for (size_t j = 0; j < wd.size(); ++j) in.weights.push_back(Wave(wd[j], static_cast<double>(j), cos_));
  in.lengths = Lengths(c, DType::kInt64);
  return in;
}

RnnInputs RandomInputs(const RnnCase& c, uint64_t seed) {
  RnnInputs in;
  in.x = RandomTensor(DType::kFloat32, {c.t, c.n, c.i}, seed);
  for (int s = 0; s < c.states(); ++s)
    in.pre_state.push_back(RandomTensor(DType::kFloat32, {c.layers * c.dirs(), c.n, c.h}, seed + 1 + s));
  std::vector<Dims> wd = c.WeightDims();
  for (size_t j = 0; j < wd.size(); ++j)
    in.weights.push_back(RandomTensor(DType::kFloat32, wd[j], seed + 10 + j, -0.6, 0.6));
  in.lengths = Lengths(c, DType::kInt32);
  return in;
}

std::vector<Tensor> CastAll(const std::vector<Tensor>& ts, DType dt) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(Cast(t, dt));
  return out;
}

void SetUp(OpTest& t, const RnnCase& c, const RnnInputs& in, DType dt = DType::kFloat32) {
  t.Input("Input", Cast(in.x, dt))
      .Inputs("PreState", CastAll(in.pre_state, dt))
      .Inputs("WeightList", CastAll(in.weights, dt));
  if (c.lengths) t.Input("SequenceLength", in.lengths);
  t.Output("Out").Output("State", static_cast<int>(in.pre_state.size())).Output("Reserve").Output("DropoutState");
  t.Attr("mode", std::string(c.mode)).Attr("num_layers", c.layers).Attr("hidden_size", static_cast<int>(c.h));
  t.Attr("input_size", static_cast<int>(c.i)).Attr("is_bidirec", c.bidirectional);
}

/// The reference: each cell step by step in double, as PaddlePaddle's documentation states the cells,
/// a masked step keeping the previous state and writing zeros.
std::vector<Tensor> RefRnn(const RnnCase& c, const RnnInputs& in) {
  const int64_t T = c.t, N = c.n, H = c.h, D = c.dirs(), L = c.layers, G = c.gates();
  std::vector<double> x = ToDoubles(in.x);
  std::vector<std::vector<double>> w;
  for (const Tensor& t : in.weights) w.push_back(ToDoubles(t));
  std::vector<double> h0 = ToDoubles(in.pre_state[0]), c0 = c.states() == 2 ? ToDoubles(in.pre_state[1]) : h0;
  std::vector<double> len = c.lengths ? ToDoubles(in.lengths) : std::vector<double>(N, T);
  std::vector<double> hn_all(L * D * N * H), cn_all(L * D * N * H);
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  int64_t I = c.i;
  for (int64_t l = 0; l < L; ++l) {
    std::vector<double> out(T * N * D * H, 0.0);
    for (int64_t d = 0; d < D; ++d) {
      const int64_t k = l * D + d, nw = L * D;
      const std::vector<double>&wih = w[2 * k], &whh = w[2 * k + 1], &bih = w[2 * nw + 2 * k],
            &bhh = w[2 * nw + 2 * k + 1];
      std::vector<double> h(h0.begin() + k * N * H, h0.begin() + (k + 1) * N * H);
      std::vector<double> cs(c0.begin() + k * N * H, c0.begin() + (k + 1) * N * H);
      for (int64_t s = 0; s < T; ++s) {
        int64_t t = d == 0 ? s : T - 1 - s;
        std::vector<double> hnew = h, cnew = cs;
        for (int64_t n = 0; n < N; ++n) {
          if (t >= len[n]) continue;
          std::vector<double> xg(G * H), hg(G * H);
          for (int64_t r = 0; r < G * H; ++r) {
            xg[r] = bih[r];
            hg[r] = bhh[r];
            for (int64_t j = 0; j < I; ++j) xg[r] += x[(t * N + n) * I + j] * wih[r * I + j];
            for (int64_t j = 0; j < H; ++j) hg[r] += h[n * H + j] * whh[r * H + j];
          }
          for (int64_t j = 0; j < H; ++j) {
            double v;
            if (c.mode == "LSTM") {
              double i = sig(xg[j] + hg[j]), f = sig(xg[H + j] + hg[H + j]),
                     g = std::tanh(xg[2 * H + j] + hg[2 * H + j]), o = sig(xg[3 * H + j] + hg[3 * H + j]);
              cnew[n * H + j] = f * cs[n * H + j] + i * g;
              v = o * std::tanh(cnew[n * H + j]);
            } else if (c.mode == "GRU") {
              double r = sig(xg[j] + hg[j]), z = sig(xg[H + j] + hg[H + j]),
                     cand = std::tanh(xg[2 * H + j] + r * hg[2 * H + j]);
              v = (h[n * H + j] - cand) * z + cand;
            } else {
              v = c.mode == "RNN_TANH" ? std::tanh(xg[j] + hg[j]) : std::max(xg[j] + hg[j], 0.0);
            }
            hnew[n * H + j] = v;
            out[(t * N + n) * D * H + d * H + j] = v;
          }
        }
        h = hnew;
        cs = cnew;
      }
      std::copy(h.begin(), h.end(), hn_all.begin() + k * N * H);
      std::copy(cs.begin(), cs.end(), cn_all.begin() + k * N * H);
    }
    x = out;
    I = D * H;
  }
  std::vector<Tensor> result = {MakeTensor<double>({T, N, D * H}, x), MakeTensor<double>({L * D, N, H}, hn_all)};
  if (c.states() == 2) result.push_back(MakeTensor<double>({L * D, N, H}, cn_all));
  return result;
}

double Checksum(const Tensor& t) {
  std::vector<double> y = ToDoubles(t);
  double sum = 0;
  for (size_t i = 0; i < y.size(); ++i) sum += y[i] * static_cast<double>(i % 7 + 1);
  return sum;
}

// Recorded with PaddlePaddle 3.3.1 (CPU): nn.LSTM / nn.GRU / nn.SimpleRNN (time_major) with the rnn op's
// WeightList[j] = 0.5 cos(0.37 i + j), x = 0.5 sin(0.37 i + 0.1), h0 = 0.5 sin(0.37 i + 0.2), c0 = 0.5
// cos(0.37 i + 0.3), sequence lengths {5, 2, 4}; then sum(y * (arange(y.size) % 7 + 1)) of Out and each
// State.
TEST_CASE("rnn matches PaddlePaddle's outputs and the reference") {
  struct Recorded {
    RnnCase c;
    std::vector<double> checksums;  // Out, then each State
  };
  const std::vector<Recorded> recorded = {
      {{"LSTM", 2, true, true}, {36.849925129441544, -10.940627170726657, -11.66291318833828}},
      {{"GRU", 2, true, true}, {105.26205739378929, 18.46939095109701}},
      {{"RNN_TANH", 1, false, false}, {-140.12644698098302, -21.0838293582201}},
      {{"RNN_RELU", 2, false, true}, {450.7523371577263, 245.19156590104103}},
      {{"GRU", 1, true, false}, {5.934389300644398, 2.354062147438526}},
      {{"LSTM", 1, false, false}, {-6.547247329770471, -2.7571366652846336, -0.7002697885036469}},
  };
  for (const Recorded& r : recorded) {
    CAPTURE(r.c.mode);
    CAPTURE(r.c.layers);
    CAPTURE(r.c.bidirectional);
    RnnInputs in = WaveInputs(r.c);
    std::vector<Tensor> ref = RefRnn(r.c, in);
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      OpTest t("rnn");
      SetUp(t, r.c, in, dt);
      REQUIRE_OK(t.Run());
      Tolerance tol = dt == DType::kFloat32 ? Tolerance{2e-5, 2e-5} : Tolerance{1e-12, 1e-12};
      t.ExpectOutput("Out", Cast(ref[0], dt), tol);
      for (int s = 0; s < r.c.states(); ++s) t.ExpectOutput("State", Cast(ref[1 + s], dt), tol, s);
      std::vector<Tensor> outs = {t.Out("Out")};
      for (int s = 0; s < r.c.states(); ++s) outs.push_back(t.Out("State", s));
      for (size_t k = 0; k < outs.size(); ++k)
        CHECK(std::abs(Checksum(outs[k]) - r.checksums[k]) <= 2e-5 * std::max(1.0, std::abs(r.checksums[k])));
    }
  }
}

TEST_CASE("rnn keeps an unknown batch and time at compile time") {
  RnnCase c{"GRU", 2, true, true};
  RnnInputs in = RandomInputs(c, 1);
  OpTest t("rnn");
  SetUp(t, c, in);
  t.CompileDims("Input", {-1, -1, 4});
  t.CompileDims("PreState", {4, -1, 6});
  t.CompileDims("SequenceLength", {-1});
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, -1, 12});
  CHECK(t.CompiledDims("State") == Dims{4, -1, 6});
}

TEST_CASE("rnn_grad matches central differences for every cell, with lengths, layers and directions") {
  const RnnCase cases[] = {
      {"LSTM", 2, true, true, 4, 3, 3, 4},     {"GRU", 2, true, true, 4, 3, 3, 4},
      {"RNN_TANH", 1, true, true, 4, 3, 3, 4}, {"RNN_RELU", 2, false, false, 4, 2, 3, 4},
      {"LSTM", 1, false, false, 3, 2, 2, 3},
  };
  uint64_t seed = 100;
  for (const RnnCase& c : cases) {
    CAPTURE(c.mode);
    CAPTURE(c.layers);
    CAPTURE(c.bidirectional);
    RnnInputs in = RandomInputs(c, seed += 50);
    for (const char* output : {"Out", "State"}) {
      CAPTURE(output);
      OpTest t("rnn");
      SetUp(t, c, in);
      t.CheckGrad({.inputs = {"Input", "PreState", "WeightList"}, .output = output, .eps = 1e-6, .tol = {1e-7, 1e-5}});
    }
  }
}

TEST_CASE("rnn_grad float32 matches float64") {
  RnnCase c{"LSTM", 2, true, true, 6, 4, 5, 8};
  RnnInputs in = RandomInputs(c, 7);
  std::map<DType, std::vector<Tensor>> grads;
  for (DType dt : {DType::kFloat64, DType::kFloat32}) {
    OpTest fwd("rnn");
    SetUp(fwd, c, in, dt);
    REQUIRE_OK(fwd.Run());
    OpTest t("rnn_grad");
    t.Input("Input", Cast(in.x, dt))
        .Inputs("PreState", CastAll(in.pre_state, dt))
        .Inputs("WeightList", CastAll(in.weights, dt));
    t.Input("SequenceLength", in.lengths).Input("Out", fwd.Out("Out")).Input("Reserve", fwd.Out("Reserve"));
    t.Input("Out@GRAD", Cast(RandomTensor(DType::kFloat32, fwd.Out("Out").dims(), 8), dt));
    t.Inputs("State@GRAD", {Cast(RandomTensor(DType::kFloat32, {4, 4, 8}, 9), dt),
                            Cast(RandomTensor(DType::kFloat32, {4, 4, 8}, 10), dt)});
    t.Output("Input@GRAD").Output("PreState@GRAD", 2).Output("WeightList@GRAD", 16);
    t.Attr("mode", std::string(c.mode)).Attr("num_layers", c.layers).Attr("hidden_size", static_cast<int>(c.h));
    t.Attr("input_size", static_cast<int>(c.i)).Attr("is_bidirec", true);
    REQUIRE_OK(t.Run());
    grads[dt] = {t.Out("Input@GRAD"), t.Out("PreState@GRAD", 0), t.Out("PreState@GRAD", 1)};
    for (int j = 0; j < 16; ++j) grads[dt].push_back(t.Out("WeightList@GRAD", j));
  }
  for (size_t k = 0; k < grads[DType::kFloat32].size(); ++k)
    ExpectClose(grads[DType::kFloat32][k], Cast(grads[DType::kFloat64][k], DType::kFloat32), {1e-4, 1e-4},
                "gradient " + std::to_string(k));
}

TEST_CASE("rnn dropout between layers: reproducible masks, inverted scaling, none in inference") {
  RnnCase c{"LSTM", 3, true, false, 5, 4, 4, 6};
  RnnInputs in = RandomInputs(c, 3);
  auto run = [&](bool is_test, int seed) {
    OpTest t("rnn");
    SetUp(t, c, in);
    t.Attr("dropout_prob", 0.5f).Attr("seed", seed);
    if (is_test) t.Attr("is_test", true);
    REQUIRE_OK(t.Run());
    return std::pair{t.Out("Out"), t.Out("DropoutState")};
  };
  auto [a, mask_a] = run(false, 5);
  auto [b, mask_b] = run(false, 5);
  auto [other, mask_other] = run(false, 6);
  CHECK(ToDoubles(a) == ToDoubles(b));
  CHECK(ToDoubles(mask_a) == ToDoubles(mask_b));
  CHECK(ToDoubles(mask_a) != ToDoubles(mask_other));
  REQUIRE(mask_a.dims() == Dims{2 * 5 * 4 * 12});
  std::vector<double> m = ToDoubles(mask_a);
  double kept = 0;
  for (double v : m) kept += v;
  CHECK(kept / static_cast<double>(m.size()) == doctest::Approx(0.5).epsilon(0.1));
  // Inference ignores dropout_prob: the reference without dropout.
  auto [inference, no_mask] = run(true, 5);
  ExpectClose(inference, Cast(RefRnn(c, in)[0], DType::kFloat32), {2e-5, 2e-5}, "inference Out");
  CHECK(no_mask.numel() == 0);
  // The gradient through the masks (fixed seed: every run draws the same masks).
  OpTest t("rnn");
  SetUp(t, {"GRU", 2, false, true, 4, 3, 3, 4}, RandomInputs({"GRU", 2, false, true, 4, 3, 3, 4}, 4));
  t.Attr("dropout_prob", 0.3f).Attr("seed", 11);
  t.CheckGrad({.inputs = {"Input", "PreState", "WeightList"}, .output = "Out", .eps = 1e-6, .tol = {1e-7, 1e-5}});
}

TEST_CASE("rnn shape errors name the slot, the cell and the shapes") {
  RnnCase c{"LSTM", 2, true, false};
  {
    RnnInputs in = RandomInputs(c, 1);
    in.weights[4] = RandomTensor(DType::kFloat32, {24, 6}, 2);  // layer 1's W_ih reads 2 * 6 inputs
    OpTest t("rnn");
    SetUp(t, c, in);
    CHECK(CompileError(t) ==
          "WeightList 4 (layer 1, direction 0) has shape [24, 6] but mode LSTM with hidden_size 6 needs [24, 12]");
  }
  {
    RnnInputs in = RandomInputs(c, 1);
    in.weights.pop_back();
    OpTest t("rnn");
    SetUp(t, c, in);
    CHECK(CompileError(t) ==
          "WeightList has 15 tensors but 2 layers x 2 directions need 16 (W_ih and W_hh of every cell, then b_ih and "
          "b_hh of every cell)");
  }
  {
    RnnInputs in = RandomInputs(c, 1);
    in.pre_state.pop_back();
    OpTest t("rnn");
    SetUp(t, c, in);
    CHECK(CompileError(t) == "PreState has 1 tensors but mode LSTM needs 2 (h and c)");
  }
  {
    RnnInputs in = RandomInputs(c, 1);
    in.x = RandomTensor(DType::kFloat32, {5, 3, 7}, 1);
    OpTest t("rnn");
    SetUp(t, c, in);
    CHECK(CompileError(t) == "Input has shape [5, 3, 7] but attribute 'input_size' is 4");
  }
  {
    RnnInputs in = RandomInputs({"GRU"}, 1);
    in.lengths = MakeTensor<int32_t>({3}, {5, 6, 1});
    OpTest t("rnn");
    SetUp(t, {"GRU", 1, false, true}, in);
    Status st = t.Run();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == "SequenceLength 1 is 6 but must be in [0, 5] (Input's time steps)");
  }
}

}  // namespace
}  // namespace paddlec::testing
