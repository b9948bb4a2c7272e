// batch_norm and layer_norm against the normalization formulas evaluated in double here, running
// statistics updated in place over steps, shape errors and gradient checks.
#include <cmath>

#include "nn/conv_onednn.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

// ---- batch_norm -----------------------------------------------------------------------------

struct BnRef {
  Tensor y, mean_out, var_out, saved_mean, saved_inv_std;
};

/// batch_norm by the formulas: channel axis 1 (or last for NHWC / 2-D), biased batch variance.
BnRef RefBatchNorm(const Tensor& xt, const Tensor& scale_t, const Tensor& bias_t, const Tensor& mean_t,
                   const Tensor& var_t, bool global, bool nhwc, double momentum, double eps) {
  const Dims& d = xt.dims();
  int axis = (nhwc || d.rank() == 2) ? d.rank() - 1 : 1;
  int64_t C = d[axis], inner = d.Product(axis + 1, d.rank()), outer = d.Product(0, axis);
  std::vector<double> x = ToDoubles(xt), scale = ToDoubles(scale_t), bias = ToDoubles(bias_t);
  std::vector<double> rmean = ToDoubles(mean_t), rvar = ToDoubles(var_t);
  std::vector<double> mu(C, 0), var(C, 0), y(x.size()), mean_out(C), var_out(C), inv(C);
  auto index = [&](int64_t o, int64_t c, int64_t i) { return (o * C + c) * inner + i; };
  double m = static_cast<double>(outer * inner);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) mu[c] += x[index(o, c, i)] / m;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) var[c] += (x[index(o, c, i)] - mu[c]) * (x[index(o, c, i)] - mu[c]) / m;
    double use_mean = global ? rmean[c] : mu[c], use_var = global ? rvar[c] : var[c];
    inv[c] = 1 / std::sqrt(use_var + eps);
    mean_out[c] = global ? rmean[c] : momentum * rmean[c] + (1 - momentum) * mu[c];
    var_out[c] = global ? rvar[c] : momentum * rvar[c] + (1 - momentum) * var[c];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        y[index(o, c, i)] = (x[index(o, c, i)] - use_mean) * inv[c] * scale[c] + bias[c];
    mu[c] = use_mean;
  }
  DType t = xt.dtype();
  return {Cast(MakeTensor<double>(d, y), t), Cast(MakeTensor<double>({C}, mean_out), t),
          Cast(MakeTensor<double>({C}, var_out), t), Cast(MakeTensor<double>({C}, mu), t),
          Cast(MakeTensor<double>({C}, inv), t)};
}

struct BnInputs {
  Tensor x, scale, bias, mean, var;
};

BnInputs MakeBnInputs(const Dims& x, int64_t c, int seed, DType dt = DType::kFloat32) {
  return {Cast(RandomTensor(DType::kFloat32, x, seed, -2, 3), dt),
          Cast(RandomTensor(DType::kFloat32, {c}, seed + 1, 0.5, 1.5), dt),
          Cast(RandomTensor(DType::kFloat32, {c}, seed + 2, -1, 1), dt),
          Cast(RandomTensor(DType::kFloat32, {c}, seed + 3, -0.5, 0.5), dt),
          Cast(RandomTensor(DType::kFloat32, {c}, seed + 4, 0.5, 2), dt)};
}

void SetUpBn(OpTest& t, const BnInputs& in) {
  t.Input("X", in.x).Input("Scale", in.scale).Input("Bias", in.bias).Input("Mean", in.mean).Input("Variance", in.var);
  t.Output("Y").Output("MeanOut").Output("VarianceOut").Output("SavedMean").Output("SavedVariance");
}

void ExpectBn(OpTest& t, const BnRef& r, Tolerance tol) {
  t.ExpectOutput("Y", r.y, tol);
  t.ExpectOutput("MeanOut", r.mean_out, tol);
  t.ExpectOutput("VarianceOut", r.var_out, tol);
  t.ExpectOutput("SavedMean", r.saved_mean, tol);
  t.ExpectOutput("SavedVariance", r.saved_inv_std, tol);
}

