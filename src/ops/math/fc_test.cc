// fc against a naive double-precision fully connected layer: with and without bias and relu, a
// batch of 1 (the serial small-GEMM path), of 64, and of sizes that fill no whole 6 x 16 tile (the
// tiled path), Input flattened at in_num_col_dims, [1, N] biases, unknown batch dims, and shape errors.
#include <cmath>

#include "math/math_test_util.h"

namespace paddlec::testing {
namespace {

using math_test::FromDoubles;

std::vector<double> RefFc(const Tensor& x, const Tensor& w, const Tensor* b, bool relu, int64_t m) {
  std::vector<double> xs = ToDoubles(x), ws = ToDoubles(w), bs = b ? ToDoubles(*b) : std::vector<double>{};
  const int64_t k = w.dims()[0], n = w.dims()[1];
  std::vector<double> out(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = b ? bs[j] : 0.0;
      for (int64_t q = 0; q < k; ++q) s += xs[i * k + q] * ws[q * n + j];
      out[i * n + j] = relu ? std::max(s, 0.0) : s;
    }
  return out;
}

TEST_CASE("fc = act(Input * W + Bias) in float32 and float64") {
  const math_test::ScopedTiledGemmUse tiles(ops::math::TiledGemmUse::kAlways);
  struct Case {
    Dims x, w, b;
    int in_num_col_dims;
    const char* act;
    Dims out;
  };
  const Case cases[] = {
      {{1, 784}, {784, 512}, {512}, 1, "relu", {1, 512}},    // batch 1: one thread
      {{64, 784}, {784, 256}, {256}, 1, "relu", {64, 256}},  // batch 64: the pool
      {{3, 2, 5}, {10, 7}, {1, 7}, 1, "", {3, 7}},           // flattened Input, [1, N] bias
      {{2, 3, 4}, {4, 6}, {}, 2, "relu", {2, 3, 6}},         // no bias, rows from two dims
      // The tiled GEMM (math/gemm.cc): rows and columns that fill no whole 6 x 16 tile, a depth
      // that spans two K blocks and ends inside a third, one exact tile, and no bias.
      {{13, 300}, {300, 37}, {37}, 1, "relu", {13, 37}},
      {{6, 16}, {16, 16}, {16}, 1, "", {6, 16}},
      {{7, 129}, {129, 33}, {}, 1, "", {7, 33}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.x.ToString());
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      Tensor x = RandomTensor(dt, c.x, 1), w = RandomTensor(dt, c.w, 2);
      Tensor b = c.b.rank() > 0 ? RandomTensor(dt, c.b, 3) : Tensor();
      OpTest t("fc");
      t.Input("Input", x).Input("W", w).Output("Out");
      if (c.b.rank() > 0) t.Input("Bias", b);
      if (c.in_num_col_dims != 1) t.Attr("in_num_col_dims", c.in_num_col_dims);
      if (std::string(c.act) != "") t.Attr("activation_type", std::string(c.act));
      REQUIRE_OK(t.Run());
      const auto ref = RefFc(x, w, c.b.rank() > 0 ? &b : nullptr, std::string(c.act) == "relu", c.out.Numel() / c.w[1]);
      if (dt == DType::kFloat32)
        t.ExpectOutput("Out", FromDoubles<float>(c.out, ref), {static_cast<double>(c.w[0]) * 2e-7, 1e-5});
      else
        t.ExpectOutput("Out", FromDoubles<double>(c.out, ref), {1e-12, 1e-12});
    }
  }
}

TEST_CASE("fc keeps W packed across steps only while W's contents stay the same") {
  // The tiled GEMM packs W on the second step that sees the same W (math/gemm.h) and reuses the
  // copy after; a new W written into the same memory must be packed again, whichever step it
  // arrives on. Under kAuto, where oneDNN runs AVX-512, the steps that do not reuse a packed W run
  // on oneDNN, so the product moves between the two and back. Up to 4 rows the small-row path packs
  // W into 64-column panels the same way, the last one as narrow as its columns allow (100 columns:
  // a whole panel and one of 48; 90: one of 32; 10: one of 16), and where one thread runs every
  // panel it goes through them in the other order at every other step; 530 columns on 2 threads.
  // On AVX-512, 37 x 300 x 100 (enough work for 2 threads) against a packed W this small is split
  // by rows between the threads (math/gemm.cc, SplitsRows): 3 and 2 row tiles, the last of 5 rows,
  // each against 3 pairs of panels and a last panel overlapping them. Fewer than 16 columns are one
  // zero-padded panel there (NarrowGemm), 8-row tiles split between the threads, the last short.
  struct Shape {
    int64_t m, n;
  };
  for (const Shape sh : {Shape{20, 40}, Shape{37, 100}, Shape{37, 10}, Shape{9, 1}, Shape{1, 100}, Shape{3, 100},
                         Shape{4, 40}, Shape{2, 90}, Shape{1, 10}, Shape{1, 530}})
    for (const ops::math::TiledGemmUse use : {ops::math::TiledGemmUse::kAuto, ops::math::TiledGemmUse::kAlways}) {
      CAPTURE(sh.m);
      CAPTURE(static_cast<int>(use));
      const math_test::ScopedTiledGemmUse tiles(use);
      const Dims xd{sh.m, 300}, wd{300, sh.n};
      const Tensor x = RandomTensor(DType::kFloat32, xd, 11), b = RandomTensor(DType::kFloat32, {sh.n}, 12);
      const Tensor x2 = RandomTensor(DType::kFloat32, xd, 15);
      const Tensor w1 = RandomTensor(DType::kFloat32, wd, 13), w2 = RandomTensor(DType::kFloat32, wd, 14);
      StepRunner run("fc", {{"Input", "x"}, {"W", "w"}, {"Bias", "b"}}, {{"Out", "y"}},
                     {ops::MakeAttr("activation_type", std::string("relu"))});
      REQUIRE_OK(run.Start({{"x", x}, {"w", w1}, {"b", b}}, {.threads = 2}));
      const Tensor* input = &x;
      auto expect = [&](const Tensor& w, int step) {
        CAPTURE(step);
        REQUIRE_OK(run.Step());
        const Tensor y = run.Get("y");
        const std::vector<double> got = ToDoubles(y), ref = RefFc(*input, w, &b, true, xd[0]);
        REQUIRE(got.size() == ref.size());
        double worst = 0;
        for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(got[i] - ref[i]));
        CHECK(worst < 1e-4);
      };
      expect(w1, 1);
      expect(w1, 2);  // packs
      expect(w1, 3);  // reuses the packed copy
      REQUIRE_OK(run.Set("x", x2));
      input = &x2;
      expect(w1, 4);  // a new Input against the packed copy: every row of Out is new
      REQUIRE_OK(run.Set("w", w2));
      expect(w2, 5);  // a new W in the same buffer
      expect(w2, 6);  // packs the new W
      REQUIRE_OK(run.Set("w", w1));
      expect(w1, 7);
    }
}

