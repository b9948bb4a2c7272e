// The data-parallel pass end to end. The "2 ranks" cases run under `mpirun -np 2` (ctest entry
// data_parallel_mpi_test, scripts/cmake/tests.cmake): each rank trains one step on its half of a
// batch of 2B samples, and its averaged gradients and updated parameters must equal those of one
// process training on all 2B. Skipping the allreduce leaves each rank its own half's gradient, and
// not averaging doubles it: both differ from the reference by far more than the tolerance (1e-5
// relative + 1e-6 absolute, for float32 sums taken in another order). For LeNet's batch_norm ops the
// same holds only with sync_bn (sync_batch_norm: statistics of the global batch), also for the
// normalized outputs and the running statistics, to 1e-4 relative + 1e-5 absolute; without it the
// case checks that they differ by more than 1e-2.
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

std::unique_ptr<ir::Module> Compile(const std::string& pipeline, const std::string& config = "configs/mlp.pbtxt") {
  auto m = ir::LoadModule(std::string(PADDLEC_SOURCE_DIR) + "/" + config);
  REQUIRE(m.ok());
  PassManager pm;
  REQUIRE(pm.AddPipeline(pipeline).ok());
  PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**m, ctx);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  return std::move(*m);
}

/// Samples [begin, end) of a fixed pseudo-random batch (images, as [n, 784] or [n, 1, 28, 28], and labels).
std::pair<Tensor, Tensor> Batch(int64_t begin, int64_t end, bool nchw = false) {
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
  Dims dims = nchw ? Dims{end - begin, 1, 28, 28} : Dims{end - begin, 784};
  return {testing::MakeTensor<float>(dims, img), testing::MakeTensor<int64_t>({end - begin, 1}, label)};
}

/// One training step on samples [begin, end): the values of `vars` after it (by default the MLP's
/// parameters and their gradients).
std::map<std::string, std::vector<double>> Step(ir::Module& m, int64_t begin, int64_t end,
                                                std::vector<std::string> vars = {}, bool nchw = false) {
  if (vars.empty())
    for (const auto& p : kParams) vars.insert(vars.end(), {p, p + "@GRAD"});
  auto exec = exec::Executor::Create(Place::CPU(), {.num_threads = 1, .seed = 5});
  REQUIRE(exec.ok());
  runtime::Scope scope;
  Status st = (*exec)->RunOnce(m.startup().global_block(), scope);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  auto [img, label] = Batch(begin, end, nchw);
  scope.Var("img").tensor() = img;
  scope.Var("label").tensor() = label;
  auto plan = (*exec)->Prepare(m.main().global_block(), scope);
  REQUIRE(plan.ok());
  st = (*plan)->Run();
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  std::map<std::string, std::vector<double>> out;
  for (const auto& v : vars) {
    const runtime::Variable* var = scope.Find(v);
    REQUIRE_MESSAGE(var != nullptr, v);
    out[v] = testing::ToDoubles(var->tensor());
  }
  return out;
}

/// The largest |got - want| over all values of all variables.
double MaxDifference(const std::map<std::string, std::vector<double>>& got,
                     const std::map<std::string, std::vector<double>>& want) {
  double most = 0;
  for (const auto& [name, w] : want)
    for (size_t i = 0; i < w.size(); ++i) most = std::max(most, std::fabs(got.at(name)[i] - w[i]));
  return most;
}

void ExpectClose(const std::map<std::string, std::vector<double>>& got,
                 const std::map<std::string, std::vector<double>>& want, double atol = 1e-6, double rtol = 1e-5) {
  for (const auto& [name, w] : want) {
    const auto& g = got.at(name);
    REQUIRE(g.size() == w.size());
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < w.size(); ++i)
      if (!(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i])) && bad++ == 0) first = i;
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

TEST_CASE(
    "data-parallel: 2 ranks with sync_bn normalize, differentiate and update LeNet's batch_norm like 1 process "
    "on the 2B batch (run under mpirun -np 2)" *
    doctest::skip(runtime::LauncherWorldSize() != 2)) {
  auto world = runtime::WorldCommunicator();
  REQUIRE(world.ok());
  REQUIRE((*world)->size() == 2);
  int rank = (*world)->rank();
  constexpr int64_t kB = 8;
  constexpr char kLeNet[] = "configs/lenet.pbtxt";
  auto reference_module = Compile(kTrain, kLeNet);
  std::vector<std::string> params, vars;
  for (const auto& pg : reference_module->compiled().param_grads()) {
    params.push_back(pg.param());
    vars.insert(vars.end(), {pg.param(), pg.grad()});
  }
  for (const char* bn : {"conv1.bn", "conv2.bn"})
    for (const char* v : {".mean", ".variance"}) vars.push_back(std::string(bn) + v);
  // The normalized outputs and the gradient flowing into the first batch_norm: this rank's rows.
  const std::vector<std::string> rows = {"conv1.bn", "conv2.bn", "conv1.conv@GRAD"};
  vars.insert(vars.end(), rows.begin(), rows.end());
  REQUIRE(params.size() >= 8);  // 2 conv filters, 2 batch_norm scales and biases, 2 fc layers

  auto reference = Step(*reference_module, 0, 2 * kB, vars, true);
  for (const auto& r : rows) {  // rank r's samples are rows [r * B, (r + 1) * B) of the 2B batch
    std::vector<double>& all = reference[r];
    size_t per_rank = all.size() / 2;
    all = std::vector<double>(all.begin() + rank * per_rank, all.begin() + (rank + 1) * per_rank);
  }
  std::string dp = std::string(kTrain) + ",data-parallel{nranks=2,sync_bn=true}";
  auto synced = Step(*Compile(dp, kLeNet), rank * kB, (rank + 1) * kB, vars, true);
  // Dividing by the batch's standard deviation magnifies the rounding of float32 sums taken in
  // another order: 1e-5 absolute + 1e-4 relative (per-rank statistics miss by more than 1e-2).
  ExpectClose(synced, reference, 1e-5, 1e-4);

  // Per-rank statistics normalize differently: the test would notice a sync_batch_norm that is not.
  auto local =
      Step(*Compile(std::string(kTrain) + ",data-parallel{nranks=2}", kLeNet), rank * kB, (rank + 1) * kB, vars, true);
  CHECK(MaxDifference(local, reference) > 1e-2);
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

TEST_CASE("data-parallel: in one process sync_batch_norm is batch_norm, bit for bit, forward, backward and update") {
  if (runtime::LauncherWorldSize() != 1) return;
  constexpr char kLeNet[] = "configs/lenet.pbtxt";
  auto synced = Compile(std::string(kTrain) + ",data-parallel{nranks=2,sync_bn=true}", kLeNet);
  int rewritten = 0;
  for (const auto& op : synced->main().global_block().desc().ops())
    rewritten += op.type() == "sync_batch_norm" || op.type() == "sync_batch_norm_grad";
  CHECK(rewritten == 4);
  auto plain = Compile(std::string(kTrain) + ",data-parallel{nranks=2}", kLeNet);
  std::vector<std::string> vars = {"conv1.bn", "conv2.bn", "conv1.conv@GRAD", "conv1.bn.mean", "conv2.bn.variance"};
  for (const auto& pg : plain->compiled().param_grads()) vars.insert(vars.end(), {pg.param(), pg.grad()});
  auto got = Step(*synced, 0, 6, vars, true), want = Step(*plain, 0, 6, vars, true);
  for (const auto& v : vars) CHECK_MESSAGE(got.at(v) == want.at(v), v);
}

}  // namespace
}  // namespace paddlec::passes