// float32 within 2e-5 absolute + 2e-5 relative of the double formulas; float64 within 1e-12.
TEST_CASE("batch_norm training and test mode match the formulas") {
  struct Case {
    Dims x;
    bool nhwc = false, is_test = false, use_global = false, trainable = false;
    float momentum = 0.9f, eps = 1e-5f;
  };
  const Case cases[] = {
      {.x = {2, 3, 5, 7}},
      {.x = {7, 5}, .momentum = 0.8f, .eps = 5e-4f},
      {.x = {3, 4, 13}},
      {.x = {2, 5, 7, 3}, .nhwc = true},
      {.x = {1, 16, 33, 1}},
      {.x = {2, 3, 5, 7}, .is_test = true},
      {.x = {2, 5, 7, 3}, .nhwc = true, .is_test = true},
      {.x = {2, 3, 5, 7}, .use_global = true},
      {.x = {2, 3, 5, 7}, .is_test = true, .trainable = true},  // trainable statistics: batch stats in test mode
  };
  int seed = 300;
  for (const Case& c : cases) {
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      CAPTURE(c.x.ToString());
      CAPTURE(c.is_test);
      CAPTURE(DTypeName(dt));
      int64_t ch = (c.nhwc || c.x.rank() == 2) ? c.x[c.x.rank() - 1] : c.x[1];
      BnInputs in = MakeBnInputs(c.x, ch, seed += 5, dt);
      OpTest t("batch_norm");
      SetUpBn(t, in);
      if (c.nhwc) t.Attr("data_layout", "NHWC");
      if (c.is_test) t.Attr("is_test", true);
      if (c.use_global) t.Attr("use_global_stats", true);
      if (c.trainable) t.Attr("trainable_statistics", true);
      if (c.momentum != 0.9f) t.Attr("momentum", c.momentum);
      if (c.eps != 1e-5f) t.Attr("epsilon", c.eps);
      REQUIRE_OK(t.Run());
      bool global = (c.is_test && !c.trainable) || c.use_global;
      Tolerance tol = dt == DType::kFloat32 ? Tolerance{2e-5, 2e-5} : Tolerance{1e-12, 1e-12};
      ExpectBn(t, RefBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, global, c.nhwc, c.momentum, c.eps), tol);
    }
  }
}

TEST_CASE("batch_norm MomentumTensor overrides the momentum attribute") {
  BnInputs in = MakeBnInputs({4, 3, 2, 2}, 3, 400);
  OpTest t("batch_norm");
  SetUpBn(t, in);
  t.Input("MomentumTensor", MakeTensor<float>({1}, {0.25f}));
  REQUIRE_OK(t.Run());
  ExpectBn(t, RefBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, false, false, 0.25, 1e-5), {2e-5, 2e-5});
}

TEST_CASE("batch_norm runs without its intermediate outputs SavedMean / SavedVariance") {
  BnInputs in = MakeBnInputs({3, 2, 4}, 2, 405);
  OpTest t("batch_norm");
  t.Input("X", in.x).Input("Scale", in.scale).Input("Bias", in.bias).Input("Mean", in.mean).Input("Variance", in.var);
  t.Output("Y").Output("MeanOut").Output("VarianceOut");
  REQUIRE_OK(t.Run());
  BnRef r = RefBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, false, false, 0.9, 1e-5);
  t.ExpectOutput("Y", r.y, {2e-5, 2e-5});
  t.ExpectOutput("VarianceOut", r.var_out, {2e-5, 2e-5});
}

TEST_CASE("batch_norm passes a single value per channel through, as PaddlePaddle does") {
  BnInputs in = MakeBnInputs({1, 4}, 4, 410);
  OpTest t("batch_norm");
  SetUpBn(t, in);
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Y", in.x, {0, 0});
  t.ExpectOutput("MeanOut", in.mean, {0, 0});
  t.ExpectOutput("VarianceOut", in.var, {0, 0});
}

