// The rewriting passes must not change what a program computes: LeNet compiled for inference with
// and without fuse-conv-bn-act gives the same outputs on the same parameters and inputs.
#include <doctest/doctest.h>

#include "paddlec/core/file.h"
#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"

namespace paddlec::passes {
namespace {

std::unique_ptr<ir::Module> Compile(const std::string& pipeline) {
  auto m = ir::LoadModule(std::string(PADDLEC_SOURCE_DIR) + "/configs/lenet.pbtxt");
  REQUIRE(m.ok());
  PassManager pm;
  REQUIRE(pm.AddPipeline(pipeline).ok());
  PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**m, ctx);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  return std::move(m).value();
}

TEST_CASE("fuse-conv-bn-act keeps LeNet's inference outputs") {
  auto plain = Compile("validate,infer-shape,for-test,init-params");
  auto fused = Compile("validate,infer-shape,for-test,fuse-conv-bn-act,init-params");
  int convs = 0;
  for (const auto& op : fused->main().global_block().desc().ops()) {
    CHECK(op.type() != "batch_norm");
    convs += op.type() == "fused_conv2d_bn_act";
  }
  CHECK(convs == 2);

  auto exec = exec::Executor::Create(Place::CPU(), {.seed = 3});
  REQUIRE(exec.ok());
  runtime::Scope root;
  REQUIRE((*exec)->RunOnce(plain->startup().global_block(), root).ok());
  // Non-trivial statistics, so the folding is really exercised.
  for (const char* v : {"conv1.bn.mean", "conv1.bn.variance", "conv1.bn.scale", "conv1.bn.bias", "conv2.bn.mean",
                        "conv2.bn.variance", "conv2.bn.scale", "conv2.bn.bias"}) {
    runtime::Tensor& t = root.Find(v)->tensor();
    testing::Tensor r = testing::RandomTensor(DType::kFloat32, t.dims(), std::hash<std::string>{}(v), 0.5, 1.5);
    REQUIRE((*exec)->device().CopyFromHost(r, t).ok());
  }
  runtime::Scope& a = root.NewChild();
  runtime::Scope& b = root.NewChild();
  testing::Tensor img = testing::RandomTensor(DType::kFloat32, {5, 1, 28, 28}, 11, 0, 1);
  testing::Tensor label = testing::Cast(testing::FullTensor<double>({5, 1}, 3.0), DType::kInt64);
  for (runtime::Scope* s : {&a, &b}) {
    REQUIRE((*exec)->device().CopyFromHost(img, s->Var("img").tensor()).ok());
    REQUIRE((*exec)->device().CopyFromHost(label, s->Var("label").tensor()).ok());
  }
  REQUIRE((*exec)->RunOnce(plain->main().global_block(), a).ok());
  REQUIRE((*exec)->RunOnce(fused->main().global_block(), b).ok());
  testing::ExpectClose(b.Find("prob")->tensor(), a.Find("prob")->tensor(), {1e-5, 1e-4}, "prob, fused vs unfused");
  testing::ExpectClose(b.Find("loss")->tensor(), a.Find("loss")->tensor(), {1e-5, 1e-5}, "loss, fused vs unfused");
}

TEST_CASE("for-test refuses a training program") {
  auto m = ir::LoadModule(std::string(PADDLEC_SOURCE_DIR) + "/configs/mlp.pbtxt");
  REQUIRE(m.ok());
  PassManager pm;
  REQUIRE(pm.AddPipeline("validate,infer-shape,backward{loss=loss},for-test").ok());
  PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**m, ctx);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "for-test needs a forward program, but this one has backward ops");
}

}  // namespace
}  // namespace paddlec::passes
