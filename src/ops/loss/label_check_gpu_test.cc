// How the GPU loss kernels surface labels outside the classes (loss_cuda.cc): the first run of a kernel
// fails at once with the CPU's message; later runs never wait, write NaN where the label is bad, and
// the error surfaces at the next run. Skipped (with a message) where no GPU is usable.
#include <cmath>

#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

std::unique_ptr<ir::Module> SwceProgram() {
  auto module = ir::ParseModule(R"txt(
main_program { blocks { idx: 0 parent_idx: -1
  vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 4 dims: 5 } } } }
  vars { name: "label" type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 dims: 4 dims: 1 } } } }
  ops { type: "softmax_with_cross_entropy" inputs { parameter: "Logits" arguments: "x" }
        inputs { parameter: "Label" arguments: "label" } outputs { parameter: "Softmax" arguments: "sm" }
        outputs { parameter: "Loss" arguments: "loss" } }
} })txt",
                                ir::Format::kText, "swce.pbtxt");
  REQUIRE_OK(module.status());
  passes::PassManager pm;
  REQUIRE_OK(pm.AddPipeline("validate,infer-shape"));
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  REQUIRE_OK(pm.Run(**module, ctx));
  return std::move(module).value();
}

constexpr char kBadMessage[] =
    "Label holds 5 at index 2, outside the 5 classes [0, 5) along axis 1 of Logits (ignore_index is -100)";

TEST_CASE("gpu: a bad label fails the first run at once and later runs one step late, without waiting") {
  auto gpu = exec::Executor::Create(Place::CUDA(0));
  if (!gpu.ok()) {
    MESSAGE("GPU test skipped: " << gpu.error().message());
    return;
  }
  auto m = SwceProgram();
  runtime::DeviceContext& dev = (*gpu)->device();
  const Tensor x = RandomTensor(DType::kFloat32, {4, 5}, 3, -2, 2);
  const Tensor good = MakeTensor<int64_t>({4, 1}, {0, 4, 2, 1});
  const Tensor bad = MakeTensor<int64_t>({4, 1}, {0, 4, 5, 1});

  {  // A bad label in the first run: the CPU's error, at once.
    runtime::Scope scope;
    REQUIRE_OK(dev.CopyFromHost(x, scope.Var("x").tensor()));
    REQUIRE_OK(dev.CopyFromHost(bad, scope.Var("label").tensor()));
    auto plan = (*gpu)->Prepare(m->main().global_block(), scope);
    REQUIRE_OK(plan.status());
    Status st = (*plan)->Run();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == kBadMessage);
  }

  runtime::Scope scope;
  REQUIRE_OK(dev.CopyFromHost(x, scope.Var("x").tensor()));
  REQUIRE_OK(dev.CopyFromHost(good, scope.Var("label").tensor()));
  auto plan = (*gpu)->Prepare(m->main().global_block(), scope);
  REQUIRE_OK(plan.status());
  REQUIRE_OK((*plan)->Run());
  // The steady state: the bad label is not reported by its own run, which does not wait...
  REQUIRE_OK(dev.CopyFromHost(bad, scope.Var("label").tensor()));
  REQUIRE_OK((*plan)->Run());
  REQUIRE_OK(dev.Synchronize());
  Tensor loss;
  REQUIRE_OK(dev.CopyToHost(scope.FindLocal("loss")->tensor(), loss, HostAllocator()));
  const auto l = ToVector<float>(loss);
  CHECK(std::isfinite(l[0]));
  CHECK(std::isnan(l[2]));  // ...but its loss entry is NaN...
  // ...and the next run fails with the CPU's message.
  Status st = (*plan)->Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == kBadMessage);
}

}  // namespace
}  // namespace paddlec::testing
