// fused_elemwise_activation against the two ops it replaces, computed here in double: both functor
// orders, every supported function, and the errors for unsupported lists and shapes.
#include <cmath>

#include "math/math_test_util.h"

namespace paddlec::testing {
namespace {

using math_test::FromDoubles;

double Unary(const std::string& f, double v, double scale) {
  if (f == "relu") return std::max(v, 0.0);
  if (f == "tanh") return std::tanh(v);
  if (f == "sigmoid") return 1.0 / (1.0 + std::exp(-v));
  return v * scale;  // scale
}
double Binary(const std::string& f, double x, double y) {
  if (f == "elementwise_add") return x + y;
  if (f == "elementwise_sub") return x - y;
  return x * y;  // elementwise_mul
}

TEST_CASE("fused_elemwise_activation computes unary(binary(X, Y)) and binary(X, unary(Y))") {
  const Dims dims{3, 70000};  // more than one chunk of the parallel loop
  for (const char* u : {"relu", "tanh", "sigmoid", "scale"})
    for (const char* b : {"elementwise_add", "elementwise_sub", "elementwise_mul"})
      for (bool unary_outside : {true, false}) {
        CAPTURE(u);
        CAPTURE(b);
        CAPTURE(unary_outside);
        Tensor x = RandomTensor(DType::kFloat32, dims, 1), y = RandomTensor(DType::kFloat32, dims, 2);
        OpTest t("fused_elemwise_activation");
        t.Input("X", x).Input("Y", y).Output("Out");
        t.Attr("functor_list", unary_outside ? std::vector<std::string>{u, b} : std::vector<std::string>{b, u});
        if (std::string(u) == "scale") t.Attr("scale", 0.5f);
        REQUIRE_OK(t.Run());
        std::vector<double> xs = ToDoubles(x), ys = ToDoubles(y), want(xs.size());
        for (size_t i = 0; i < xs.size(); ++i)
          want[i] = unary_outside ? Unary(u, Binary(b, xs[i], ys[i]), 0.5) : Binary(b, xs[i], Unary(u, ys[i], 0.5));
        t.ExpectOutput("Out", FromDoubles<float>(dims, want), {1e-6, 1e-6});
      }
}

TEST_CASE("fused_elemwise_activation rejects unsupported functor lists and broadcasting") {
  OpTest t("fused_elemwise_activation");
  t.Input("X", RandomTensor(DType::kFloat32, {2, 3}, 1)).Input("Y", RandomTensor(DType::kFloat32, {2, 3}, 2));
  t.Output("Out").Attr("functor_list", std::vector<std::string>{"gelu", "elementwise_add"});
  Status st = t.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "functor_list [gelu, elementwise_add] is not supported: expected one of elementwise_add, elementwise_sub, "
        "elementwise_mul and one of relu, tanh, sigmoid, scale");

  OpTest b("fused_elemwise_activation");
  b.Input("X", RandomTensor(DType::kFloat32, {2, 3}, 1)).Input("Y", RandomTensor(DType::kFloat32, {3}, 2));
  b.Output("Out").Attr("functor_list", std::vector<std::string>{"relu", "elementwise_add"});
  st = b.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "X has shape [2, 3] but Y has shape [3]: paddlec's fused_elemwise_activation needs operands of one shape "
        "(keep broadcasting ops unfused)");
}

}  // namespace
}  // namespace paddlec::testing