// MeanOut / VarianceOut are the Mean / Variance variables: two training steps must compound.
TEST_CASE("batch_norm updates the running statistics in place over steps") {
  BnInputs in = MakeBnInputs({4, 3, 5, 5}, 3, 420);
  StepRunner run("batch_norm",
                 {{"X", "x"}, {"Scale", "scale"}, {"Bias", "bias"}, {"Mean", "mean"}, {"Variance", "var"}},
                 {{"Y", "y"},
                  {"MeanOut", "mean"},
                  {"VarianceOut", "var"},
                  {"SavedMean", "saved_mean"},
                  {"SavedVariance", "saved_var"}},
                 {ops::MakeAttr("momentum", 0.5f)});
  REQUIRE_OK(run.Start({{"x", in.x}, {"scale", in.scale}, {"bias", in.bias}, {"mean", in.mean}, {"var", in.var}}));
  REQUIRE_OK(run.Step());
  BnRef r1 = RefBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, false, false, 0.5, 1e-5);
  ExpectClose(run.Get("mean"), r1.mean_out, {1e-6, 1e-6}, "running mean after step 1");
  ExpectClose(run.Get("var"), r1.var_out, {1e-6, 1e-6}, "running variance after step 1");
  REQUIRE_OK(run.Step());
  BnRef r2 = RefBatchNorm(in.x, in.scale, in.bias, r1.mean_out, r1.var_out, false, false, 0.5, 1e-5);
  ExpectClose(run.Get("mean"), r2.mean_out, {1e-6, 1e-6}, "running mean after step 2");
  ExpectClose(run.Get("var"), r2.var_out, {1e-6, 1e-6}, "running variance after step 2");
  ExpectClose(run.Get("y"), r2.y, {2e-5, 2e-5}, "Y after step 2");
}

TEST_CASE("batch_norm keeps an unknown batch at compile time and reports shape errors") {
  BnInputs in = MakeBnInputs({2, 3, 5, 5}, 3, 430);
  OpTest t("batch_norm");
  SetUpBn(t, in);
  t.CompileDims("X", {-1, 3, 5, 5});
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Y") == Dims{-1, 3, 5, 5});
  CHECK(t.CompiledDims("SavedVariance") == Dims{3});

  BnInputs bad = MakeBnInputs({2, 3, 5, 5}, 3, 440);
  bad.scale = RandomTensor(DType::kFloat32, {4}, 1);
  OpTest e("batch_norm");
  SetUpBn(e, bad);
  Status st = e.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "Scale has shape [4] but X has shape [2, 3, 5, 5] with 3 channels (axis 1, data_layout NCHW): Scale must be "
        "[3]");

  BnInputs mixed = MakeBnInputs({2, 3, 5, 5}, 3, 445);
  mixed.var = Cast(mixed.var, DType::kFloat64);
  OpTest m("batch_norm");
  SetUpBn(m, mixed);
  st = m.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "Variance is float64 but X is float32: batch_norm needs both of one dtype");

  BnInputs r1 = MakeBnInputs({6}, 6, 450);
  OpTest e1("batch_norm");
  SetUpBn(e1, r1);
  st = e1.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "X has shape [6] (rank 1) but batch_norm needs rank 2 to 5 ([N, C] or [N, C, spatial...])");
}

