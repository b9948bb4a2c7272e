// Registry-wide checks: every op is complete (doc, shape function, CPU float32 kernel, gradient or
// an explicit no-gradient mark), registrations are consistent, and dump-opprotos output parses back
// to the same protos.
#include <doctest/doctest.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "paddlec.pb.h"
#include "paddlec/driver/driver.h"
#include "paddlec/ir/paddle_export.h"
#include "paddlec/ops/op_checker.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

// Ops whose outputs are sized by the outside world or by a sub-block, not by a shape function: the
// plan re-prepares the ops after them when their outputs change shape.
const std::set<std::string> kNoShapeFunction = {"feed", "fetch", "conditional_block", "while"};

TEST_CASE("every registered op is complete") {
  const OpRegistry& r = GlobalOpRegistry();
  CHECK(r.CheckConsistency() == std::vector<std::string>{});
  for (const OpInfo* info : r.All()) {
    CAPTURE(info->type());
    CHECK_FALSE(info->proto().comment().empty());
    for (const auto& v : info->proto().inputs()) CHECK_MESSAGE(!v.comment().empty(), "input " << v.name());
    for (const auto& v : info->proto().outputs()) CHECK_MESSAGE(!v.comment().empty(), "output " << v.name());
    for (const auto& a : info->proto().attrs()) CHECK_MESSAGE(!a.comment().empty(), "attr " << a.name());
    bool has_shape_fn = info->infer_shape() != nullptr;
    if (!kNoShapeFunction.count(info->type())) CHECK_MESSAGE(has_shape_fn, "no shape function");
    bool has_f32_kernel = info->FindKernel(DeviceType::kCPU, DType::kFloat32) != nullptr;
    CHECK_MESSAGE(has_f32_kernel, "no cpu:float32 kernel");
    bool has_grad = info->grad_maker() != nullptr;
    CHECK_MESSAGE(has_grad != info->no_gradient(),
                  "needs exactly one of a gradient maker and NoGradient()");
    if (!info->forward_type().empty()) CHECK(info->type() == info->forward_type() + "_grad");
  }
}

// paddlec's own ops, which PaddlePaddle does not have: a .pdmodel must not hold them (compile writes
// it unfused; ir::ExportForPaddle refuses them). A new op is either one of PaddlePaddle's (by its
// legacy name, ir::IsPaddleOp) or listed here.
const std::set<std::string> kPaddlecOnly = {"fused_conv2d_bn_act"};

TEST_CASE("every registered op is PaddlePaddle's or listed as paddlec's own") {
  for (const OpInfo* info : GlobalOpRegistry().All()) {
    CAPTURE(info->type());
    CHECK_MESSAGE(ir::IsPaddleOp(info->type()) != (kPaddlecOnly.count(info->type()) > 0),
                  (kPaddlecOnly.count(info->type())
                       ? "listed as paddlec's own, but PaddlePaddle has it"
                       : "not a PaddlePaddle op: add its legacy name to src/ir/pir/pir_op_table.cc, or list it here"));
  }
}

TEST_CASE("dump-opprotos JSON parses back to the registered protos") {
  std::ostringstream out;
  REQUIRE(driver::RunDumpOpProtos({.format = "json"}, out).ok());
  paddlec::proto::OpRegistryDump dump;
  auto st = google::protobuf::util::JsonStringToMessage(out.str(), &dump);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  const OpRegistry& r = GlobalOpRegistry();
  REQUIRE(dump.ops_size() == static_cast<int>(r.All().size()));
  std::string previous;
  for (const auto& d : dump.ops()) {
    CAPTURE(d.proto().type());
    CHECK(d.proto().type() > previous);  // sorted, stable
    previous = d.proto().type();
    const OpInfo* info = r.Find(d.proto().type());
    REQUIRE(info != nullptr);
    CHECK(google::protobuf::util::MessageDifferencer::Equals(d.proto(), info->proto()));
    CHECK(d.kernels_size() == static_cast<int>(info->KernelKeys().size()));
    bool has_grad = info->grad_maker() != nullptr;
    CHECK(has_grad == d.has_grad_op_type());
  }
  CHECK(dump.common_attrs_size() == static_cast<int>(r.common_attrs().size()));
  // The output is stable: a second dump is identical.
  std::ostringstream again;
  REQUIRE(driver::RunDumpOpProtos({.format = "json"}, again).ok());
  CHECK(again.str() == out.str());
}

