// Tests of the runtime: allocator, scope, plans (steady state, re-inference, op ranges, errors).
#include <doctest/doctest.h>

#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/runtime/executor.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::runtime {
namespace {

using testing::MakeTensor;
using testing::ToVector;

TEST_CASE("CpuCachingAllocator reuses freed blocks and counts system allocations") {
  auto alloc = CpuCachingAllocator::Create();
  CHECK(CpuCachingAllocator::BinSize(1) == 64);
  CHECK(CpuCachingAllocator::BinSize(100) == 128);
  CHECK(CpuCachingAllocator::BinSize(5000) == 5120);
  CHECK(CpuCachingAllocator::BinSize(1 << 20) == (1 << 20));
  CHECK(CpuCachingAllocator::BinSize((1 << 20) + 1) == (1 << 20) + (1 << 18));
  void* a = *alloc->Allocate(1000);
  CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  alloc->Free(a, 1000);
  void* b = *alloc->Allocate(1000);
  CHECK(a == b);  // same bin: the cached block comes back
  CHECK(alloc->stats().system_allocs == 1);
  alloc->Free(b, 1000);
  CHECK(alloc->stats().bytes_in_use == 0);
  CHECK(alloc->stats().bytes_cached == 1024);
  alloc->ReleaseCache();
  CHECK(alloc->stats().bytes_cached == 0);
}

TEST_CASE("Tensor buffers outlive their allocator handle and are reused when they fit") {
  Tensor t(DType::kFloat32, {4, 4});
  {
    auto alloc = CpuCachingAllocator::Create();
    REQUIRE(t.Allocate(*alloc).ok());
    void* p = t.raw_data();
    t.set_dims({2, 4});
    REQUIRE(t.Allocate(*alloc).ok());
    CHECK(t.raw_data() == p);  // smaller shape: same buffer
    Tensor alias;
    alias.ShareBufferWith(t);
    REQUIRE(t.Allocate(*alloc).ok());
    CHECK(t.raw_data() != p);  // shared buffers are never written under another tensor
  }
  t.data<float>()[0] = 1.f;  // the buffer keeps the allocator alive
}

TEST_CASE("Scopes look variables up through their parents") {
  Scope root;
  root.Var("w").tensor().set_dims({3});
  Scope& child = root.NewChild();
  CHECK(child.Find("w") == root.FindLocal("w"));
  CHECK(child.FindLocal("w") == nullptr);
  child.Var("tmp");
  CHECK(root.Find("tmp") == nullptr);
  CHECK(root.LocalNames() == std::vector<std::string>{"w"});
  Scope& other = root.NewChild();
  CHECK(root.DeleteChild(&child));
  Scope unrelated;
  CHECK_FALSE(root.DeleteChild(&unrelated));
  CHECK(other.Find("w") == root.FindLocal("w"));
}

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
}  // namespace paddlec::runtime