// float64 central differences with step 1e-6 through the batch statistics; tolerance 1e-7 + 1e-6
// relative.
TEST_CASE("batch_norm_grad matches central differences in training and test mode") {
  struct Case {
    Dims x;
    bool nhwc = false, is_test = false;
  };
  const Case cases[] = {
      {.x = {2, 3, 4, 5}}, {.x = {6, 4}}, {.x = {2, 3, 2, 3}, .nhwc = true}, {.x = {3, 2, 5}, .is_test = true}};
  int seed = 500;
  for (const Case& c : cases) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.is_test);
    int64_t ch = (c.nhwc || c.x.rank() == 2) ? c.x[c.x.rank() - 1] : c.x[1];
    OpTest t("batch_norm");
    SetUpBn(t, MakeBnInputs(c.x, ch, seed += 5));
    if (c.nhwc) t.Attr("data_layout", "NHWC");
    if (c.is_test) t.Attr("is_test", true);
    t.CheckGrad({.inputs = {"X", "Scale", "Bias"}, .output = "Y", .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
}

// The layout pass's `blocked`: X, Y and their gradients in oneDNN's channel-blocked layout. Only
// the CPU results are compared (the GPU kernels keep NCHW and ignore the attribute).
TEST_CASE("batch_norm and batch_norm_grad with blocked tensors compute the NCHW results, rearranged") {
  const int64_t block = ops::nn::ActivationBlockChannels();
  const Dims dims{3, 32, 5, 7};
  const Tolerance tol{1e-5, 1e-5};
  const BnInputs in = MakeBnInputs(dims, 32, 900);
  BnInputs blocked_in = in;
  blocked_in.x = Reblock(in.x, block, true);
  OpTest plain("batch_norm"), blocked("batch_norm");
  SetUpBn(plain, in);
  SetUpBn(blocked, blocked_in);
  blocked.Attr("blocked", true);
  REQUIRE_OK(plain.Run());
  REQUIRE_OK(blocked.Run());
  ExpectClose(Reblock(blocked.Out("Y"), block, false), plain.Out("Y"), tol, "Y");
  for (const char* slot : {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"})
    ExpectClose(blocked.Out(slot), plain.Out(slot), tol, slot);

  const Tensor dy = RandomTensor(DType::kFloat32, dims, 905, -1, 1);
  auto grad = [&](const Tensor& x, const Tensor& y_grad, bool is_blocked) {
    auto t = std::make_unique<OpTest>("batch_norm_grad");
    t->Input("X", x).Input("Scale", in.scale).Input("Bias", in.bias);
    t->Input("SavedMean", plain.Out("SavedMean")).Input("SavedVariance", plain.Out("SavedVariance"));
    t->Input("Y@GRAD", y_grad).Output("X@GRAD").Output("Scale@GRAD").Output("Bias@GRAD");
    if (is_blocked) t->Attr("blocked", true);
    REQUIRE_OK(t->Run());
    return t;
  };
  auto plain_grad = grad(in.x, dy, false);
  auto blocked_grad = grad(blocked_in.x, Reblock(dy, block, true), true);
  ExpectClose(Reblock(blocked_grad->Out("X@GRAD"), block, false), plain_grad->Out("X@GRAD"), tol, "X@GRAD");
  for (const char* slot : {"Scale@GRAD", "Bias@GRAD"})
    ExpectClose(blocked_grad->Out(slot), plain_grad->Out(slot), tol, slot);
}

// The blocked layout takes its statistics in one pass (nn/norm.cc, BlockedMeanAndSquares): planes'
// deviations from their own means, merged. With |mean| >> std, E[x^2] - mean^2 in float32 would
// lose every digit of the variance (x^2 near 1e6, its rounding near 0.06, the variance 0.33).
TEST_CASE("batch_norm's blocked statistics keep the variance when the mean dwarfs it") {
  const int64_t block = ops::nn::ActivationBlockChannels();
  const Dims dims{5, block, 6, 7};
  BnInputs in = MakeBnInputs(dims, block, 950);
  in.x = RandomTensor(DType::kFloat32, dims, 951, 999, 1001);
  OpTest t("batch_norm");
  SetUpBn(t, {Reblock(in.x, block, true), in.scale, in.bias, in.mean, in.var});
  t.Attr("blocked", true);
  REQUIRE_OK(t.Run());
  const BnRef r = RefBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, false, false, 0.9, 1e-5);
  t.ExpectOutput("SavedMean", r.saved_mean, {1e-3, 1e-6});
  t.ExpectOutput("SavedVariance", r.saved_inv_std, {1e-3, 1e-4});
  t.ExpectOutput("VarianceOut", r.var_out, {1e-4, 1e-4});
  ExpectClose(Reblock(t.Out("Y"), block, false), r.y, {2e-3, 1e-3}, "Y");
}

// Planes of 32 x 32 x block floats: the blocked reductions take runs of 2 images (block 16) or 4
// (block 8) as tasks, so 7 images leave a shorter last run, merged after the others
// (nn/norm.cc, SplitImages). The runs depend on the shape alone: one and two threads agree bit
// for bit.
TEST_CASE("batch_norm's blocked reductions over runs of images agree on one and two threads") {
  const int64_t block = ops::nn::ActivationBlockChannels();
  const Dims dims{7, 32, 32, 32};
  const BnInputs in = MakeBnInputs(dims, 32, 960);
  const Tensor x = Reblock(in.x, block, true), dy = RandomTensor(DType::kFloat32, dims, 965, -1, 1);
  const std::vector<ops::pb::OpDesc::Attr> attrs = {ops::MakeAttr("blocked", true)};
  const std::vector<std::string> fwd_out = {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"};
  auto forward = [&](int threads) {
    return RunOpNamedBySlot(
        "batch_norm", {{"X", x}, {"Scale", in.scale}, {"Bias", in.bias}, {"Mean", in.mean}, {"Variance", in.var}},
        attrs, fwd_out, {.threads = threads});
  };
  auto one = forward(1), two = forward(2);
  for (const std::string& slot : fwd_out) ExpectClose(two.at(slot), one.at(slot), {0, 0}, slot);
  const BnRef r = RefBatchNorm(in.x, in.scale, in.bias, in.mean, in.var, false, false, 0.9, 1e-5);
  ExpectClose(one.at("SavedMean"), r.saved_mean, {1e-5, 1e-5}, "SavedMean");
  ExpectClose(one.at("SavedVariance"), r.saved_inv_std, {1e-5, 1e-5}, "SavedVariance");
  ExpectClose(one.at("VarianceOut"), r.var_out, {1e-5, 1e-5}, "VarianceOut");
  ExpectClose(Reblock(one.at("Y"), block, false), r.y, {2e-5, 2e-5}, "Y");

  const std::vector<std::string> grad_out = {"X@GRAD", "Scale@GRAD", "Bias@GRAD"};
  auto backward = [&](const Tensor& xin, const Tensor& dyin, bool blocked, int threads) {
    return RunOpNamedBySlot("batch_norm_grad",
                            {{"X", xin},
                             {"Scale", in.scale},
                             {"Bias", in.bias},
                             {"SavedMean", one.at("SavedMean")},
                             {"SavedVariance", one.at("SavedVariance")},
                             {"Y@GRAD", dyin}},
                            blocked ? attrs : std::vector<ops::pb::OpDesc::Attr>{}, grad_out, {.threads = threads});
  };
  auto g1 = backward(x, Reblock(dy, block, true), true, 1), g2 = backward(x, Reblock(dy, block, true), true, 2);
  for (const std::string& slot : grad_out) ExpectClose(g2.at(slot), g1.at(slot), {0, 0}, slot);
  auto plain = backward(in.x, dy, false, 1);
  ExpectClose(Reblock(g1.at("X@GRAD"), block, false), plain.at("X@GRAD"), {1e-5, 1e-5}, "X@GRAD");
  // Sums of 7 x 32 x 32 terms in float32, in different orders.
  for (const char* slot : {"Scale@GRAD", "Bias@GRAD"}) ExpectClose(g1.at(slot), plain.at(slot), {1e-3, 1e-4}, slot);
}

TEST_CASE("batch_norm's blocked layout needs float32 NCHW with whole channel blocks") {
  OpTest partial("batch_norm");
  SetUpBn(partial, MakeBnInputs({2, 12, 3, 3}, 12, 910));
  partial.Attr("blocked", true);
  Status st = partial.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message().find("multiple of") != std::string::npos);
  OpTest wide("batch_norm");
  SetUpBn(wide, MakeBnInputs({2, 16, 3, 3}, 16, 915, DType::kFloat64));
  wide.Attr("blocked", true);
  st = wide.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message().find("float32") != std::string::npos);
}

// ---- layer_norm -----------------------------------------------------------------------------

struct LnRef {
  Tensor y, mean, var;
};

LnRef RefLayerNorm(const Tensor& xt, const Tensor* scale_t, const Tensor* bias_t, int axis, double eps) {
  const Dims& d = xt.dims();
  int64_t left = d.Product(0, axis), right = d.Product(axis, d.rank());
  std::vector<double> x = ToDoubles(xt), y(x.size()), mean(left), var(left);
  std::vector<double> scale = scale_t ? ToDoubles(*scale_t) : std::vector<double>(right, 1.0);
  std::vector<double> bias = bias_t ? ToDoubles(*bias_t) : std::vector<double>(right, 0.0);
  for (int64_t r = 0; r < left; ++r) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < right; ++j) m += x[r * right + j] / right;
    for (int64_t j = 0; j < right; ++j) v += (x[r * right + j] - m) * (x[r * right + j] - m) / right;
    for (int64_t j = 0; j < right; ++j)
      y[r * right + j] = (x[r * right + j] - m) / std::sqrt(v + eps) * scale[j] + bias[j];
    mean[r] = m;
    var[r] = v;
  }
  DType t = xt.dtype();
  // PaddlePaddle's shape for the statistics: x.shape[:begin_norm_axis].
  Dims stats;
  for (int k = 0; k < axis; ++k) stats.push_back(d[k]);
  return {Cast(MakeTensor<double>(d, y), t), Cast(MakeTensor<double>(stats, mean), t),
          Cast(MakeTensor<double>(stats, var), t)};
}