TEST_CASE("dump-opprotos filters by op and rejects unknown ones") {
  std::ostringstream out;
  REQUIRE(driver::RunDumpOpProtos({.format = "text", .ops = {"softmax"}}, out).ok());
  CHECK(out.str().find("type: \"softmax\"") != std::string::npos);
  CHECK(out.str().find("type: \"relu\"") == std::string::npos);
  std::ostringstream bad;
  Status st = driver::RunDumpOpProtos({.format = "json", .ops = {"sofmax"}}, bad);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "no op named 'sofmax' is registered");
  std::ostringstream md;
  REQUIRE(driver::RunDumpOpProtos({.format = "md", .ops = {"leaky_relu"}}, md).ok());
  CHECK(md.str().find("| `alpha` | FLOAT | `0.02` |  | Slope for negative inputs. |") != std::string::npos);
}

TEST_CASE("GreaterThan / LessThan bounds are exclusive: declared, described and checked") {
  OpRegistry r;
  r.Add("bounded")
      .Doc("An op with exclusive bounds.")
      .Attr("scale", 1.0f, "Strictly positive.")
      .GreaterThan(0.0)
      .Attr("rate", 0.5f, "In [0, 1).")
      .Min(0)
      .LessThan(1)
      .Attr("count", 1, "Below 4.")
      .LessThan(4);
  const OpInfo* info = r.Find("bounded");
  REQUIRE(info != nullptr);
  const auto& scale = info->proto().attrs(0);
  const auto& rate = info->proto().attrs(1);
  const auto& count = info->proto().attrs(2);
  CHECK(scale.min_exclusive());
  CHECK_FALSE(scale.has_max());
  CHECK_FALSE(rate.min_exclusive());
  CHECK(rate.max_exclusive());
  auto number = [](double v) { return fmt::format("{}", v); };
  CHECK(AttrBoundsText(scale, +number) == "> 0");
  CHECK(AttrBoundsText(rate, +number) == "[0, 1)");
  CHECK(AttrBoundsText(count, +number) == "< 4");

  CHECK(AttrValueProblem(MakeAttr("scale", 0.0f), scale) == "value 0 is out of range: must be > 0");
  CHECK(AttrValueProblem(MakeAttr("scale", -2.0f), scale) == "value -2 is out of range: must be > 0");
  CHECK(AttrValueProblem(MakeAttr("scale", 1e-30f), scale).empty());
  CHECK(AttrValueProblem(MakeAttr("rate", 0.0f), rate).empty());
  CHECK(AttrValueProblem(MakeAttr("rate", 1.0f), rate) == "value 1 is out of range: must be [0, 1)");
  CHECK(AttrValueProblem(MakeAttr("rate", 0.99f), rate).empty());
  CHECK(AttrValueProblem(MakeAttr("count", 4), count) == "value 4 is out of range: must be < 4");
  CHECK(AttrValueProblem(MakeAttr("count", 3), count).empty());

  // A registered op declares one: hard_swish divides by `scale`.
  const OpInfo* hard_swish = GlobalOpRegistry().Find("hard_swish");
  REQUIRE(hard_swish != nullptr);
  const auto& attrs = hard_swish->proto().attrs();
  auto divisor = std::find_if(attrs.begin(), attrs.end(), [](const auto& a) { return a.name() == "scale"; });
  REQUIRE(divisor != attrs.end());
  CHECK(AttrBoundsText(*divisor, +number) == "> 0");
  CHECK(AttrValueProblem(MakeAttr("scale", 0.0f), *divisor) == "value 0 is out of range: must be > 0");
  CHECK(AttrValueProblem(MakeAttr("scale", 6.0f), *divisor).empty());
}

}  // namespace
}  // namespace paddlec::ops
