// The data-parallel pass end to end. The "2 ranks" case runs under `mpirun -np 2` (ctest entry
// data_parallel_mpi_test, scripts/cmake/tests.cmake): each rank trains configs/mlp.pbtxt one step on
// its half of a batch of 2B samples, and its averaged gradients and updated parameters must equal
// those of one process training on all 2B. Skipping the allreduce leaves each rank its own half's
// gradient, and not averaging doubles it: both differ from the reference by far more than the
// tolerance (1e-5 relative + 1e-6 absolute, for float32 sums taken in another order).
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/runtime/comm.h"
#include "testing/op_tester.h"

namespace paddlec::passes {
namespace {

using runtime::Tensor;

constexpr char kTrain[] = "validate,infer-shape,backward{loss=loss},optimizer{type=sgd,lr=0.1},init-params";
const std::vector<std::string> kParams = {"fc1.w", "fc1.b", "fc2.w", "fc2.b", "fc3.w", "fc3.b"};

std::unique_ptr<ir::Module> Compile(const std::string& pipeline) {
  auto m = ir::LoadModule(std::string(PADDLEC_SOURCE_DIR) + "/configs/mlp.pbtxt");
  REQUIRE(m.ok());
  PassManager pm;
  REQUIRE(pm.AddPipeline(pipeline).ok());
  PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**m, ctx);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  return std::move(*m);
}

/// Samples [begin, end) of a fixed pseudo-random batch (images and labels).
std::pair<Tensor, Tensor> Batch(int64_t begin, int64_t end) {
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> pixel(0, 1);
  std::vector<float> img;
  std::vector<int64_t> label;
  for (int64_t i = 0; i < end; ++i) {
    for (int p = 0; p < 784; ++p) {
      float v = pixel(gen);
      if (i >= begin) img.push_back(v);
    }
    int64_t l = static_cast<int64_t>(gen() % 10);
    if (i >= begin) label.push_back(l);
  }
  return {testing::MakeTensor<float>({end - begin, 784}, img), testing::MakeTensor<int64_t>({end - begin, 1}, label)};
}

/// One training step on samples [begin, end): the parameters' gradients and updated values.
std::map<std::string, std::vector<double>> Step(ir::Module& m, int64_t begin, int64_t end) {
  auto exec = exec::Executor::Create(Place::CPU(), {.num_threads = 1, .seed = 5});
  REQUIRE(exec.ok());
  runtime::Scope scope;
  Status st = (*exec)->RunOnce(m.startup().global_block(), scope);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  auto [img, label] = Batch(begin, end);
  scope.Var("img").tensor() = img;
  scope.Var("label").tensor() = label;
  auto plan = (*exec)->Prepare(m.main().global_block(), scope);
  REQUIRE(plan.ok());
  st = (*plan)->Run();
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  std::map<std::string, std::vector<double>> out;
  for (const auto& p : kParams) {
    out[p] = testing::ToDoubles(scope.Find(p)->tensor());
    out[p + "@GRAD"] = testing::ToDoubles(scope.Find(p + "@GRAD")->tensor());
  }
  return out;
}

void ExpectClose(const std::map<std::string, std::vector<double>>& got,
                 const std::map<std::string, std::vector<double>>& want) {
  for (const auto& [name, w] : want) {
    const auto& g = got.at(name);
    REQUIRE(g.size() == w.size());
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < w.size(); ++i)
      if (!(std::fabs(g[i] - w[i]) <= 1e-6 + 1e-5 * std::fabs(w[i])) && bad++ == 0) first = i;
    CHECK_MESSAGE(bad == 0, name << ": " << bad << " of " << w.size() << " values differ, first [" << first
                                 << "]: " << g[first] << " vs " << w[first]);
  }
}

TEST_CASE("data-parallel: 2 ranks of batch B step like 1 process on the 2B batch (run under mpirun -np 2)" *
          doctest::skip(runtime::LauncherWorldSize() != 2)) {
  auto world = runtime::WorldCommunicator();
  REQUIRE(world.ok());
  REQUIRE((*world)->size() == 2);
  REQUIRE((*world)->backend() == "mpi");
  int rank = (*world)->rank();
  constexpr int64_t kB = 16;
  auto dp = Compile(std::string(kTrain) + ",data-parallel{nranks=2,bucket_mb=0.5}");
  auto ranked = Step(*dp, rank * kB, (rank + 1) * kB);
  auto reference = Step(*Compile(kTrain), 0, 2 * kB);
  ExpectClose(ranked, reference);
}

TEST_CASE("data-parallel: one process (no launcher) is a group of one and the pass changes nothing") {
  if (runtime::LauncherWorldSize() != 1) return;
  auto world = runtime::WorldCommunicator();
  REQUIRE(world.ok());
  CHECK((*world)->backend() == "local");
  CHECK((*world)->size() == 1);
  // nranks=2 in one process: the collectives are identities, the seed is halved, so every gradient
  // is half the single-process one (what the mpirun case's ranks average away).
  auto dp = Step(*Compile(std::string(kTrain) + ",data-parallel{nranks=2,bucket_mb=0.5}"), 0, 8);
  auto ref = Step(*Compile(kTrain), 0, 8);
  for (const auto& p : kParams) {
    auto g = dp[p + "@GRAD"], w = ref[p + "@GRAD"];
    for (size_t i = 0; i < w.size(); ++i) REQUIRE(g[i] == doctest::Approx(w[i] / 2).epsilon(1e-5).scale(1e-6));
  }
}

}  // namespace
}  // namespace paddlec::passes
