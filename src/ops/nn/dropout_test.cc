// dropout / dropout_grad: both implementations in training and inference, the keep ratio, seed
// handling, reproducibility across runs, steps and thread counts, and gradient checks.
#include <cmath>

#include "testing/program_runner.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

/// Checks Out against X and Mask: Out = X * Mask * scale exactly up to float rounding, Mask in {0, 1}.
void ExpectMasked(const Tensor& x, const Tensor& out, const Tensor& mask, double scale) {
  std::vector<double> xv = ToDoubles(x), ov = ToDoubles(out);
  std::vector<uint8_t> m = ToVector<uint8_t>(mask);
  REQUIRE(m.size() == xv.size());
  int bad = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (m[i] > 1) ++bad;
    double expected = m[i] ? xv[i] * scale : 0.0;
    if (std::fabs(ov[i] - expected) > 1e-6 * std::fabs(expected)) ++bad;
  }
  CHECK(bad == 0);
}

double KeptFraction(const Tensor& mask, int lane = -1) {
  std::vector<uint8_t> m = ToVector<uint8_t>(mask);
  int64_t kept = 0, n = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    if (lane >= 0 && static_cast<int>(i % 4) != lane) continue;
    kept += m[i];
    ++n;
  }
  return static_cast<double>(kept) / static_cast<double>(n);
}

TEST_CASE("dropout training: both implementations, keep ratio within 6 sigma") {
  // n = 1,000,003 elements: the kept fraction has standard deviation sqrt(p (1 - p) / n) = 4.6e-4 for
  // p = 0.3, so a 6-sigma bound is 2.8e-3 (each of the 4 Philox lanes: 5.5e-3).
  const int64_t n = 1000003;
  Tensor x = RandomTensor(DType::kFloat32, {n}, 1, -3, 3);
  for (std::string impl : {"downgrade_in_infer", "upscale_in_train"}) {
    CAPTURE(impl);
    OpTest t("dropout");
    t.Input("X", x).Output("Out").Output("Mask").Attr("dropout_prob", 0.3f);
    if (std::string(impl) != "downgrade_in_infer") t.Attr("dropout_implementation", impl);
    REQUIRE_OK(t.Run());
    double scale = std::string(impl) == "upscale_in_train" ? 1 / (1 - 0.3f) : 1.0;
    ExpectMasked(x, t.Out("Out"), t.Out("Mask"), scale);
    double sigma = std::sqrt(0.3 * 0.7 / n);
    CHECK(std::fabs(KeptFraction(t.Out("Mask")) - 0.7) < 6 * sigma);
    for (int lane = 0; lane < 4; ++lane) CHECK(std::fabs(KeptFraction(t.Out("Mask"), lane) - 0.7) < 12 * sigma);
  }
  // The default p = 0.5 on an odd small shape.
  Tensor small = RandomTensor(DType::kFloat64, {7, 13}, 2);
  OpTest t("dropout");
  t.Input("X", small).Output("Out").Output("Mask");
  REQUIRE_OK(t.Run());
  ExpectMasked(small, t.Out("Out"), t.Out("Mask"), 1.0);
  CHECK(KeptFraction(t.Out("Mask")) > 0.2);
  CHECK(KeptFraction(t.Out("Mask")) < 0.8);
}

TEST_CASE("dropout inference scales by 1 - p (downgrade_in_infer) or not at all (upscale_in_train)") {
  Tensor x = RandomTensor(DType::kFloat32, {3, 513}, 3);
  std::vector<float> v = ToVector<float>(x), scaled;
  for (float f : v) scaled.push_back(f * (1 - 0.25f));
  for (std::string impl : {"downgrade_in_infer", "upscale_in_train"}) {
    CAPTURE(impl);
    OpTest t("dropout");
    t.Input("X", x).Output("Out").Output("Mask").Attr("dropout_prob", 0.25f).Attr("is_test", true);
    t.Attr("dropout_implementation", impl);
    REQUIRE_OK(t.Run());
    t.ExpectOutput("Out", std::string(impl) == "upscale_in_train" ? x : MakeTensor<float>({3, 513}, scaled), {0, 1e-7});
    t.ExpectOutput("Mask", FullTensor<uint8_t>({3, 513}, 1), {0, 0});
  }
}

