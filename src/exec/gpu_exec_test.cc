// GPU runtime behaviour (skipped with a message where no GPU is usable): the steady state allocates
// nothing, parameters initialized on the GPU are bit-identical to the CPU's (same Philox stream) and
// save to identical files, a training program runs on the GPU as on the CPU, and data-parallel
// programs in one process (NCCL with one rank) give the same bits with sync_batch_norm as with
// batch_norm, and with their allreduces on the communication stream as on the compute stream.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "paddlec/core/file.h"
#include "paddlec/driver/driver.h"
#include "paddlec/exec/executor.h"
#include "paddlec/io/params.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/runtime/comm.h"
#include "testing/op_tester.h"

namespace paddlec::exec {
namespace {

using runtime::CpuCachingAllocator;
using runtime::Scope;
using runtime::Tensor;

std::unique_ptr<Executor> GpuOrSkip() {
  auto gpu = Executor::Create(Place::CUDA(0), {.seed = 9});
  if (!gpu.ok()) {
    MESSAGE("GPU test skipped: " << gpu.error().message());
    return nullptr;
  }
  return std::move(gpu).value();
}

std::unique_ptr<ir::Module> TrainingMlp() {
  auto m = ir::LoadModule(std::string(PADDLEC_SOURCE_DIR) + "/configs/mlp.pbtxt");
  REQUIRE(m.ok());
  driver::CompileOptions c;
  c.train = true;
  c.loss = "loss";
  c.optimizer = "adam";
  c.lr = 0.001;
  passes::PassManager pm;
  REQUIRE(pm.AddPipeline(driver::CompilePipeline(c)).ok());
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**m, ctx);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  return std::move(m).value();
}

void Feed(Executor& e, Scope& s, int64_t batch) {
  REQUIRE(e.device().CopyFromHost(testing::RandomTensor(DType::kFloat32, {batch, 784}, 3, 0, 1), s.Var("img").tensor()).ok());
  REQUIRE(e.device().CopyFromHost(testing::Cast(testing::RandomTensor(DType::kFloat64, {batch, 1}, 4, 0, 10), DType::kInt64),
                                  s.Var("label").tensor())
              .ok());
}

TEST_CASE("gpu: a training step allocates no device memory after the first") {
  auto gpu = GpuOrSkip();
  if (!gpu) return;
  auto m = TrainingMlp();
  Scope scope;
  REQUIRE(gpu->RunOnce(m->startup().global_block(), scope).ok());
  Feed(*gpu, scope, 64);
  auto plan = gpu->Prepare(m->main().global_block(), scope);
  REQUIRE(plan.ok());
  REQUIRE((*plan)->Run().ok());
  REQUIRE(gpu->device().Synchronize().ok());
  auto mallocs = gpu->device().allocator().stats().system_allocs;
  for (int i = 0; i < 10; ++i) REQUIRE((*plan)->Run().ok());
  REQUIRE(gpu->device().Synchronize().ok());
  CHECK(gpu->device().allocator().stats().system_allocs == mallocs);
  MESSAGE("peak GPU memory of an MLP training step at batch 64: "
          << gpu->device().allocator().stats().peak_bytes_in_use << " bytes");
}

TEST_CASE("gpu: parameters initialized on the GPU equal the CPU's and save to identical files") {
  auto gpu = GpuOrSkip();
  if (!gpu) return;
  auto cpu = Executor::Create(Place::CPU(), {.seed = 9});
  REQUIRE(cpu.ok());
  auto m = TrainingMlp();
  Scope gs, cs;
  REQUIRE(gpu->RunOnce(m->startup().global_block(), gs).ok());
  REQUIRE((*cpu)->RunOnce(m->startup().global_block(), cs).ok());
  auto dir = std::filesystem::temp_directory_path() / ("paddlec_gpu_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto& p = m->compiled().parameters();
  std::vector<std::string> names(p.begin(), p.end());
  REQUIRE(io::SaveParams((dir / "gpu").string(), names, gs, gpu->device()).ok());
  REQUIRE(io::SaveParams((dir / "cpu").string(), names, cs, (*cpu)->device()).ok());
  CHECK(*ReadFile((dir / "gpu").string()) == *ReadFile((dir / "cpu").string()));
  // Loading a params file onto the GPU and saving it again round-trips the bytes.
  Scope loaded;
  REQUIRE(io::LoadParams((dir / "cpu").string(), names, loaded, gpu->device(), &m->main().global_block()).ok());
  REQUIRE(io::SaveParams((dir / "again").string(), names, loaded, gpu->device()).ok());
  CHECK(*ReadFile((dir / "again").string()) == *ReadFile((dir / "cpu").string()));
  std::filesystem::remove_all(dir);
}

TEST_CASE("gpu: a training step gives the CPU's loss and updates") {
  auto gpu = GpuOrSkip();
  if (!gpu) return;
  auto cpu = Executor::Create(Place::CPU(), {.seed = 9});
  auto m = TrainingMlp();
  Scope gs, cs;
  REQUIRE(gpu->RunOnce(m->startup().global_block(), gs).ok());
  REQUIRE((*cpu)->RunOnce(m->startup().global_block(), cs).ok());
  Feed(*gpu, gs, 32);
  Feed(**cpu, cs, 32);
  auto gp = gpu->Prepare(m->main().global_block(), gs);
  auto cp = (*cpu)->Prepare(m->main().global_block(), cs);
  REQUIRE(gp.ok());
  REQUIRE(cp.ok());
  for (int step = 0; step < 3; ++step) {
    REQUIRE((*gp)->Run().ok());
    REQUIRE((*cp)->Run().ok());
  }
  auto host = CpuCachingAllocator::Create();
  for (const char* v : {"loss", "fc1.w", "fc3.b", "fc2.w_moment1_0"}) {
    CAPTURE(v);
    Tensor g;
    REQUIRE(gpu->device().CopyToHost(gs.Find(v)->tensor(), g, *host).ok());
    testing::ExpectClose(g, cs.Find(v)->tensor(), {1e-5, 1e-3}, std::string(v) + " on gpu vs cpu");
  }
}

/// LeNet compiled for training with the data-parallel pass (`dp_options`) for 2 ranks: in one
/// process its collectives are NCCL's over one rank, so every allreduce copies.
std::unique_ptr<ir::Module> DataParallelLeNet(const std::string& dp_options) {
  auto m = ir::LoadModule(std::string(PADDLEC_SOURCE_DIR) + "/configs/lenet.pbtxt");
  REQUIRE(m.ok());
  passes::PassManager pm;
  REQUIRE(pm.AddPipeline("validate,infer-shape,backward{loss=loss},optimizer{type=sgd,lr=0.1},init-params,"
                         "data-parallel{nranks=2" +
                         dp_options + "}")
              .ok());
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**m, ctx);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  return std::move(m).value();
}

/// Two training steps of `m` on the GPU: the values of `vars` after them, as doubles.
std::map<std::string, std::vector<double>> TwoGpuSteps(Executor& gpu, ir::Module& m,
                                                       const std::vector<std::string>& vars) {
  Scope scope;
  REQUIRE(gpu.RunOnce(m.startup().global_block(), scope).ok());
  REQUIRE(gpu.device().CopyFromHost(testing::RandomTensor(DType::kFloat32, {6, 1, 28, 28}, 3, 0, 1),
                                    scope.Var("img").tensor())
              .ok());
  REQUIRE(gpu.device().CopyFromHost(
                         testing::Cast(testing::RandomTensor(DType::kFloat64, {6, 1}, 4, 0, 10), DType::kInt64),
                         scope.Var("label").tensor())
              .ok());
  auto plan = gpu.Prepare(m.main().global_block(), scope);
  REQUIRE(plan.ok());
  for (int step = 0; step < 2; ++step) {
    Status st = (*plan)->Run();
    REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  }
  auto host = CpuCachingAllocator::Create();
  std::map<std::string, std::vector<double>> out;
  for (const auto& v : vars) {
    const runtime::Variable* var = scope.Find(v);
    REQUIRE_MESSAGE(var != nullptr, v);
    Tensor t;
    REQUIRE(gpu.device().CopyToHost(var->tensor(), t, *host).ok());
    out[v] = testing::ToDoubles(t);
  }
  return out;
}

std::vector<std::string> LeNetVars(ir::Module& m) {
  std::vector<std::string> vars = {"loss", "conv1.bn", "conv2.bn", "conv1.conv@GRAD", "conv1.bn.mean",
                                   "conv2.bn.variance"};
  for (const auto& pg : m.compiled().param_grads()) vars.insert(vars.end(), {pg.param(), pg.grad()});
  return vars;
}

TEST_CASE("gpu: in one process sync_batch_norm is batch_norm, bit for bit, forward, backward and update") {
  auto gpu = GpuOrSkip();
  if (!gpu || runtime::LauncherWorldSize() != 1) return;
  auto synced = DataParallelLeNet(",sync_bn=true");
  int rewritten = 0;
  for (const auto& op : synced->main().global_block().desc().ops())
    rewritten += op.type() == "sync_batch_norm" || op.type() == "sync_batch_norm_grad";
  REQUIRE(rewritten == 4);
  auto plain = DataParallelLeNet("");
  auto vars = LeNetVars(*plain);
  auto got = TwoGpuSteps(*gpu, *synced, vars), want = TwoGpuSteps(*gpu, *plain, vars);
  for (const auto& v : vars) CHECK_MESSAGE(got.at(v) == want.at(v), v);
}

TEST_CASE("gpu: allreduces on the communication stream give the compute stream's bits") {
  auto gpu = GpuOrSkip();
  if (!gpu || runtime::LauncherWorldSize() != 1) return;
  auto overlapped = DataParallelLeNet(",sync_bn=true");
  auto in_order = DataParallelLeNet(",sync_bn=true");
  int flipped = 0;
  for (auto& op : *in_order->main().global_block().desc().mutable_ops()) {
    if (op.type() != "c_allreduce_sum") continue;
    for (auto& a : *op.mutable_attrs())
      if (a.name() == "use_calc_stream") {
        CHECK_FALSE(a.b());  // what the data-parallel pass writes
        a.set_b(true);
        ++flipped;
      }
  }
  REQUIRE(flipped > 0);
  auto vars = LeNetVars(*overlapped);
  auto want = TwoGpuSteps(*gpu, *in_order, vars);
  auto got = TwoGpuSteps(*gpu, *overlapped, vars);
  for (const auto& v : vars) CHECK_MESSAGE(got.at(v) == want.at(v), v);
}

}  // namespace
}  // namespace paddlec::exec
