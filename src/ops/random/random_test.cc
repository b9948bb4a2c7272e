// uniform_random and gaussian_random: reproducibility, independence from the thread count, agreement
// with the Philox stream they are defined by, moments within statistical bounds, attribute errors.
//
// Statistical bounds are 5 standard errors of the estimate over 100,000 samples (a false failure
// has probability below 1e-6 per check), and the seeds are fixed, so the tests are deterministic.
#include <cmath>
#include <cstring>

#include "common/philox.h"
#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

using ops::Philox;

/// One random op writing `out`, with the given attrs (text-proto `attrs { ... }` entries).
std::unique_ptr<ir::Module> RandomProgram(const std::string& op, const std::string& attrs) {
  std::string text = fmt::format(R"txt(
main_program {{ blocks {{ idx: 0 parent_idx: -1
  ops {{ type: "{}" outputs {{ parameter: "Out" arguments: "out" }} {} }}
}} }})txt",
                                 op, attrs);
  auto module = ir::ParseModule(text, ir::Format::kText, "random.pbtxt");
  REQUIRE_OK(module.status());
  passes::PassManager pm;
  REQUIRE_OK(pm.AddPipeline("validate,infer-shape"));
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  REQUIRE_OK(pm.Run(**module, ctx));
  return std::move(module).value();
}

