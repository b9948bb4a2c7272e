// feed and fetch, run inside small programs with feed/fetch holder variables as PaddlePaddle saves them.
#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

// feed col 0 -> x (float32 [-1, 3]), feed col 1 -> ids (int64 [-1]); fetch x at col 1, ids at col 0.
constexpr char kFeedFetchProgram[] = R"txt(
main_program {
  blocks {
    idx: 0 parent_idx: -1
    vars { name: "feed" type { type: FEED_MINIBATCH } persistable: true }
    vars { name: "fetch" type { type: FETCH_LIST } persistable: true }
    vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 } } } }
    vars { name: "ids" type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 dims: -1 } } } }
    ops { type: "feed" inputs { parameter: "X" arguments: "feed" } outputs { parameter: "Out" arguments: "x" }
          attrs { name: "col" type: INT i: 0 } }
    ops { type: "feed" inputs { parameter: "X" arguments: "feed" } outputs { parameter: "Out" arguments: "ids" }
          attrs { name: "col" type: INT i: 1 } }
    ops { type: "fetch" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "fetch" }
          attrs { name: "col" type: INT i: 1 } }
    ops { type: "fetch" inputs { parameter: "X" arguments: "ids" } outputs { parameter: "Out" arguments: "fetch" }
          attrs { name: "col" type: INT i: 0 } }
  }
}
)txt";

std::unique_ptr<ir::Module> Compile(const char* text) {
  auto module = CompileText(text, "validate,infer-shape", "feed_fetch.pbtxt");
  REQUIRE_OK(module.status());
  return std::move(module).value();
}

TEST_CASE("feed and fetch move tensors through the holders, any dtype, any batch") {
  auto module = Compile(kFeedFetchProgram);
  auto exec = exec::Executor::Create(Place::CPU(), {.num_threads = 1});
  REQUIRE_OK(exec.status());
  runtime::Scope scope;
  auto plan = (*exec)->Prepare(module->main().global_block(), scope);
  REQUIRE_OK(plan.status());

  for (int64_t batch : {2, 5}) {
    CAPTURE(batch);
    std::vector<float> xv;
    std::vector<int64_t> idv;
    for (int64_t i = 0; i < batch * 3; ++i) xv.push_back(0.5f * static_cast<float>(i) - 1.f);
    for (int64_t i = 0; i < batch; ++i) idv.push_back((int64_t{1} << 40) + i);  // beyond float precision
    scope.Var("feed").list() = {MakeTensor<float>({batch, 3}, xv), MakeTensor<int64_t>({batch}, idv)};
    REQUIRE_OK((*plan)->Run());
    const auto& fetched = scope.FindLocal("fetch")->list();
    REQUIRE(fetched.size() == 2);
    CHECK(ToVector<int64_t>(fetched[0]) == idv);
    CHECK(ToVector<float>(fetched[1]) == xv);
    CHECK(fetched[1].dims() == Dims{batch, 3});
    // The fetched tensors are copies, not aliases of the program's variables.
    CHECK(fetched[1].raw_data() != scope.FindLocal("x")->tensor().raw_data());
  }
  // feed has no shape function: the new batch it produced re-prepared only the ops after it.
  CHECK((*plan)->shape_inferences() == 1);
}

TEST_CASE("feed keeps a tensor the driver wrote into its output") {
  auto module = Compile(kFeedFetchProgram);
  auto exec = exec::Executor::Create(Place::CPU(), {.num_threads = 1});
  REQUIRE_OK(exec.status());
  runtime::Scope scope;
  // The holder exists (as the driver creates it) but carries nothing; the targets are written directly.
  scope.Var("feed");
  REQUIRE_OK((*exec)->device().CopyFromHost(MakeTensor<float>({1, 3}, {1, 2, 3}), scope.Var("x").tensor()));
  REQUIRE_OK((*exec)->device().CopyFromHost(MakeTensor<int64_t>({1}, {-7}), scope.Var("ids").tensor()));
  auto plan = (*exec)->Prepare(module->main().global_block(), scope);
  REQUIRE_OK(plan.status());
  REQUIRE_OK((*plan)->Run());
  const auto& fetched = scope.FindLocal("fetch")->list();
  REQUIRE(fetched.size() == 2);
  CHECK(ToVector<int64_t>(fetched[0]) == std::vector<int64_t>{-7});
  CHECK(ToVector<float>(fetched[1]) == std::vector<float>{1, 2, 3});
}

TEST_CASE("feed reports a target that was never fed") {
  // Plan::Prepare allocates every output whose dims are known, an unfed feed output included (as a
  // 0-element scalar), so a plan never reaches this check today; the kernel is run directly instead.
  const ops::OpInfo* info = ops::GlobalOpRegistry().Find("feed");
  REQUIRE(info != nullptr);
  ops::pb::OpDesc desc;
  desc.set_type("feed");
  *desc.add_attrs() = ops::MakeAttr("col", 1);
  ops::AttrReader attrs(desc, info);
  auto device = exec::CreateDeviceContext(Place::CPU(), 1);
  REQUIRE_OK(device.status());
  auto kernel = (*info->FindKernel(DeviceType::kCPU, DType::kFloat32))({attrs, 0, device->get()});
  REQUIRE_OK(kernel.status());

  runtime::Variable holder, out;
  holder.list() = {MakeTensor<float>({1, 3}, {1, 2, 3})};
  runtime::Variable* in_vars[] = {&holder};
  runtime::Variable* out_vars[] = {&out};
  ops::KernelContext::SlotTensors ins[] = {in_vars}, outs[] = {out_vars};
  ops::KernelContext ctx(ins, outs, device->get());
  Status st = (*kernel)->Run(ctx);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "feed target at col 1 was not fed: the feed holder has 1 tensor");

  // With a second holder entry the same kernel copies it.
  holder.list().push_back(MakeTensor<int64_t>({2}, {4, 5}));
  REQUIRE_OK((*kernel)->Run(ctx));
  CHECK(ToVector<int64_t>(out.tensor()) == std::vector<int64_t>{4, 5});
}

TEST_CASE("feed and fetch protos: col is required and non-negative, no gradient, no shape function") {
  const ops::OpRegistry& r = ops::GlobalOpRegistry();
  for (const char* type : {"feed", "fetch"}) {
    CAPTURE(type);
    const ops::OpInfo* info = r.Find(type);
    REQUIRE(info != nullptr);
    CHECK(info->no_gradient());
    CHECK_FALSE(static_cast<bool>(info->infer_shape()));
    const auto* col = info->FindAttr("col");
    REQUIRE(col != nullptr);
    CHECK_FALSE(col->has_default_value());
    CHECK(col->min() == 0);
    for (DType t :
         {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32, DType::kBool, DType::kUInt8, DType::kInt8})
      CHECK(info->FindKernel(DeviceType::kCPU, t) != nullptr);
  }
  OpTest t("fetch");
  t.Input("X", MakeTensor<float>({1}, {1})).Output("Out").Attr("col", -1);
  Status st = t.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "attribute 'col' value -1 is out of range: must be >= 0");
}

}  // namespace
}  // namespace paddlec::testing
