// The nn family's registrations: complete (doc, shape function, float32/float64 CPU kernels, a
// gradient) and consistent, and the gradient makers emit only the gradients that exist.
#include <algorithm>

#include "paddlec/ops/op_registry.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

const char* const kForwardOps[] = {"conv2d",
                                   "depthwise_conv2d",
                                   "conv2d_transpose",
                                   "pool2d",
                                   "batch_norm",
                                   "layer_norm",
                                   "dropout",
                                   "lookup_table_v2",
                                   "pad3d",
                                   "nearest_interp_v2",
                                   "bilinear_interp_v2",
                                   "rnn"};

TEST_CASE("nn ops are registered completely and consistently") {
  const ops::OpRegistry& r = ops::GlobalOpRegistry();
  std::vector<std::string> problems = r.CheckConsistency();
  for (const char* type : kForwardOps) {
    CAPTURE(type);
    for (const std::string& op : {std::string(type), std::string(type) + "_grad"}) {
      CAPTURE(op);
      const ops::OpInfo* info = r.Find(op);
      REQUIRE(info != nullptr);
      CHECK_FALSE(info->proto().comment().empty());
      CHECK((info->infer_shape() != nullptr));
      CHECK(info->FindKernel(DeviceType::kCPU, DType::kFloat32) != nullptr);
      CHECK(info->FindKernel(DeviceType::kCPU, DType::kFloat64) != nullptr);
      for (const auto& a : info->proto().attrs()) CHECK_FALSE(a.comment().empty());
      for (const auto& s : info->proto().inputs()) CHECK_FALSE(s.comment().empty());
      for (const std::string& p : problems) CHECK_MESSAGE(p.find(op + ":") != 0, p);
    }
    CHECK(r.Find(type)->grad_maker() != nullptr);
    CHECK(r.Find(std::string(type) + "_grad")->forward_type() == type);
  }
}

/// Output slots of the grad op the default maker emits for `fwd`.
std::vector<std::string> GradOutputs(const ops::pb::OpDesc& fwd) {
  const ops::OpRegistry& r = ops::GlobalOpRegistry();
  std::unordered_set<std::string> no_grad;
  ops::GradMakerContext ctx(fwd, no_grad, r);
  REQUIRE(r.Find(fwd.type())->grad_maker()(ctx).ok());
  REQUIRE(ctx.emitted().size() == 1);
  std::vector<std::string> out;
  for (const auto& s : ctx.emitted()[0].outputs()) out.push_back(s.parameter());
  std::sort(out.begin(), out.end());
  return out;
}

ops::pb::OpDesc Desc(const std::string& type, std::vector<std::string> inputs, std::vector<std::string> outputs) {
  ops::pb::OpDesc op;
  op.set_type(type);
  for (const auto& s : inputs) ops::AddInput(op, s, {s + "_var"});
  for (const auto& s : outputs) ops::AddOutput(op, s, {s + "_var"});
  return op;
}

TEST_CASE("nn gradient makers skip ids, seeds and running statistics") {
  CHECK(GradOutputs(Desc("batch_norm", {"X", "Scale", "Bias", "Mean", "Variance", "MomentumTensor"},
                         {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"})) ==
        std::vector<std::string>{"Bias@GRAD", "Scale@GRAD", "X@GRAD"});
  CHECK(GradOutputs(Desc("lookup_table_v2", {"W", "Ids"}, {"Out"})) == std::vector<std::string>{"W@GRAD"});
  CHECK(GradOutputs(Desc("dropout", {"X", "Seed"}, {"Out", "Mask"})) == std::vector<std::string>{"X@GRAD"});
  CHECK(GradOutputs(Desc("layer_norm", {"X"}, {"Y", "Mean", "Variance"})) == std::vector<std::string>{"X@GRAD"});
  CHECK(GradOutputs(Desc("conv2d", {"Input", "Filter"}, {"Output"})) ==
        std::vector<std::string>{"Filter@GRAD", "Input@GRAD"});
  CHECK(GradOutputs(Desc("pad3d", {"X", "Paddings"}, {"Out"})) == std::vector<std::string>{"X@GRAD"});
  CHECK(GradOutputs(Desc("bilinear_interp_v2", {"X", "OutSize", "Scale"}, {"Out"})) ==
        std::vector<std::string>{"X@GRAD"});
  CHECK(GradOutputs(Desc("rnn", {"Input", "PreState", "WeightList", "SequenceLength"},
                         {"Out", "DropoutState", "State", "Reserve"})) ==
        std::vector<std::string>{"Input@GRAD", "PreState@GRAD", "WeightList@GRAD"});
}

}  // namespace
}  // namespace paddlec::testing