/// Runs one plan `steps` times and returns Out after each step.
std::vector<Tensor> RunSteps(ir::Module& module, int steps, int threads = 1, uint64_t program_seed = 7) {
  auto exec = exec::Executor::Create(Place::CPU(), {.num_threads = threads, .seed = program_seed});
  REQUIRE_OK(exec.status());
  runtime::Scope scope;
  auto plan = (*exec)->Prepare(module.main().global_block(), scope);
  REQUIRE_OK(plan.status());
  std::vector<Tensor> out;
  for (int s = 0; s < steps; ++s) {
    REQUIRE_OK((*plan)->Run());
    Tensor host;
    REQUIRE_OK((*exec)->device().CopyToHost(scope.FindLocal("out")->tensor(), host, HostAllocator()));
    out.push_back(std::move(host));
  }
  return out;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dims() == b.dims() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

double FractionEqual(const Tensor& a, const Tensor& b) {
  std::vector<double> x = ToDoubles(a), y = ToDoubles(b);
  int64_t same = 0;
  for (size_t i = 0; i < x.size(); ++i) same += x[i] == y[i];
  return static_cast<double>(same) / static_cast<double>(x.size());
}

struct Moments {
  double mean = 0, var = 0, lo = INFINITY, hi = -INFINITY;
};
Moments MomentsOf(const Tensor& t) {
  std::vector<double> v = ToDoubles(t);
  Moments m;
  for (double x : v) {
    m.mean += x;
    m.lo = std::min(m.lo, x);
    m.hi = std::max(m.hi, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

constexpr char kShape100k[] = R"(attrs { name: "shape" type: LONGS longs: 1000 longs: 100 })";
constexpr double kN = 100000;

TEST_CASE("uniform_random: a fixed seed reproduces every step, whatever the thread count") {
  for (int dtype : {5, 6}) {
    CAPTURE(dtype);
    auto module = RandomProgram("uniform_random", fmt::format(R"({} attrs {{ name: "seed" type: INT i: 42 }}
        attrs {{ name: "dtype" type: INT i: {} }})",
                                                              kShape100k, dtype));
    auto a = RunSteps(*module, 3, 1);
    auto b = RunSteps(*module, 3, 2);
    for (int s = 0; s < 3; ++s) CHECK(SameBits(a[s], b[s]));
    // Each step draws fresh values (a float32 collision has probability ~2^-24 per element).
    CHECK(FractionEqual(a[0], a[1]) < 0.001);
    CHECK(FractionEqual(a[1], a[2]) < 0.001);
    // Element i of step s is the Philox stream's value: min + (max - min) * u.
    Philox ref(42);
    std::vector<double> got = ToDoubles(a[1]);
    int mismatches = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i) {
      double u = dtype == 5 ? ref.UniformFloat(1, i) : ref.UniformDouble(1, i);
      double want = dtype == 5 ? static_cast<double>(static_cast<float>(-1.0 + 2.0 * u)) : -1.0 + 2.0 * u;
      mismatches += got[i] != want;
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("uniform_random with seed 0 follows the program seed") {
  auto module = RandomProgram("uniform_random", kShape100k);
  auto a = RunSteps(*module, 1, 1, 11), b = RunSteps(*module, 1, 2, 11), c = RunSteps(*module, 1, 1, 12);
  CHECK(SameBits(a[0], b[0]));
  CHECK(FractionEqual(a[0], c[0]) < 0.001);
}

TEST_CASE("uniform_random moments and bounds") {
  // U(-1, 1): mean 0, variance 1/3; standard errors sqrt(1/3 / n) and sqrt((1/5 - 1/9) / n).
  auto f32 = RunSteps(*RandomProgram("uniform_random", kShape100k), 1)[0];
  CHECK(f32.dtype() == DType::kFloat32);
  CHECK(f32.dims() == Dims{1000, 100});
  Moments m = MomentsOf(f32);
  CHECK(std::fabs(m.mean) < 5 * std::sqrt(1.0 / 3 / kN));
  CHECK(std::fabs(m.var - 1.0 / 3) < 5 * std::sqrt((0.2 - 1.0 / 9) / kN));
  CHECK(m.lo >= -1.0);
  CHECK(m.hi < 1.0);
  // Ten equal bins hold 10,000 each; binomial standard error sqrt(n p (1 - p)) = 94.9.
  std::vector<double> v = ToDoubles(f32);
  int bins[10] = {};
  for (double x : v) ++bins[std::min(9, static_cast<int>((x + 1) * 5))];
  for (int b : bins) CHECK(std::fabs(b - 10000) < 5 * std::sqrt(kN * 0.1 * 0.9));

  // U(2, 5) in float64: mean 3.5, variance 0.75.
  std::string u25 = std::string(kShape100k) + R"(attrs { name: "dtype" type: INT i: 6 }
      attrs { name: "min" type: FLOAT f: 2 } attrs { name: "max" type: FLOAT f: 5 })";
  auto f64 = RunSteps(*RandomProgram("uniform_random", u25), 1)[0];
  CHECK(f64.dtype() == DType::kFloat64);
  m = MomentsOf(f64);
  CHECK(std::fabs(m.mean - 3.5) < 5 * std::sqrt(0.75 / kN));
  CHECK(std::fabs(m.var - 0.75) < 5 * std::sqrt((9.0 * 9 / 80 - 0.75 * 0.75) / kN));
  CHECK(m.lo >= 2.0);
  CHECK(m.hi < 5.0);
}

TEST_CASE("uniform_random diag_num writes diag_val along the flat diagonal") {
  auto out = RunSteps(*RandomProgram("uniform_random", R"(attrs { name: "shape" type: LONGS longs: 4 longs: 5 }
      attrs { name: "diag_num" type: INT i: 4 } attrs { name: "diag_step" type: INT i: 5 }
      attrs { name: "diag_val" type: FLOAT f: 7 })"),
                      2);
  for (const Tensor& t : out) {
    std::vector<float> v = ToVector<float>(t);
    for (int i = 0; i < 20; ++i) {
      CAPTURE(i);
      if (i % 6 == 0 && i / 6 < 4)
        CHECK(v[i] == 7.f);  // positions i * (diag_step + 1)
      else
        CHECK((v[i] >= -1.f && v[i] < 1.f));
    }
  }
}

TEST_CASE("uniform_random errors") {
  struct Case {
    std::string attrs;
    const char* message;
  };
  const Case cases[] = {
      {R"(attrs { name: "shape" type: LONGS longs: -1 longs: 3 })",
       "shape [-1, 3] has negative dimension -1 at index 0: uniform_random needs a fully known shape"},
      {R"(attrs { name: "min" type: FLOAT f: 2 } attrs { name: "max" type: FLOAT f: 1 })",
       "min 2 is greater than max 1"},
      {R"(attrs { name: "shape" type: LONGS longs: 2 longs: 2 } attrs { name: "diag_num" type: INT i: 3 }
          attrs { name: "diag_step" type: INT i: 1 })",
       "diag_num = 3 and diag_step = 1 put the last diagonal value at index 4, but Out of shape [2, 2] has 4 elements"},
      {R"(attrs { name: "dtype" type: INT i: 3 })", "attribute 'dtype' value 3 is not allowed: expected one of 5, 6"},
  };
  for (const Case& c : cases) {
    auto module = ir::ParseModule(fmt::format(R"txt(main_program {{ blocks {{ idx: 0 parent_idx: -1
        ops {{ type: "uniform_random" outputs {{ parameter: "Out" arguments: "out" }} {} }} }} }})txt",
                                              c.attrs),
                                  ir::Format::kText, "random.pbtxt");
    REQUIRE_OK(module.status());
    passes::PassManager pm;
    REQUIRE_OK(pm.AddPipeline("validate,infer-shape"));
    passes::PassContext ctx{ops::GlobalOpRegistry()};
    Status st = pm.Run(**module, ctx);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == c.message);
  }
  OpTest shape_tensor("uniform_random");
  shape_tensor.Input("ShapeTensor", MakeTensor<int64_t>({2}, {2, 3})).Output("Out");
  Status st = shape_tensor.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "input ShapeTensor (bound to 'ShapeTensor') is not supported yet: give `shape` as an attribute instead");
  CHECK(ops::GlobalOpRegistry().Find("uniform_random")->no_gradient());
}

