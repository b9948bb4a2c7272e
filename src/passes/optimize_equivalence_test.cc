// -O1 and -O2 must not change what a program computes: MLP and LeNet, for inference and for
// training (three Adam steps), give the same outputs and parameters with fuse-fc and plan-memory as
// without, up to float reassociation; and they do fuse and share what they claim to.
#include <doctest/doctest.h>

#include <set>

#include "paddlec/driver/driver.h"
#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"

namespace paddlec::passes {
namespace {

std::unique_ptr<ir::Module> Compile(const std::string& config, bool train, bool inference, int opt_level) {
  auto m = ir::LoadModule(std::string(PADDLEC_SOURCE_DIR) + "/configs/" + config);
  REQUIRE(m.ok());
  driver::CompileOptions o;
  o.train = train;
  o.inference = inference;
  o.opt_level = opt_level;
  o.optimizer = "adam";
  o.lr = 0.01;
  o.loss = train ? "loss" : "";
  PassManager pm({.verify_each = true});  // whatever a pass emits must still validate
  REQUIRE(pm.AddPipeline(driver::CompilePipeline(o)).ok());
  PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**m, ctx);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  return std::move(m).value();
}

int Count(const ir::Module& m, const std::string& type) {
  int n = 0;
  for (const auto& op : m.main().global_block().desc().ops()) n += op.type() == type;
  return n;
}

/// Runs `steps` steps of `m` on fixed inputs from the same initial parameters and returns the
/// named variables' final values (and bytes the executor's allocator had in use at its peak).
struct Outcome {
  std::map<std::string, testing::Tensor> values;
  uint64_t peak_bytes = 0;
};
Outcome RunSteps(ir::Module& m, const Dims& img_dims, int steps, const std::vector<std::string>& fetch) {
  auto exec = exec::Executor::Create(Place::CPU(), {.num_threads = 2, .seed = 3});
  REQUIRE(exec.ok());
  runtime::Scope root;
  REQUIRE((*exec)->RunOnce(m.startup().global_block(), root).ok());
  runtime::Scope& s = root.NewChild();
  REQUIRE((*exec)
              ->device()
              .CopyFromHost(testing::RandomTensor(DType::kFloat32, img_dims, 11, 0, 1), s.Var("img").tensor())
              .ok());
  testing::Tensor label =
      testing::Cast(testing::RandomTensor(DType::kFloat64, {img_dims[0], 1}, 5, 0, 9.99), DType::kInt64);
  REQUIRE((*exec)->device().CopyFromHost(label, s.Var("label").tensor()).ok());
  auto plan = (*exec)->Prepare(m.main().global_block(), s);
  REQUIRE(plan.ok());
  for (int i = 0; i < steps; ++i) REQUIRE((*plan)->Run().ok());
  Outcome out;
  auto alloc = runtime::CpuCachingAllocator::Create();
  for (const auto& name : fetch) {
    runtime::Variable* v = s.Find(name);
    REQUIRE_MESSAGE(v != nullptr, name);
    testing::Tensor t;
    REQUIRE((*exec)->device().CopyToHost(v->tensor(), t, *alloc).ok());
    out.values[name] = std::move(t);
  }
  out.peak_bytes = (*exec)->device().allocator().stats().peak_bytes_in_use;
  return out;
}

void ExpectSame(const Outcome& got, const Outcome& want, testing::Tolerance tol) {
  for (const auto& [name, t] : want.values) testing::ExpectClose(got.values.at(name), t, tol, name);
}

TEST_CASE("fuse-fc keeps the MLP's inference outputs, with three fc ops instead of nine") {
  auto plain = Compile("mlp.pbtxt", false, true, 0);
  auto fused = Compile("mlp.pbtxt", false, true, 1);
  CHECK(Count(*fused, "fc") == 3);
  CHECK(Count(*fused, "mul") == 0);
  CHECK(Count(*fused, "relu") == 0);
  CHECK(Count(*fused, "elementwise_add") == 0);
  ExpectSame(RunSteps(*fused, {6, 784}, 1, {"prob", "loss"}), RunSteps(*plain, {6, 784}, 1, {"prob", "loss"}),
             {1e-5, 1e-4});
}

TEST_CASE("-O2 keeps LeNet's inference outputs with fewer bytes allocated") {
  auto plain = Compile("lenet.pbtxt", false, true, 0);
  auto opt = Compile("lenet.pbtxt", false, true, 2);
  CHECK(Count(*opt, "fused_conv2d_bn_act") == 2);
  CHECK(Count(*opt, "fc") == 2);
  auto a = RunSteps(*plain, {5, 1, 28, 28}, 2, {"prob", "loss"});
  auto b = RunSteps(*opt, {5, 1, 28, 28}, 2, {"prob", "loss"});
  ExpectSame(b, a, {1e-5, 1e-4});
  CHECK(b.peak_bytes < a.peak_bytes);
}

std::vector<std::string> Parameters(const ir::Module& m) {
  std::vector<std::string> names(m.compiled().parameters().begin(), m.compiled().parameters().end());
  names.push_back("loss");
  return names;
}

TEST_CASE("-O2 training (fuse-fc, plan-memory) gives the -O0 parameters after three Adam steps") {
  for (const char* config : {"mlp.pbtxt", "lenet.pbtxt"}) {
    CAPTURE(config);
    const bool lenet = std::string(config) == "lenet.pbtxt";
    const Dims img = lenet ? Dims{8, 1, 28, 28} : Dims{8, 784};
    auto plain = Compile(config, true, false, 0);
    auto opt = Compile(config, true, false, 2);
    CHECK(opt->main().global_block().desc().vars_size() < plain->main().global_block().desc().vars_size());
    auto a = RunSteps(*plain, img, 3, Parameters(*plain));
    auto b = RunSteps(*opt, img, 3, Parameters(*plain));
    ExpectSame(b, a, {1e-5, 1e-4});
    CHECK(b.peak_bytes < a.peak_bytes);
  }
}

TEST_CASE("plan-memory leaves feeds, the loss, gradients and program outputs under their names") {
  auto m = Compile("lenet.pbtxt", true, false, 2);
  std::set<std::string> vars;
  for (const auto& v : m->main().global_block().desc().vars()) vars.insert(v.name());
  for (const char* name : {"img", "label", "loss", "prob"}) CHECK_MESSAGE(vars.count(name), name);
  for (const auto& pg : m->compiled().param_grads()) CHECK_MESSAGE(vars.count(pg.grad()), pg.grad());
}

}  // namespace
}  // namespace paddlec::passes