TEST_CASE("dropout with p = 0 keeps everything and p = 1 drops everything") {
  Tensor x = RandomTensor(DType::kFloat32, {9, 7}, 4);
  for (std::string impl : {"downgrade_in_infer", "upscale_in_train"}) {
    CAPTURE(impl);
    OpTest keep("dropout");
    keep.Input("X", x).Output("Out").Output("Mask").Attr("dropout_prob", 0.0f).Attr("dropout_implementation", impl);
    REQUIRE_OK(keep.Run());
    keep.ExpectOutput("Out", x, {0, 0});
    keep.ExpectOutput("Mask", FullTensor<uint8_t>({9, 7}, 1), {0, 0});
    OpTest drop("dropout");
    drop.Input("X", x).Output("Out").Output("Mask").Attr("dropout_prob", 1.0f).Attr("dropout_implementation", impl);
    REQUIRE_OK(drop.Run());
    drop.ExpectOutput("Out", FullTensor<float>({9, 7}, 0), {0, 0});
    drop.ExpectOutput("Mask", FullTensor<uint8_t>({9, 7}, 0), {0, 0});
  }
}

std::vector<uint8_t> Masks(StepRunner& run, int steps) {
  std::vector<uint8_t> all;
  for (int s = 0; s < steps; ++s) {
    REQUIRE_OK(run.Step());
    std::vector<uint8_t> m = ToVector<uint8_t>(run.Get("mask"));
    all.insert(all.end(), m.begin(), m.end());
  }
  return all;
}

std::vector<uint8_t> RunSteps(const Tensor& x, std::vector<ops::pb::OpDesc::Attr> attrs, int threads, uint64_t seed,
                              int steps, const Tensor* seed_tensor = nullptr) {
  std::map<std::string, std::string> inputs{{"X", "x"}};
  std::map<std::string, Tensor> feeds{{"x", x}};
  if (seed_tensor) {
    inputs["Seed"] = "seed";
    feeds["seed"] = *seed_tensor;
  }
  StepRunner run("dropout", inputs, {{"Out", "out"}, {"Mask", "mask"}}, std::move(attrs));
  REQUIRE_OK(run.Start(feeds, {.threads = threads, .seed = seed}));
  return Masks(run, steps);
}

TEST_CASE("dropout masks are reproducible per step across runs and thread counts, and vary by step and seed") {
  const int64_t n = 100003;  // large enough to be split across threads
  Tensor x = RandomTensor(DType::kFloat32, {n}, 5);
  auto fixed = [](int seed) {
    return std::vector<ops::pb::OpDesc::Attr>{ops::MakeAttr("fix_seed", true), ops::MakeAttr("seed", seed)};
  };
  std::vector<uint8_t> a = RunSteps(x, fixed(123), 1, 7, 3);
  CHECK(a == RunSteps(x, fixed(123), 2, 7, 3));   // thread count
  CHECK(a == RunSteps(x, fixed(123), 1, 99, 3));  // the program seed does not matter with fix_seed
  CHECK(a != RunSteps(x, fixed(124), 1, 7, 3));   // the seed does
  std::vector<uint8_t> step0(a.begin(), a.begin() + n), step1(a.begin() + n, a.begin() + 2 * n);
  CHECK(step0 != step1);                                           // each step draws a new mask
  CHECK(a == RunSteps(x, {ops::MakeAttr("seed", 123)}, 2, 7, 3));  // a nonzero seed alone fixes it too

  // Without a fixed seed the program seed decides.
  std::vector<uint8_t> p7 = RunSteps(x, {}, 1, 7, 2);
  CHECK(p7 == RunSteps(x, {}, 2, 7, 2));
  CHECK(p7 != RunSteps(x, {}, 1, 8, 2));

  // float64 draws the same mask as float32.
  CHECK(a == RunSteps(Cast(x, DType::kFloat64), fixed(123), 2, 7, 3));

  // A Seed tensor makes the mask a function of its value alone: the same on every step.
  Tensor seed = MakeTensor<int32_t>({1}, {42});
  std::vector<uint8_t> s = RunSteps(x, {}, 2, 7, 2, &seed);
  CHECK(std::vector<uint8_t>(s.begin(), s.begin() + n) == std::vector<uint8_t>(s.begin() + n, s.end()));
  CHECK(s == RunSteps(x, {}, 1, 99, 2, &seed));
}

TEST_CASE("dropout keeps an unknown batch at compile time; bad attributes are rejected") {
  OpTest t("dropout");
  t.Input("X", RandomTensor(DType::kFloat32, {4, 7}, 6)).CompileDims("X", {-1, 7}).Output("Out").Output("Mask");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, 7});
  CHECK(t.CompiledDims("Mask") == Dims{-1, 7});
  CHECK(t.Out("Mask").dtype() == DType::kUInt8);

  OpTest p("dropout");
  p.Input("X", RandomTensor(DType::kFloat32, {4, 7}, 6)).Output("Out").Attr("dropout_prob", 1.5f);
  Status st = p.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "attribute 'dropout_prob' value 1.5 is out of range: must be [0, 1]");

  OpTest m("dropout");
  m.Input("X", RandomTensor(DType::kFloat32, {4, 7}, 6)).Output("Out").Attr("dropout_implementation", "upscale");
  st = m.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "attribute 'dropout_implementation' value 'upscale' is not allowed: expected one of 'downgrade_in_infer', "
        "'upscale_in_train'");
}

