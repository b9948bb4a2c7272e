// Registration completeness of the tensor and random families: docs, slot and attribute comments,
// shape functions, float32 CPU kernels, gradient decisions, and a consistent registry.
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

TEST_CASE("tensor and random family registrations are complete") {
  const ops::OpRegistry& r = ops::GlobalOpRegistry();
  const char* ops_list[] = {"fill_constant",
                            "fill_zeros_like",
                            "assign",
                            "cast",
                            "reshape2",
                            "reshape2_grad",
                            "transpose2",
                            "transpose2_grad",
                            "flatten_contiguous_range",
                            "flatten_contiguous_range_grad",
                            "concat",
                            "concat_grad",
                            "split",
                            "top_k_v2",
                            "top_k_v2_grad",
                            "squeeze2",
                            "squeeze2_grad",
                            "unsqueeze2",
                            "unsqueeze2_grad",
                            "shape",
                            "stack",
                            "stack_grad",
                            "slice",
                            "slice_grad",
                            "gather",
                            "gather_grad",
                            "arg_max",
                            "uniform_random",
                            "gaussian_random"};
  for (const char* type : ops_list) {
    CAPTURE(type);
    const ops::OpInfo* info = r.Find(type);
    REQUIRE(info != nullptr);
    CHECK_FALSE(info->proto().comment().empty());
    for (const auto& v : info->proto().inputs()) CHECK_FALSE(v.comment().empty());
    for (const auto& v : info->proto().outputs()) CHECK_FALSE(v.comment().empty());
    for (const auto& a : info->proto().attrs()) CHECK_FALSE(a.comment().empty());
    CHECK(static_cast<bool>(info->infer_shape()));
    CHECK(info->FindKernel(DeviceType::kCPU, DType::kFloat32) != nullptr);
    CHECK(info->FindKernel(DeviceType::kCPU, DType::kFloat64) != nullptr);
    CHECK((info->no_gradient() || static_cast<bool>(info->grad_maker())));
  }
  // Problems name the op first ("concat: ...", "concat_grad is not declared ...").
  for (const std::string& problem : r.CheckConsistency())
    for (const char* type : ops_list) {
      std::string t = type;
      CHECK_MESSAGE(!(problem.rfind(t + ":", 0) == 0 || problem.rfind(t + " ", 0) == 0 ||
                      problem == "op " + t + " registered twice"),
                    problem);
    }
}

}  // namespace
}  // namespace paddlec::testing
