// Math ops on shapes chosen to take every launch path of the CUDA kernels (math_cuda_index.h's
// PlanReduce: rows by warp or by block, columns, one pass or chunk partials; sum's chained passes;
// cuBLAS batches split into several calls), checked against double references on every place.
// Without a GPU they run on the CPU only, where they are ordinary (if larger) reference tests.
#include <algorithm>
#include <cmath>
#include <string>

#include "math/math_cuda_index.h"
#include "math/math_test_util.h"

namespace paddlec::testing {
namespace {

using math_test::BinaryRef;
using math_test::FromDoubles;
using math_test::SumTo;

TEST_CASE("reductions on every GPU launch path") {
  struct Case {
    const char* path;
    Dims x;
    std::vector<int> dim;
    Dims kept;
  };
  const Case cases[] = {
      {"rows, a block per chunk, partials", {3, 70000}, {1}, {3, 1}},
      {"rows, a block per chunk, one pass", {1, 3000}, {1}, {1, 1}},
      {"rows, a warp per chunk, partials", {1, 900}, {1}, {1, 1}},
      {"rows, a warp per chunk, one pass", {2000, 40}, {1}, {2000, 1}},
      {"rows over two split dims", {4, 300, 6}, {0, 2}, {1, 300, 1}},
      {"columns, partials", {70000, 3}, {0}, {1, 3}},
      {"columns, kept dims around the reduced one", {5, 1000, 7}, {1}, {5, 1, 7}},
      {"columns, one pass", {4, 40000}, {0}, {1, 40000}},
  };
  for (const Case& c : cases) {
    const std::string path = c.path;
    CAPTURE(path);
    // The plan the GPU takes for this case, so the table keeps covering what its names say.
    const int64_t m = c.kept.Numel(), r = c.x.Numel() / m;
    const bool inner = c.kept.back() == 1;
    const ops::cuda::ReducePlan plan = ops::cuda::PlanReduce(m, r, inner);
    CHECK(plan.rows == (path.rfind("rows", 0) == 0));
    if (path.find("block") != std::string::npos) CHECK(plan.block);
    if (path.find("warp") != std::string::npos) CHECK_FALSE(plan.block);
    if (path.find("partials") != std::string::npos) CHECK(plan.groups > 1);
    if (path.find("one pass") != std::string::npos) CHECK(plan.groups == 1);

    Dims out;
    for (int i = 0; i < c.x.rank(); ++i)
      if (std::find(c.dim.begin(), c.dim.end(), i) == c.dim.end()) out.push_back(c.x[i]);
    for (DType t : {DType::kFloat32, DType::kFloat64}) {
      Tensor x = RandomTensor(t, c.x, 31);
      const std::vector<double> sum = SumTo(ToDoubles(x), c.x, c.kept);
      std::vector<double> mean = sum;
      for (double& v : mean) v /= static_cast<double>(r);
      const double f32 = t == DType::kFloat32 ? 1.0 : 1e-8;
      for (std::string type : {"reduce_sum", "reduce_mean"}) {
        CAPTURE(type);
        OpTest op(type);
        op.Input("X", x).Attr("dim", c.dim).Output("Out");
        REQUIRE_OK(op.Run());
        const bool is_mean = type == "reduce_mean";
        Tensor want = Cast(FromDoubles<double>(out, is_mean ? mean : sum), t);
        op.ExpectOutput("Out", want, {f32 * (is_mean ? 1e-6 : static_cast<double>(r) * 2e-7), f32 * 1e-5});
      }
    }
    Tensor xi = RandomTensor(DType::kInt32, c.x, 32, -1000, 1000);
    OpTest ints("reduce_sum");
    ints.Input("X", xi).Attr("dim", c.dim).Output("Out");
    REQUIRE_OK(ints.Run());
    ints.ExpectOutput("Out", Cast(FromDoubles<double>(out, SumTo(ToDoubles(xi), c.x, c.kept)), DType::kInt32), {0, 0});
  }
}

TEST_CASE("mean of many elements takes chunk partials") {
  Tensor x = RandomTensor(DType::kFloat64, {1 << 20}, 33);
  double s = 0;
  for (double v : ToDoubles(x)) s += v;
  OpTest m("mean");
  m.Input("X", x).Output("Out");
  REQUIRE_OK(m.Run());
  m.ExpectOutput("Out", MakeTensor<double>({}, {s / (1 << 20)}), {1e-15, 1e-9});
}

TEST_CASE("broadcast gradients reduced on every GPU launch path") {
  struct Case {
    const char* path;
    Dims x, y;
    int axis;
    Dims out, xa, ya;
  };
  const Case cases[] = {
      {"Y@GRAD by columns with partials (bias)", {50000, 3}, {3}, -1, {50000, 3}, {50000, 3}, {1, 3}},
      {"Y@GRAD by blocks with partials (per channel)", {2, 3, 40000}, {3}, 1, {2, 3, 40000}, {2, 3, 40000}, {1, 3, 1}},
      {"X@GRAD by rows, Y@GRAD by columns", {3, 1}, {1, 20000}, -1, {3, 20000}, {3, 1}, {1, 20000}},
  };
  for (const Case& c : cases) {
    const std::string path = c.path;
    CAPTURE(path);
    Tensor x = RandomTensor(DType::kFloat64, c.x, 41, 0.5, 2), y = RandomTensor(DType::kFloat64, c.y, 42, 0.5, 2);
    Tensor dout = RandomTensor(DType::kFloat64, c.out, 43);
    const std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y), dv = ToDoubles(dout);

    OpTest mul("elementwise_mul_grad");
    mul.Input("X", x).Input("Y", y).Input("Out@GRAD", dout).Attr("axis", c.axis).Output("X@GRAD").Output("Y@GRAD");
    REQUIRE_OK(mul.Run());
    auto prod = [](double a, double b) { return a * b; };
    const auto dx = BinaryRef(dv, c.out, yv, c.ya, c.out, prod), dy = BinaryRef(dv, c.out, xv, c.xa, c.out, prod);
    mul.ExpectOutput("X@GRAD", FromDoubles<double>(c.x, SumTo(dx, c.out, c.xa)), {1e-10, 1e-10});
    mul.ExpectOutput("Y@GRAD", FromDoubles<double>(c.y, SumTo(dy, c.out, c.ya)), {1e-10, 1e-10});

    // elementwise_div_grad also reads Out: dY = -dOut * Out / Y.
    const auto out = BinaryRef(xv, c.xa, yv, c.ya, c.out, [](double a, double b) { return a / b; });
    OpTest div("elementwise_div_grad");
    div.Input("X", x)
        .Input("Y", y)
        .Input("Out", FromDoubles<double>(c.out, out))
        .Input("Out@GRAD", dout)
        .Attr("axis", c.axis)
        .Output("Y@GRAD");
    REQUIRE_OK(div.Run());
    std::vector<double> g(out.size());
    const auto yo = BinaryRef(out, c.out, yv, c.ya, c.out, [](double o, double b) { return o / b; });
    for (size_t i = 0; i < g.size(); ++i) g[i] = -dv[i] * yo[i];
    div.ExpectOutput("Y@GRAD", FromDoubles<double>(c.y, SumTo(g, c.out, c.ya)), {1e-10, 1e-10});
  }
}

TEST_CASE("sum of more inputs than one GPU pass takes") {
  const int count = 101;  // kSumMaxInputs (64) + 37: two chained passes
  std::vector<Tensor> xs, ints;
  std::vector<double> ref(257, 0.0);
  std::vector<int64_t> iref(257, 0);
  for (int k = 0; k < count; ++k) {
    xs.push_back(RandomTensor(DType::kFloat32, {257}, 100 + k));
    ints.push_back(RandomTensor(DType::kInt64, {257}, 300 + k, -1000, 1000));
    const auto v = ToDoubles(xs.back()), w = ToDoubles(ints.back());
    for (int i = 0; i < 257; ++i) {
      ref[i] += v[i];
      iref[i] += static_cast<int64_t>(w[i]);
    }
  }
  OpTest t("sum");
  t.Inputs("X", xs).Output("Out");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Out", FromDoubles<float>({257}, ref), {1e-5, 1e-5});
  OpTest i("sum");
  i.Inputs("X", ints).Output("Out");
  REQUIRE_OK(i.Run());
  i.ExpectOutput("Out", MakeTensor<int64_t>({257}, iref), {0, 0});
}

TEST_CASE("matmul_v2 with batches broadcast between batched dims (several cuBLAS calls)") {
  // Y's batch [2, 1, 4] against X's [2, 3, 4]: the middle dim breaks the batch into 6 calls.
  const Dims xd{2, 3, 4, 5, 6}, yd{2, 1, 4, 6, 7};
  Tensor x = RandomTensor(DType::kFloat64, xd, 51), y = RandomTensor(DType::kFloat64, yd, 52);
  const std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y);
  std::vector<double> ref(2 * 3 * 4 * 5 * 7, 0.0);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < 5; ++i)
          for (int j = 0; j < 7; ++j) {
            double s = 0;
            for (int k = 0; k < 6; ++k)
              s += xv[(((a * 3 + b) * 4 + c) * 5 + i) * 6 + k] * yv[((a * 4 + c) * 6 + k) * 7 + j];
            ref[(((a * 3 + b) * 4 + c) * 5 + i) * 7 + j] = s;
          }
  OpTest t("matmul_v2");
  t.Input("X", x).Input("Y", y).Output("Out");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Out", FromDoubles<double>({2, 3, 4, 5, 7}, ref), {1e-12, 1e-12});

  OpTest g("matmul_v2");
  g.Input("X", RandomTensor(DType::kFloat32, {2, 3, 2, 2, 3}, 53))
      .Input("Y", RandomTensor(DType::kFloat32, {2, 1, 2, 2, 3}, 54))
      .Attr("trans_y", true)
      .Output("Out");
  g.CheckGrad({.inputs = {"X", "Y"}});
}