TEST_CASE("gaussian_random: reproducible, the Philox Box-Muller stream, correct moments") {
  for (int dtype : {5, 6}) {
    CAPTURE(dtype);
    auto module = RandomProgram("gaussian_random", fmt::format(R"({} attrs {{ name: "seed" type: INT i: 9 }}
        attrs {{ name: "dtype" type: INT i: {} }} attrs {{ name: "mean" type: FLOAT f: 1.5 }}
        attrs {{ name: "std" type: FLOAT f: 2 }})",
                                                               kShape100k, dtype));
    auto a = RunSteps(*module, 2, 1), b = RunSteps(*module, 2, 2);
    CHECK(SameBits(a[0], b[0]));
    CHECK(SameBits(a[1], b[1]));
    CHECK(FractionEqual(a[0], a[1]) < 0.001);
    // The stream: mean + std * Philox::Normal(step, i), to 1 ulp of the output type.
    Philox ref(9);
    std::vector<double> got = ToDoubles(a[1]);
    double worst = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i) {
      double want = 1.5 + 2.0 * ref.Normal(1, i);
      worst = std::max(worst, std::fabs(got[i] - want) / std::max(1.0, std::fabs(want)));
    }
    CHECK(worst <= (dtype == 5 ? 1.2e-7 : 4.5e-16));
    // N(1.5, 4): standard errors std / sqrt(n) for the mean, std^2 sqrt(2 / n) for the variance,
    // sqrt(p (1 - p) / n) for the fraction within one std (p = 0.682689).
    Moments m = MomentsOf(a[0]);
    CHECK(std::fabs(m.mean - 1.5) < 5 * 2 / std::sqrt(kN));
    CHECK(std::fabs(m.var - 4) < 5 * 4 * std::sqrt(2 / kN));
    std::vector<double> v = ToDoubles(a[0]);
    int64_t within = 0;
    for (double x : v) within += std::fabs(x - 1.5) < 2;
    constexpr double kP = 0.6826894921370859;
    CHECK(std::fabs(within / kN - kP) < 5 * std::sqrt(kP * (1 - kP) / kN));
  }
}

TEST_CASE("gaussian_random odd sizes, defaults and errors") {
  // An odd count uses only the cosine half of the last Box-Muller pair.
  auto module = RandomProgram("gaussian_random", R"(attrs { name: "shape" type: LONGS longs: 7 }
      attrs { name: "seed" type: INT i: 3 } attrs { name: "dtype" type: INT i: 6 })");
  Tensor t = RunSteps(*module, 1)[0];
  Philox ref(3);
  std::vector<double> v = ToVector<double>(t);
  for (int i = 0; i < 7; ++i) CHECK(v[i] == doctest::Approx(ref.Normal(0, i)).epsilon(1e-15));
  // Defaults: float32, 0-D.
  Tensor scalar = RunSteps(*RandomProgram("gaussian_random", ""), 1)[0];
  CHECK(scalar.dims() == Dims{});
  CHECK(scalar.dtype() == DType::kFloat32);
  CHECK(std::isfinite(ToVector<float>(scalar)[0]));

  OpTest neg_std("gaussian_random");
  neg_std.Attr("std", -1.0f).Output("Out");
  Status st = neg_std.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "attribute 'std' value -1 is out of range: must be >= 0");
  OpTest neg_shape("gaussian_random");
  neg_shape.Attr("shape", std::vector<int64_t>{3, -1}).Output("Out");
  st = neg_shape.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "shape [3, -1] has negative dimension -1 at index 1: gaussian_random needs a fully "
        "known shape");
  CHECK(ops::GlobalOpRegistry().Find("gaussian_random")->no_gradient());
}

}  // namespace
}  // namespace paddlec::testing

namespace paddlec::testing {
namespace {

TEST_CASE("uniform_random: a plan started at step k draws what an uninterrupted plan draws at step k") {
  auto attrs = std::vector<ops::pb::OpDesc::Attr>{ops::MakeAttr("shape", std::vector<int64_t>{64}),
                                                  ops::MakeAttr("seed", 5)};
  StepRunner from_zero("uniform_random", {}, {{"Out", "r"}}, attrs);
  REQUIRE_OK(from_zero.Start({}));
  for (int i = 0; i < 4; ++i) REQUIRE_OK(from_zero.Step());
  StepRunner resumed("uniform_random", {}, {{"Out", "r"}}, attrs);
  REQUIRE_OK(resumed.Start({}, {.start_step = 3}));
  REQUIRE_OK(resumed.Step());
  CHECK(ToVector<float>(resumed.Get("r")) == ToVector<float>(from_zero.Get("r")));
}

}  // namespace
}  // namespace paddlec::testing
