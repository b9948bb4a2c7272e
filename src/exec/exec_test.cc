// Tests of plans and the executor: steady state, re-inference, op ranges, errors.
#include <doctest/doctest.h>

#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::exec {
namespace {

using runtime::Scope;
using runtime::Tensor;

using testing::MakeTensor;
using testing::ToVector;

std::unique_ptr<ir::Module> Compile(const std::string& text) {
  auto m = testing::CompileText(text, "validate,infer-shape", "t.pbtxt");
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().Render()));
  return std::move(m).value();
}

constexpr char kChain[] = R"pb(
blocks {
  idx: 0
  parent_idx: -1
  vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 } } } }
  ops { type: "relu" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "h" } }
  ops { type: "softmax" inputs { parameter: "X" arguments: "h" } outputs { parameter: "Out" arguments: "p" } }
  ops { type: "tanh" inputs { parameter: "X" arguments: "p" } outputs { parameter: "Out" arguments: "t" } }
}
)pb";

TEST_CASE("A plan allocates nothing in the steady state and re-infers shapes on a new batch size") {
  auto m = Compile(kChain);
  auto exec = Executor::Create(Place::CPU(), {.num_threads = 1});
  REQUIRE(exec.ok());
  Scope scope;
  REQUIRE((*exec)->device().CopyFromHost(MakeTensor<float>({2, 3}, {1, -2, 3, 0, 0, 0}), scope.Var("x").tensor()).ok());
  auto plan = (*exec)->Prepare(m->main().global_block(), scope);
  REQUIRE(plan.ok());
  REQUIRE((*plan)->Run().ok());
  CHECK((*plan)->shape_inferences() == 1);
  auto allocs = (*exec)->device().allocator().stats().allocs;
  for (int i = 0; i < 10; ++i) REQUIRE((*plan)->Run().ok());
  CHECK((*exec)->device().allocator().stats().allocs == allocs);
  CHECK((*plan)->shape_inferences() == 1);
  CHECK(scope.Find("t")->tensor().dims() == Dims{2, 3});

  // A batch of 5: shapes are inferred again and the outputs follow.
  REQUIRE((*exec)->device().CopyFromHost(testing::RandomTensor(DType::kFloat32, {5, 3}, 1), scope.Var("x").tensor()).ok());
  REQUIRE((*plan)->Run().ok());
  CHECK((*plan)->shape_inferences() == 2);
  CHECK(scope.Find("t")->tensor().dims() == Dims{5, 3});
  std::vector<float> p = ToVector<float>(scope.Find("p")->tensor());
  CHECK(p[0] + p[1] + p[2] == doctest::Approx(1.0));
}

constexpr char kResize[] = R"pb(
  blocks {
    idx: 0
    parent_idx: -1
    vars {
      name: "x"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: 1 dims: 1 dims: 2 dims: 2 } }
      }
    }
    vars {
      name: "size"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: INT32 dims: 2 } }
      }
    }
    ops {
      type: "nearest_interp_v2"
      inputs { parameter: "X" arguments: "x" }
      inputs { parameter: "OutSize" arguments: "size" }
      outputs { parameter: "Out" arguments: "y" }
      attrs { name: "align_corners" type: BOOLEAN b: false }
    }
    ops {
      type: "relu"
      inputs { parameter: "X" arguments: "y" }
      outputs { parameter: "Out" arguments: "z" }
    }
  }
)pb";

TEST_CASE("An op whose output size is an input's value resizes its output, and the ops after it follow") {
  auto m = Compile(kResize);
  auto exec = Executor::Create(Place::CPU(), {.num_threads = 1});
  REQUIRE(exec.ok());
  Scope scope;
  auto& device = (*exec)->device();
  REQUIRE(device.CopyFromHost(MakeTensor<float>({1, 1, 2, 2}, {1, -2, 3, -4}), scope.Var("x").tensor()).ok());
  REQUIRE(device.CopyFromHost(MakeTensor<int32_t>({2}, {2, 3}), scope.Var("size").tensor()).ok());
  auto plan = (*exec)->Prepare(m->main().global_block(), scope);
  REQUIRE(plan.ok());
  REQUIRE((*plan)->Run().ok());
  CHECK(scope.Find("z")->tensor().dims() == Dims{1, 1, 2, 3});
  CHECK(ToVector<float>(scope.Find("z")->tensor()) == std::vector<float>{1, 1, 0, 3, 3, 0});
  // Same input shapes, new values: the plan's prepared shapes must not be reused.
  REQUIRE(device.CopyFromHost(MakeTensor<int32_t>({2}, {1, 4}), scope.Var("size").tensor()).ok());
  REQUIRE((*plan)->Run().ok());
  CHECK(scope.Find("y")->tensor().dims() == Dims{1, 1, 1, 4});
  CHECK(scope.Find("z")->tensor().dims() == Dims{1, 1, 1, 4});
  CHECK(ToVector<float>(scope.Find("z")->tensor()) == std::vector<float>{1, 1, 0, 0});
}

