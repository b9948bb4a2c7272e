// The optimizer pass, end to end: compiled training programs update parameters exactly as the
// closed forms say. The program is loss = |w|^2, so the gradient is 2w.
#include <doctest/doctest.h>

#include <cmath>

#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"

namespace paddlec::passes {
namespace {

std::string Program(const std::string& w_attrs = "") {
  // w starts away from zero (rank-1 parameters would otherwise be zero-initialized, and every
  // update rule maps zero to zero).
  return R"pb(blocks { idx: 0 parent_idx: -1
  vars { name: "w" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 3 } } } persistable: true
         attrs { name: "initializer" type: STRING s: "uniform:0.5:1.5" } )pb" +
         w_attrs + R"pb( }
  ops { type: "squared_l2_norm" inputs { parameter: "X" arguments: "w" } outputs { parameter: "Out" arguments: "loss" } } })pb";
}

/// Compiles with the optimizer options, initializes, and returns w before and after `steps` steps.
std::pair<std::vector<double>, std::vector<double>> Train(const std::string& optimizer, int steps,
                                                          const std::string& w_attrs = "") {
  auto m = ir::ParseModule(Program(w_attrs), ir::Format::kText, "opt.pbtxt");
  REQUIRE(m.ok());
  PassManager pm;
  REQUIRE(pm.AddPipeline("validate,infer-shape,backward{loss=loss}," + optimizer + ",init-params").ok());
  PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**m, ctx);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  auto exec = exec::Executor::Create(Place::CPU(), {.seed = 5});
  runtime::Scope scope;
  REQUIRE((*exec)->RunOnce((*m)->startup().global_block(), scope).ok());
  std::vector<double> w0 = testing::ToDoubles(scope.Find("w")->tensor());
  for (double v : w0) REQUIRE(v >= 0.5);
  auto plan = (*exec)->Prepare((*m)->main().global_block(), scope);
  REQUIRE(plan.ok());
  for (int i = 0; i < steps; ++i) REQUIRE((*plan)->Run().ok());
  return {w0, testing::ToDoubles(scope.Find("w")->tensor())};
}

void ExpectEach(const std::vector<double>& w0, const std::vector<double>& w, double (*f)(double), double tol = 1e-6) {
  REQUIRE(w0.size() == w.size());
  for (size_t i = 0; i < w.size(); ++i) CHECK(w[i] == doctest::Approx(f(w0[i])).epsilon(tol));
}

TEST_CASE("optimizer: sgd, momentum and nesterov follow their closed forms") {
  auto [a0, a] = Train("optimizer{type=sgd,lr=0.1}", 1);
  ExpectEach(a0, a, [](double w) { return 0.8 * w; });
  // v1 = 2w0, w1 = 0.8w0; v2 = 0.9 * 2w0 + 2 * 0.8w0 = 3.4w0, w2 = 0.8w0 - 0.34w0.
  auto [b0, b] = Train("optimizer{type=momentum,lr=0.1,momentum=0.9}", 2);
  ExpectEach(b0, b, [](double w) { return 0.46 * w; });
  // Nesterov: w1 = w0 - lr * (g + mu * v1) = w0 - 0.1 * (2w0 + 0.9 * 2w0) = 0.62w0.
  auto [c0, c] = Train("optimizer{type=momentum,lr=0.1,momentum=0.9,nesterov=true}", 1);
  ExpectEach(c0, c, [](double w) { return 0.62 * w; });
}

TEST_CASE("optimizer: adam's first step moves each weight by about lr against its gradient") {
  auto [w0, w] = Train("optimizer{type=adam,lr=0.01}", 1);
  for (size_t i = 0; i < w.size(); ++i) {
    double g = 2 * w0[i];
    double expected = w0[i] - 0.01 * g / (std::fabs(g) + 1e-8);  // bias-corrected m / sqrt(v) = sign(g)
    CHECK(w[i] == doctest::Approx(expected).epsilon(1e-5));
  }
}

TEST_CASE("optimizer: weight decay, learning-rate multipliers and global-norm clipping") {
  auto [a0, a] = Train("optimizer{type=sgd,lr=0.1,weight_decay=0.5}", 1);
  ExpectEach(a0, a, [](double w) { return w - 0.1 * (2 * w + 0.5 * w); });
  auto [b0, b] = Train("optimizer{type=sgd,lr=0.1}", 1, R"pb(attrs { name: "learning_rate" type: STRING s: "0.5" })pb");
  ExpectEach(b0, b, [](double w) { return w - 0.05 * 2 * w; });
  auto [c0, c] = Train("optimizer{type=sgd,lr=1,clip_norm=0.01}", 1);
  double norm = 0;
  for (double w : c0) norm += 4 * w * w;
  norm = std::sqrt(norm);
  REQUIRE(norm > 0.01);  // the clip is active
  for (size_t i = 0; i < c.size(); ++i) CHECK(c[i] == doctest::Approx(c0[i] - 2 * c0[i] * 0.01 / norm).epsilon(1e-5));
}

}  // namespace
}  // namespace paddlec::passes