TEST_CASE("cos_sim's broadcast-Y gradient over many rows") {
  const int64_t n = 20000, d = 3;
  Tensor x = RandomTensor(DType::kFloat64, {n, d}, 61), y = RandomTensor(DType::kFloat64, {1, d}, 62);
  Tensor dout = RandomTensor(DType::kFloat64, {n, 1}, 63);
  const std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y), g = ToDoubles(dout);
  double yy = 0;
  for (double v : yv) yy += v * v;
  const double yn = std::sqrt(yy);
  std::vector<double> z(n), xn(n), dx(n * d), dy(d, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double xx = 0, xy = 0;
    for (int64_t j = 0; j < d; ++j) {
      xx += xv[i * d + j] * xv[i * d + j];
      xy += xv[i * d + j] * yv[j];
    }
    xn[i] = std::sqrt(xx);
    z[i] = xy / (xn[i] * yn);
    for (int64_t j = 0; j < d; ++j) {
      dx[i * d + j] = g[i] * (yv[j] / (xn[i] * yn) - z[i] * xv[i * d + j] / (xn[i] * xn[i]));
      dy[j] += g[i] * (xv[i * d + j] / (xn[i] * yn) - z[i] * yv[j] / (yn * yn));
    }
  }
  OpTest t("cos_sim_grad");
  t.Input("X", x)
      .Input("Y", y)
      .Input("Out", FromDoubles<double>({n, 1}, z))
      .Input("XNorm", FromDoubles<double>({n, 1}, xn))
      .Input("YNorm", FromDoubles<double>({1, 1}, {yn}))
      .Input("Out@GRAD", dout)
      .Output("X@GRAD")
      .Output("Y@GRAD");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("X@GRAD", FromDoubles<double>({n, d}, dx), {1e-12, 1e-10});
  t.ExpectOutput("Y@GRAD", FromDoubles<double>({1, d}, dy), {1e-9, 1e-9});
}

}  // namespace
}  // namespace paddlec::testing