// float32 within 1e-5 + 1e-5 relative; float64 within 1e-12.
TEST_CASE("layer_norm matches the formula for begin_norm_axis 1 and 2, with and without Scale/Bias") {
  struct Case {
    Dims x;
    int axis;
    bool scale, bias;
  };
  const Case cases[] = {{{3, 4, 5}, 1, true, true},
                        {{3, 4, 5}, 2, true, true},
                        {{7, 513}, 1, true, false},
                        {{2, 3, 7}, 2, false, true},
                        {{1, 9}, 1, false, false}};
  int seed = 600;
  for (const Case& c : cases) {
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      CAPTURE(c.x.ToString());
      CAPTURE(c.axis);
      int64_t right = c.x.Product(c.axis, c.x.rank());
      Tensor x = Cast(RandomTensor(DType::kFloat32, c.x, seed += 3, -2, 4), dt);
      Tensor scale = Cast(RandomTensor(DType::kFloat32, {right}, seed + 1, 0.5, 1.5), dt);
      Tensor bias = Cast(RandomTensor(DType::kFloat32, {right}, seed + 2, -1, 1), dt);
      OpTest t("layer_norm");
      t.Input("X", x).Output("Y").Output("Mean").Output("Variance");
      if (c.scale) t.Input("Scale", scale);
      if (c.bias) t.Input("Bias", bias);
      if (c.axis != 1) t.Attr("begin_norm_axis", c.axis);
      REQUIRE_OK(t.Run());
      LnRef r = RefLayerNorm(x, c.scale ? &scale : nullptr, c.bias ? &bias : nullptr, c.axis, 1e-5);
      Tolerance tol = dt == DType::kFloat32 ? Tolerance{1e-5, 1e-5} : Tolerance{1e-12, 1e-12};
      t.ExpectOutput("Y", r.y, tol);
      t.ExpectOutput("Mean", r.mean, tol);
      t.ExpectOutput("Variance", r.var, tol);
    }
  }
}