TEST_CASE("the tiled GEMM takes products as TiledGemmUse says") {
  using ops::math::TiledGemmTakes;
  using Use = ops::math::TiledGemmUse;
  // kAuto: where oneDNN runs AVX-512 only a B kept packed from an earlier call, else every product.
  CHECK(TiledGemmTakes(Use::kAuto, /*b_kept=*/true, /*onednn_avx512=*/true));
  CHECK_FALSE(TiledGemmTakes(Use::kAuto, false, true));
  CHECK(TiledGemmTakes(Use::kAuto, false, false));
  CHECK(TiledGemmTakes(Use::kAuto, true, false));
  CHECK(TiledGemmTakes(Use::kAlways, false, true));
  CHECK_FALSE(TiledGemmTakes(Use::kNever, true, false));
}

TEST_CASE("fc keeps an unknown batch dim and reports bad shapes") {
  OpTest t("fc");
  t.Input("Input", RandomTensor(DType::kFloat32, {5, 8}, 3)).CompileDims("Input", {-1, 8});
  t.Input("W", RandomTensor(DType::kFloat32, {8, 3}, 4)).Input("Bias", RandomTensor(DType::kFloat32, {3}, 5));
  t.Output("Out");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, 3});

  OpTest b("fc");
  b.Input("Input", RandomTensor(DType::kFloat32, {5, 8}, 3)).Input("W", RandomTensor(DType::kFloat32, {8, 3}, 4));
  b.Input("Bias", RandomTensor(DType::kFloat32, {4}, 5)).Output("Out");
  Status st = b.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "Bias has shape [4] but W [8, 3] has 3 columns: Bias needs one value per column");
}

}  // namespace
}  // namespace paddlec::testing
