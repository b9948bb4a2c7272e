// The maps the CUDA random kernels apply (random_map.h), replayed on the host over the Philox stream,
// against random.cc's CPU kernels bit for bit: the GPU computes what these replays compute (uniform
// exactly; gaussian up to the device's log/sin/cos). Where a GPU is usable, also the GPU kernels
// themselves against the CPU's.
#include "random/random_map.h"

#include <cstring>

#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

using ops::Philox;

std::unique_ptr<ir::Module> OneOp(const std::string& op, const std::string& attrs) {
  std::string text = fmt::format(R"txt(
main_program {{ blocks {{ idx: 0 parent_idx: -1
  ops {{ type: "{}" outputs {{ parameter: "Out" arguments: "out" }} {} }}
}} }})txt",
                                 op, attrs);
  auto module = ir::ParseModule(text, ir::Format::kText, "random_map.pbtxt");
  REQUIRE_OK(module.status());
  passes::PassManager pm;
  REQUIRE_OK(pm.AddPipeline("validate,infer-shape"));
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  REQUIRE_OK(pm.Run(**module, ctx));
  return std::move(module).value();
}

/// Out after each of `steps` runs of one plan on `place`; empty when the place cannot be used.
std::vector<Tensor> Draw(ir::Module& m, Place place, int steps) {
  auto exec = exec::Executor::Create(place, {.num_threads = 2, .seed = 5});
  if (!exec.ok()) {
    MESSAGE("GPU case skipped: " << exec.error().message());
    return {};
  }
  runtime::Scope scope;
  auto plan = (*exec)->Prepare(m.main().global_block(), scope);
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

template <class T>
std::vector<T> ReplayUniform(uint64_t key, uint64_t step, int64_t n, float min, float max, int64_t diag_num,
                             int64_t diag_step, float diag_val) {
  const Philox rng(key);
  const double lo = min, span = static_cast<double>(max) - static_cast<double>(min);
  const T hi = static_cast<T>(static_cast<double>(max)), below_hi = std::nextafter(hi, static_cast<T>(min));
  constexpr int kPer = ops::random_map::kPerBlock<T>;
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) {
    auto w = rng.Block(step, static_cast<uint64_t>(i / kPer));
    v[i] = ops::random_map::UniformValue<T>(ops::random_map::UnitAt<T>(w, static_cast<int>(i % kPer)), lo, span, hi,
                                            below_hi);
    if (ops::random_map::OnDiagonal(i, diag_num, diag_step)) v[i] = static_cast<T>(diag_val);
  }
  return v;
}

template <class T>
std::vector<T> ReplayGaussian(uint64_t key, uint64_t step, int64_t n, float mean, float std) {
  const Philox rng(key);
  const double r_floor = std::sqrt(-2.0 * std::log(1e-300));
  std::vector<T> v(n + 1);
  for (int64_t q = 0; 2 * q < n; ++q)
    ops::random_map::GaussianPair<T>(rng.Block(step, static_cast<uint64_t>(q)), mean, std, r_floor, &v[2 * q],
                                     &v[2 * q + 1]);
  v.resize(n);
  return v;
}

template <class T>
bool SameBits(const Tensor& t, const std::vector<T>& v) {
  return t.numel() == static_cast<int64_t>(v.size()) && std::memcmp(t.raw_data(), v.data(), v.size() * sizeof(T)) == 0;
}

std::string DTypeAttr(int dtype) { return fmt::format(R"(attrs {{ name: "dtype" type: INT i: {} }})", dtype); }

TEST_CASE("random_map: the GPU's uniform map reproduces the CPU's uniform_random bit for bit") {
  // min/max chosen so that some values round up to max in float and get moved below it.
  const std::string attrs = R"(attrs { name: "shape" type: LONGS longs: 301 longs: 7 }
      attrs { name: "seed" type: INT i: 123 } attrs { name: "min" type: FLOAT f: -0.3 }
      attrs { name: "max" type: FLOAT f: 0.7 } attrs { name: "diag_num" type: INT i: 5 }
      attrs { name: "diag_step" type: INT i: 7 } attrs { name: "diag_val" type: FLOAT f: 2.5 })";
  auto f32 = OneOp("uniform_random", attrs + DTypeAttr(5));
  auto f64 = OneOp("uniform_random", attrs + DTypeAttr(6));
  auto cpu32 = Draw(*f32, Place::CPU(), 3);
  auto cpu64 = Draw(*f64, Place::CPU(), 3);
  for (uint64_t s = 0; s < 3; ++s) {
    CAPTURE(s);
    CHECK(SameBits(cpu32[s], ReplayUniform<float>(123, s, 301 * 7, -0.3f, 0.7f, 5, 7, 2.5f)));
    CHECK(SameBits(cpu64[s], ReplayUniform<double>(123, s, 301 * 7, -0.3f, 0.7f, 5, 7, 2.5f)));
  }
  // The GPU kernels themselves, where a GPU is usable.
  auto gpu32 = Draw(*f32, Place::CUDA(0), 3);
  auto gpu64 = Draw(*f64, Place::CUDA(0), 3);
  for (size_t s = 0; s < gpu32.size(); ++s) {
    CAPTURE(s);
    CHECK(std::memcmp(gpu32[s].raw_data(), cpu32[s].raw_data(), cpu32[s].nbytes()) == 0);
    CHECK(std::memcmp(gpu64[s].raw_data(), cpu64[s].raw_data(), cpu64[s].nbytes()) == 0);
  }
}

TEST_CASE("random_map: the GPU's Box-Muller map, with the host's log/sin/cos, is the CPU's gaussian_random") {
  const std::string attrs = R"(attrs { name: "shape" type: LONGS longs: 1001 }
      attrs { name: "seed" type: INT i: 77 } attrs { name: "mean" type: FLOAT f: 0.25 }
      attrs { name: "std" type: FLOAT f: 1.5 })";
  auto f32 = OneOp("gaussian_random", attrs + DTypeAttr(5));
  auto f64 = OneOp("gaussian_random", attrs + DTypeAttr(6));
  auto cpu32 = Draw(*f32, Place::CPU(), 2);
  auto cpu64 = Draw(*f64, Place::CPU(), 2);
  for (uint64_t s = 0; s < 2; ++s) {
    CAPTURE(s);
    CHECK(SameBits(cpu32[s], ReplayGaussian<float>(77, s, 1001, 0.25f, 1.5f)));
    CHECK(SameBits(cpu64[s], ReplayGaussian<double>(77, s, 1001, 0.25f, 1.5f)));
  }
  // On the GPU, log/sin/cos are CUDA's: float32 values equal the CPU's except (rarely) by one ulp;
  // float64 values agree to a few ulps.
  auto gpu32 = Draw(*f32, Place::CUDA(0), 2);
  auto gpu64 = Draw(*f64, Place::CUDA(0), 2);
  for (size_t s = 0; s < gpu32.size(); ++s) {
    CAPTURE(s);
    const auto g = ToVector<float>(gpu32[s]), c = ToVector<float>(cpu32[s]);
    int64_t differ = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      differ += g[i] != c[i];
      CHECK(std::fabs(g[i] - c[i]) <= std::fabs(std::nextafter(c[i], 2 * c[i]) - c[i]));
    }
    MESSAGE("gaussian_random float32 elements that differ from the CPU's by one ulp: " << differ << " of " << g.size());
    ExpectClose(gpu64[s], cpu64[s], {1e-15, 1e-14}, "gaussian_random float64 on the GPU vs the CPU");
  }
}

}  // namespace
}  // namespace paddlec::testing