TEST_CASE("dropout's Seed is an int32 or int64 tensor that holds a value") {
  OpTest f("dropout");
  f.Input("X", RandomTensor(DType::kFloat32, {4, 7}, 6)).Input("Seed", MakeTensor<double>({1}, {3})).Output("Out");
  Status st = f.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "Seed has dtype float64 but must be int32 or int64");

  // Bound to a variable nothing wrote: an error, not a read of memory that is not there.
  auto m = CompileText(R"pb(
    blocks {
      idx: 0
      parent_idx: -1
      vars {
        name: "x"
        type {
          type: LOD_TENSOR
          lod_tensor { tensor { data_type: FP32 dims: 2 } }
        }
      }
      vars {
        name: "seed"
        type {
          type: LOD_TENSOR
          lod_tensor { tensor { data_type: INT32 dims: 1 } }
        }
        persistable: true
      }
      ops {
        type: "dropout"
        inputs { parameter: "X" arguments: "x" }
        inputs { parameter: "Seed" arguments: "seed" }
        outputs { parameter: "Out" arguments: "out" }
      }
    }
  )pb");
  REQUIRE_OK(m.status());
  auto run = RunModule(**m, {{"x", MakeTensor<float>({2}, {1, 2})}}, {"out"});
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().error().message() == "Seed is bound to a variable that holds no value");
}

// float64 central differences with step 1e-6 (the harness reruns the forward op with the same
// program seed, so the mask is the same in every run); tolerance 1e-7 + 1e-6 relative.
TEST_CASE("dropout_grad matches central differences") {
  for (std::string impl : {"downgrade_in_infer", "upscale_in_train"})
    for (bool is_test : {false, true}) {
      CAPTURE(impl);
      CAPTURE(is_test);
      OpTest t("dropout");
      t.Input("X", RandomTensor(DType::kFloat32, {5, 7}, 7)).Output("Out").Output("Mask").Attr("dropout_prob", 0.4f);
      t.Attr("dropout_implementation", impl);
      if (is_test) t.Attr("is_test", true);
      t.CheckGrad({.inputs = {"X"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
    }
}

TEST_CASE("dropout_grad scales by the mask and the implementation's factor") {
  Tensor dy = RandomTensor(DType::kFloat32, {2, 3}, 8);
  Tensor mask = MakeTensor<uint8_t>({2, 3}, {1, 0, 1, 1, 0, 0});
  std::vector<float> d = ToVector<float>(dy), up, down;
  std::vector<uint8_t> mv = ToVector<uint8_t>(mask);
  for (size_t i = 0; i < d.size(); ++i) {
    down.push_back(mv[i] ? d[i] : 0.f);
    up.push_back(mv[i] ? d[i] * (1 / (1 - 0.4f)) : 0.f);
  }
  for (bool upscale : {false, true}) {
    OpTest t("dropout_grad");
    t.Input("Mask", mask).Input("Out@GRAD", dy).Output("X@GRAD").Attr("dropout_prob", 0.4f);
    if (upscale) t.Attr("dropout_implementation", "upscale_in_train");
    REQUIRE_OK(t.Run());
    t.ExpectOutput("X@GRAD", MakeTensor<float>({2, 3}, upscale ? up : down), {0, 1e-6});
  }
}

}  // namespace
}  // namespace paddlec::testing

namespace paddlec::testing {
namespace {

TEST_CASE("dropout: a plan started at step k draws the mask an uninterrupted plan draws at step k") {
  Tensor x = RandomTensor(DType::kFloat32, {1000}, 21, 1, 2);
  StepRunner from_zero("dropout", {{"X", "x"}}, {{"Out", "y"}, {"Mask", "mask"}});
  REQUIRE_OK(from_zero.Start({{"x", x}}));
  for (int i = 0; i < 3; ++i) REQUIRE_OK(from_zero.Step());
  StepRunner resumed("dropout", {{"X", "x"}}, {{"Out", "y"}, {"Mask", "mask"}});
  REQUIRE_OK(resumed.Start({{"x", x}}, {.start_step = 2}));
  REQUIRE_OK(resumed.Step());
  CHECK(ToVector<uint8_t>(resumed.Get("mask")) == ToVector<uint8_t>(from_zero.Get("mask")));
  StepRunner other("dropout", {{"X", "x"}}, {{"Out", "y"}, {"Mask", "mask"}});
  REQUIRE_OK(other.Start({{"x", x}}, {.start_step = 1}));
  REQUIRE_OK(other.Step());
  CHECK(ToVector<uint8_t>(other.Get("mask")) != ToVector<uint8_t>(from_zero.Get("mask")));
}

}  // namespace
}  // namespace paddlec::testing
