// conditional_block: runs its sub-block only when the condition holds, and the ops after it see
// what the sub-block produced (shapes included).
#include <doctest/doctest.h>

#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

constexpr char kProgram[] = R"pb(
blocks {
  idx: 0
  parent_idx: -1
  vars { name: "cond" type { type: LOD_TENSOR lod_tensor { tensor { data_type: BOOL dims: 1 } } } }
  vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 } } } }
  vars { name: "y" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 } } } }
  ops {
    type: "conditional_block"
    inputs { parameter: "Cond" arguments: "cond" }
    inputs { parameter: "Input" arguments: "x" }
    outputs { parameter: "Out" arguments: "y" }
    attrs { name: "sub_block" type: BLOCK block_idx: 1 }
    attrs { name: "is_scalar_condition" type: BOOLEAN b: true }
  }
  ops { type: "softmax" inputs { parameter: "X" arguments: "y" } outputs { parameter: "Out" arguments: "p" } }
}
blocks {
  idx: 1
  parent_idx: 0
  ops { type: "relu" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "y" } }
}
)pb";

std::unique_ptr<ir::Module> Compile(const std::string& text) {
  auto m = testing::CompileText(text, "validate,infer-shape", "cond.pbtxt");
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().Render()));
  return std::move(m).value();
}

TEST_CASE("conditional_block runs its sub-block only when the condition holds") {
  auto m = Compile(kProgram);
  // Compile time: the sub-block was inferred before the softmax after the op.
  auto p_dims = ir::VarDims(*m->main().global_block().FindVar("p"));
  CHECK(*p_dims == Dims{-1, 3});

  auto exec = exec::Executor::Create(Place::CPU());
  REQUIRE(exec.ok());
  runtime::Scope scope;
  auto& dev = (*exec)->device();
  REQUIRE(dev.CopyFromHost(MakeTensor<float>({2, 3}, {-1, 2, 0, 3, -3, 1}), scope.Var("x").tensor()).ok());
  REQUIRE(dev.CopyFromHost(MakeTensor<bool>({1}, {true}), scope.Var("cond").tensor()).ok());
  auto plan = (*exec)->Prepare(m->main().global_block(), scope);
  REQUIRE(plan.ok());
  Status st = (*plan)->Run();
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  CHECK(ToVector<float>(scope.Find("y")->tensor()) == std::vector<float>{0, 2, 0, 3, 0, 1});
  CHECK(scope.Find("p")->tensor().dims() == Dims{2, 3});

  // A larger batch: the sub-block produces a new shape and the softmax after it follows.
  REQUIRE(dev.CopyFromHost(RandomTensor(DType::kFloat32, {4, 3}, 3), scope.Var("x").tensor()).ok());
  REQUIRE((*plan)->Run().ok());
  CHECK(scope.Find("p")->tensor().dims() == Dims{4, 3});

  // Condition false: y keeps its previous value.
  std::vector<float> before = ToVector<float>(scope.Find("y")->tensor());
  REQUIRE(dev.CopyFromHost(MakeTensor<bool>({1}, {false}), scope.Var("cond").tensor()).ok());
  REQUIRE(dev.CopyFromHost(RandomTensor(DType::kFloat32, {4, 3}, 4), scope.Var("x").tensor()).ok());
  REQUIRE((*plan)->Run().ok());
  CHECK(ToVector<float>(scope.Find("y")->tensor()) == before);
}

TEST_CASE("conditional_block: a missing or misplaced sub-block is a validation error") {
  std::string missing = kProgram;
  missing.replace(missing.find("block_idx: 1"), 12, "block_idx: 4");
  auto m = ir::ParseModule(missing, ir::Format::kText, "cond.pbtxt");
  REQUIRE(m.ok());
  passes::PassManager pm;
  REQUIRE(pm.AddPipeline("validate").ok());
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**m, ctx);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().Render() ==
        "error: cond.pbtxt:13:5: block 0, op 0 (conditional_block): attribute 'sub_block' refers to sub-block 4, "
        "but the program has 2 blocks\n");
}

TEST_CASE("conditional_block's gradient block is the backward pass's, not a grad maker's") {
  auto m = Compile(kProgram);
  const ops::OpInfo* info = ops::GlobalOpRegistry().Find("conditional_block");
  std::unordered_set<std::string> no_grad;
  ops::GradMakerContext g(m->main().global_block().desc().ops(0), no_grad, ops::GlobalOpRegistry());
  Status st = info->grad_maker()(g);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "conditional_block's gradient block is made by the backward pass (src/passes/backward.cc), not by a grad "
        "maker");
}

}  // namespace
}  // namespace paddlec::testing