// fill_constant's ShapeTensor (PaddlePaddle's RNN initial states): Out's shape is the tensor's values,
// which change between runs while its dims do not; its kernel sizes Out (OutputDimsFromKernel) and the
// plan prepares the steps after it again.
constexpr char kShapeFromValues[] = R"pb(
  blocks {
    idx: 0
    parent_idx: -1
    vars {
      name: "s"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: INT32 dims: 2 } }
      }
    }
    ops {
      type: "fill_constant"
      inputs { parameter: "ShapeTensor" arguments: "s" }
      outputs { parameter: "Out" arguments: "f" }
      attrs { name: "value" type: FLOAT f: 2 }
    }
    ops {
      type: "relu"
      inputs { parameter: "X" arguments: "f" }
      outputs { parameter: "Out" arguments: "r" }
    }
  }
)pb";

TEST_CASE("A shape tensor's new values resize fill_constant's output and the ops after it") {
  auto m = Compile(kShapeFromValues);
  // At compile time only the rank is known.
  auto f = ir::VarDims(*m->main().global_block().FindVar("r"));
  REQUIRE(f.ok());
  CHECK(*f == Dims{-1, -1});
  auto exec = Executor::Create(Place::CPU(), {.num_threads = 1});
  REQUIRE(exec.ok());
  Scope scope;
  REQUIRE((*exec)->device().CopyFromHost(MakeTensor<int32_t>({2}, {2, 3}), scope.Var("s").tensor()).ok());
  auto plan = (*exec)->Prepare(m->main().global_block(), scope);
  REQUIRE(plan.ok());
  REQUIRE((*plan)->Run().ok());
  CHECK(scope.Find("r")->tensor().dims() == Dims{2, 3});
  // Same values: nothing is prepared again, nothing allocated.
  auto allocs = (*exec)->device().allocator().stats().allocs;
  REQUIRE((*plan)->Run().ok());
  CHECK((*exec)->device().allocator().stats().allocs == allocs);
  // New values in a tensor of the same dims: Out and everything after it follow.
  REQUIRE((*exec)->device().CopyFromHost(MakeTensor<int32_t>({2}, {4, 1}), scope.Var("s").tensor()).ok());
  REQUIRE((*plan)->Run().ok());
  CHECK(scope.Find("f")->tensor().dims() == Dims{4, 1});
  CHECK(scope.Find("r")->tensor().dims() == Dims{4, 1});
  CHECK(ToVector<float>(scope.Find("r")->tensor()) == std::vector<float>{2, 2, 2, 2});
  // A negative size is an error of the op, at run time.
  REQUIRE((*exec)->device().CopyFromHost(MakeTensor<int32_t>({2}, {4, -1}), scope.Var("s").tensor()).ok());
  Status st = (*plan)->Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "the shape tensors give [4, -1], with the negative size -1 at index 1");
  CHECK(st.error().location().op == 0);
}

TEST_CASE("Op ranges run parts of a block over one scope") {
  auto m = Compile(kChain);
  auto exec = Executor::Create(Place::CPU());
  REQUIRE(exec.ok());
  Tensor x = MakeTensor<float>({1, 3}, {0.5f, -1.f, 2.f});
  Scope whole, parts;
  REQUIRE((*exec)->device().CopyFromHost(x, whole.Var("x").tensor()).ok());
  REQUIRE((*exec)->device().CopyFromHost(x, parts.Var("x").tensor()).ok());
  REQUIRE((*exec)->RunOnce(m->main().global_block(), whole).ok());
  REQUIRE((*exec)->RunOnce(m->main().global_block(), parts, {.op_begin = 0, .op_end = 2}).ok());
  CHECK(parts.FindLocal("t") == nullptr);
  REQUIRE((*exec)->RunOnce(m->main().global_block(), parts, {.op_begin = 2, .op_end = 3}).ok());
  CHECK(ToVector<float>(parts.Find("t")->tensor()) == ToVector<float>(whole.Find("t")->tensor()));
  auto bad = (*exec)->Prepare(m->main().global_block(), parts, {.op_begin = 2, .op_end = 9});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message() == "op range [2, 9) is outside block 0 which has 3 ops");
}

TEST_CASE("Running without a fed input names the op, the slot and the variable") {
  auto m = Compile(kChain);
  auto exec = Executor::Create(Place::CPU());
  Scope scope;
  Status st = (*exec)->RunOnce(m->main().global_block(), scope);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().Render() ==
        "error: t.pbtxt:6:3: block 0, op 0 (relu): input 'X' reads variable 'x', which holds no value\n"
        "note: feed it (--feed x=FILE.npy), initialize it in the startup program, or load it with --params\n");
}

TEST_CASE("A missing kernel is reported with the kernels that exist") {
  auto m = Compile(R"pb(
blocks {
  idx: 0
  parent_idx: -1
  vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 dims: 3 } } } }
  ops { type: "relu" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "y" } }
}
)pb");
  auto exec = Executor::Create(Place::CPU());
  Scope scope;
  auto plan = (*exec)->Prepare(m->main().global_block(), scope);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.error().message() == "op 'relu' has no cpu kernel for int64");
  CHECK(plan.error().notes().at(0) == "kernels available: cpu:float32, cpu:float64");
}

TEST_CASE("GPU executors fail with a reason on machines without one") {
  auto gpu = Executor::Create(Place::CUDA(0));
  if (gpu.ok()) {
    MESSAGE("a GPU is present; skipping the no-GPU error check");
    return;
  }
  CHECK(gpu.error().code() == ErrorCode::kUnavailable);
  CHECK_FALSE(gpu.error().message().empty());
}

}  // namespace
}  // namespace paddlec::exec