TEST_CASE("layer_norm keeps an unknown batch at compile time and reports shape errors") {
  Tensor x = RandomTensor(DType::kFloat32, {2, 3, 4}, 1);
  OpTest t("layer_norm");
  t.Input("X", x).Input("Scale", RandomTensor(DType::kFloat32, {4}, 2)).Output("Y").Output("Mean").Output("Variance");
  t.Attr("begin_norm_axis", 2).CompileDims("X", {-1, 3, 4});
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Y") == Dims{-1, 3, 4});
  CHECK(t.CompiledDims("Mean") == Dims{-1, 3});

  OpTest e("layer_norm");
  e.Input("X", x).Input("Scale", RandomTensor(DType::kFloat32, {4}, 2)).Output("Y");
  Status st = e.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "Scale has shape [4] but X has shape [2, 3, 4], normalized from axis 1 over 12 elements: Scale must be [12]");

  OpTest a("layer_norm");
  a.Input("X", x).Output("Y").Attr("begin_norm_axis", 3);
  st = a.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "begin_norm_axis 3 is out of range for X of shape [2, 3, 4] (rank 3): it must be in [1, 2]");
}

// float64 central differences, step 1e-6; tolerance 1e-7 + 1e-6 relative.
TEST_CASE("layer_norm_grad matches central differences") {
  struct Case {
    Dims x;
    int axis;
    bool affine;
  };
  const Case cases[] = {{{3, 4, 5}, 1, true}, {{3, 4, 5}, 2, true}, {{4, 7}, 1, false}};
  int seed = 700;
  for (const Case& c : cases) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.axis);
    int64_t right = c.x.Product(c.axis, c.x.rank());
    OpTest t("layer_norm");
    t.Input("X", RandomTensor(DType::kFloat32, c.x, seed += 3, -2, 2)).Output("Y").Output("Mean").Output("Variance");
    if (c.affine) {
      t.Input("Scale", RandomTensor(DType::kFloat32, {right}, seed + 1, 0.5, 1.5));
      t.Input("Bias", RandomTensor(DType::kFloat32, {right}, seed + 2, -1, 1));
    }
    if (c.axis != 1) t.Attr("begin_norm_axis", c.axis);
    std::vector<std::string> inputs = {"X"};
    if (c.affine) inputs = {"X", "Scale", "Bias"};
    t.CheckGrad({.inputs = inputs, .output = "Y", .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
}

}  // namespace
}  // namespace paddlec::testing
