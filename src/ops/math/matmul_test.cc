// mul and matmul_v2 against naive double-precision products: odd sizes, transposes, vectors, batch
// broadcasting, unknown batch dims, shape errors, and gradient checks (float64, 1e-7 abs + 1e-6 rel).
//
// float32 results are compared with atol = K * 2e-7 and rtol 1e-5 for inputs in [-1, 1]: the rounding
// error of a K-term float32 dot product grows at worst linearly with K (2e-7 ~ 2 ulp of 1.0 per
// term); a wrong element is off by O(1) and fails.
#include <cmath>
#include <cstring>

#include "math/math_test_util.h"

namespace paddlec::testing {
namespace {

using math_test::FromDoubles;

/// Naive NumPy matmul in double. `out` is the expected output shape (written by hand in each case);
/// a 1-D X is a row and a 1-D Y a column, and batch dims broadcast right-aligned.
std::vector<double> RefMatmul(const Tensor& xt, const Tensor& yt, bool tx, bool ty, const Dims& out) {
  std::vector<double> x = ToDoubles(xt), y = ToDoubles(yt);
  Dims xd = xt.dims(), yd = yt.dims();
  if (xd.rank() == 1) {
    xd = {1, xd[0]};
    tx = false;
  }
  if (yd.rank() == 1) {
    yd = {yd[0], 1};
    ty = false;
  }
  const int64_t m = tx ? xd.back() : xd.back(2), k = tx ? xd.back(2) : xd.back();
  const int64_t n = ty ? yd.back(2) : yd.back();
  const int xb = xd.rank() - 2, yb = yd.rank() - 2;
  const int ob = std::max(xb, yb);
  Dims batch;
  for (int i = 0; i < ob; ++i) {
    const int64_t a = i - (ob - xb) >= 0 ? xd[i - (ob - xb)] : 1, b = i - (ob - yb) >= 0 ? yd[i - (ob - yb)] : 1;
    batch.push_back(std::max(a, b));
  }
  REQUIRE(batch.Numel() * m * n == out.Numel());
  std::vector<double> r(out.Numel(), 0.0);
  for (int64_t bi = 0; bi < batch.Numel(); ++bi) {
    auto idx = math_test::Unravel(bi, batch);
    int64_t xo = 0, yo = 0;
    for (int i = 0; i < xb; ++i) xo = xo * xd[i] + (xd[i] == 1 ? 0 : idx[i + ob - xb]);
    for (int i = 0; i < yb; ++i) yo = yo * yd[i] + (yd[i] == 1 ? 0 : idx[i + ob - yb]);
    xo *= m * k;
    yo *= k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += x[xo + (tx ? q * m + i : i * k + q)] * y[yo + (ty ? j * k + q : q * n + j)];
        r[(bi * m + i) * n + j] = s;
      }
  }
  return r;
}

TEST_CASE("mul flattens at x_num_col_dims and y_num_col_dims") {
  struct Case {
    Dims x, y;
    int xn, yn;
    Dims out;
    Dims x2, y2;  // the 2-D views
  };
  const Case cases[] = {
      {{7, 513}, {513, 1}, 1, 1, {7, 1}, {7, 513}, {513, 1}},
      {{1, 7}, {7, 513}, 1, 1, {1, 513}, {1, 7}, {7, 513}},
      {{2, 3, 4, 5}, {4, 5, 6}, 2, 2, {2, 3, 6}, {6, 20}, {20, 6}},
      {{2, 3, 4}, {12, 5, 2}, 1, 1, {2, 5, 2}, {2, 12}, {12, 10}},
      {{64, 784}, {784, 512}, 1, 1, {64, 512}, {64, 784}, {784, 512}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.y.ToString());
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      Tensor x = RandomTensor(dt, c.x, 1), y = RandomTensor(dt, c.y, 2);
      OpTest t("mul");
      t.Input("X", x).Input("Y", y).Output("Out");
      if (c.xn != 1) t.Attr("x_num_col_dims", c.xn);
      if (c.yn != 1) t.Attr("y_num_col_dims", c.yn);
      REQUIRE_OK(t.Run());
      Tensor x2 = x, y2 = y;
      x2.set_dims(c.x2);
      y2.set_dims(c.y2);
      const auto ref = RefMatmul(x2, y2, false, false, c.out);
      const double k = static_cast<double>(c.x2[1]);
      if (dt == DType::kFloat32)
        t.ExpectOutput("Out", FromDoubles<float>(c.out, ref), {k * 2e-7, 1e-5});
      else
        t.ExpectOutput("Out", FromDoubles<double>(c.out, ref), {1e-12, 1e-12});
    }
  }
}

TEST_CASE("mul keeps an unknown batch dim and reports bad shapes") {
  OpTest t("mul");
  t.Input("X", RandomTensor(DType::kFloat32, {5, 784}, 3)).CompileDims("X", {-1, 784});
  t.Input("Y", RandomTensor(DType::kFloat32, {784, 10}, 4)).Output("Out");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, 10});

  struct Bad {
    Dims x, y;
    int xn;
    const char* message;
  };
  const Bad cases[] = {
      {{7, 513},
       {512, 1},
       1,
       "X has shape [7, 513] and Y has shape [512, 1]: flattened at x_num_col_dims 1 and y_num_col_dims 1 they are "
       "[7, 513] and [512, 1], so X's width 513 must equal Y's height 512"},
      {{2, 3}, {3, 4}, 2, "X has shape [2, 3] (rank 2) but x_num_col_dims is 2: it must be less than X's rank"},
  };
  for (const Bad& c : cases) {
    OpTest b("mul");
    b.Input("X", RandomTensor(DType::kFloat32, c.x, 5)).Input("Y", RandomTensor(DType::kFloat32, c.y, 6)).Output("Out");
    if (c.xn != 1) b.Attr("x_num_col_dims", c.xn);
    Status st = b.Compile();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == c.message);
  }
}

struct MatmulCase {
  const char* name;
  Dims x, y;
  bool tx, ty;
  Dims out;
};
const MatmulCase kMatmulCases[] = {
    {"plain 2-D, odd sizes", {7, 513}, {513, 3}, false, false, {7, 3}},
    {"trans_x", {5, 7}, {5, 3}, true, false, {7, 3}},
    {"trans_y", {7, 5}, {3, 5}, false, true, {7, 3}},
    {"both transposed", {5, 7}, {3, 5}, true, true, {7, 3}},
    {"vector . vector", {6}, {6}, false, false, {}},
    {"vector . matrix", {4}, {4, 5}, false, false, {5}},
    {"matrix . vector", {3, 4}, {4}, false, false, {3}},
    {"batch . vector", {2, 3, 4}, {4}, false, false, {2, 3}},
    {"vector . batch", {4}, {2, 4, 5}, false, false, {2, 5}},
    {"batch . matrix (Y broadcast, folded)", {2, 3, 4}, {4, 5}, false, false, {2, 3, 5}},
    {"batch . matrix, trans_x (not folded)", {2, 4, 3}, {4, 5}, true, false, {2, 3, 5}},
    {"matrix . batch (X broadcast)", {3, 4}, {2, 4, 5}, false, false, {2, 3, 5}},
    {"batch dims broadcast both ways", {2, 1, 3, 4}, {5, 4, 6}, false, false, {2, 5, 3, 6}},
    {"batch broadcast with transposes", {2, 1, 4, 3}, {1, 3, 6, 4}, true, true, {2, 3, 3, 6}},
    {"equal batch", {3, 2, 5}, {3, 5, 1}, false, false, {3, 2, 1}},
};

TEST_CASE("matmul_v2 follows NumPy matmul") {
  for (const MatmulCase& c : kMatmulCases) {
    std::string name = c.name;
    CAPTURE(name);
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      Tensor x = RandomTensor(dt, c.x, 7), y = RandomTensor(dt, c.y, 8);
      OpTest t("matmul_v2");
      t.Input("X", x).Input("Y", y).Output("Out");
      if (c.tx) t.Attr("trans_x", true);
      if (c.ty) t.Attr("trans_y", true);
      REQUIRE_OK(t.Run());
      CHECK(t.CompiledDims("Out") == c.out);
      const auto ref = RefMatmul(x, y, c.tx, c.ty, c.out);
      const double k = static_cast<double>(c.tx ? c.x.back(2) : c.x.back());
      if (dt == DType::kFloat32)
        t.ExpectOutput("Out", FromDoubles<float>(c.out, ref), {k * 2e-7, 1e-5});
      else
        t.ExpectOutput("Out", FromDoubles<double>(c.out, ref), {1e-12, 1e-12});
    }
  }
}

TEST_CASE("matmul_v2 keeps unknown batch dims and reports bad shapes") {
  OpTest t("matmul_v2");
  t.Input("X", RandomTensor(DType::kFloat32, {2, 3, 4}, 9)).CompileDims("X", {-1, 3, 4});
  t.Input("Y", RandomTensor(DType::kFloat32, {4, 5}, 10)).Output("Out");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, 3, 5});

  OpTest u("matmul_v2");
  u.Input("X", RandomTensor(DType::kFloat32, {2, 3, 4}, 9)).CompileDims("X", {-1, 3, 4});
  u.Input("Y", RandomTensor(DType::kFloat32, {2, 4, 5}, 10)).Output("Out");
  REQUIRE_OK(u.Run());
  CHECK(u.CompiledDims("Out") == Dims{2, 3, 5});  // -1 against 2: it must be 2 (or 1, broadcast to 2)

  struct Bad {
    Dims x, y;
    bool ty;
    const char* message;
  };
  const Bad cases[] = {
      {{3, 4},
       {5, 6},
       false,
       "X has shape [3, 4] and Y has shape [5, 6] (trans_x false, trans_y false): the contracted dims differ (X gives "
       "4, Y gives 5)"},
      {{3, 4},
       {5, 6},
       true,
       "X has shape [3, 4] and Y has shape [5, 6] (trans_x false, trans_y true): the contracted dims differ (X gives "
       "4, Y gives 6)"},
      {{2, 3, 4},
       {3, 4, 5},
       false,
       "X has shape [2, 3, 4] and Y has shape [3, 4, 5] (trans_x false, trans_y false): batch dim 0 differs (2 vs 3) "
       "and neither is 1"},
      {{},
       {3},
       false,
       "X has shape [] and Y has shape [3] (trans_x false, trans_y false): matmul_v2 needs operands of "
       "rank >= 1"},
  };
  for (const Bad& c : cases) {
    OpTest b("matmul_v2");
    b.Input("X", RandomTensor(DType::kFloat32, c.x, 11)).Input("Y", RandomTensor(DType::kFloat32, c.y, 12));
    b.Output("Out");
    if (c.ty) b.Attr("trans_y", true);
    Status st = b.Compile();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == c.message);
  }
}

TEST_CASE("mul gradients match central differences") {
  OpTest t("mul");
  t.Input("X", RandomTensor(DType::kFloat32, {3, 5}, 13)).Input("Y", RandomTensor(DType::kFloat32, {5, 4}, 14));
  t.Output("Out");
  t.CheckGrad({.inputs = {"X", "Y"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});

  OpTest f("mul");
  f.Input("X", RandomTensor(DType::kFloat32, {2, 3, 2, 2}, 15))
      .Input("Y", RandomTensor(DType::kFloat32, {2, 2, 3}, 16));
  f.Attr("x_num_col_dims", 2).Attr("y_num_col_dims", 2).Output("Out");
  f.CheckGrad({.inputs = {"X", "Y"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
}

TEST_CASE("matmul_v2 gradients match central differences (transposes, vectors, batch broadcasting)") {
  for (const MatmulCase& c : kMatmulCases) {
    if (Dims(c.x).Numel() * Dims(c.y).Numel() > 20000) continue;  // keep the finite differences quick
    std::string name = c.name;
    CAPTURE(name);
    OpTest t("matmul_v2");
    t.Input("X", RandomTensor(DType::kFloat32, c.x, 17)).Input("Y", RandomTensor(DType::kFloat32, c.y, 18));
    t.Output("Out");
    if (c.tx) t.Attr("trans_x", true);
    if (c.ty) t.Attr("trans_y", true);
    t.CheckGrad({.inputs = {"X", "Y"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
  // Every transpose combination with both operands broadcast over batch dims.
  for (bool tx : {false, true})
    for (bool ty : {false, true}) {
      CAPTURE(tx);
      CAPTURE(ty);
      OpTest t("matmul_v2");
      t.Input("X", RandomTensor(DType::kFloat32, tx ? Dims{2, 1, 4, 3} : Dims{2, 1, 3, 4}, 19));
      t.Input("Y", RandomTensor(DType::kFloat32, ty ? Dims{3, 2, 4} : Dims{3, 4, 2}, 20));
      t.Output("Out");
      if (tx) t.Attr("trans_x", true);
      if (ty) t.Attr("trans_y", true);
      t.CheckGrad({.inputs = {"X", "Y"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
    }
}

TEST_CASE("matmul_v2 on the tiled GEMM's packed path: row blocks, edge tiles, depth blocks, transposes") {
  const math_test::ScopedTiledGemmUse tiles(ops::math::TiledGemmUse::kAlways);
  // math/gemm.cc packs B whole for untransposed products of more than 128 rows: 310 rows are 52
  // tiles, the last of 4 rows, and 37 columns three panels, the last overlapping the one before.
  // 130 x 1100 x 100 has rows in 3 blocks (1100 deep keeps 8 tiles of A in L2), two passes over
  // each panel (the second accumulates into C, edge tiles included) and its 7 panels in groups of
  // 4 (one thread) or 2 (two threads), the last group short. X transposed runs there too, each
  // task copying its block of rows into row tiles and running it against every panel (both passes
  // over the depth, edge panel included); Y transposed runs on oneDNN.
  struct Shape {
    int64_t m, k, n;
  };
  for (const Shape& sh : {Shape{310, 70, 37}, Shape{130, 1100, 100}, Shape{6, 16, 16}, Shape{64, 200, 96}}) {
    for (int variant = 0; variant < 4; ++variant) {
      const bool tx = variant & 1, ty = variant & 2;
      const Dims xd = tx ? Dims{sh.k, sh.m} : Dims{sh.m, sh.k}, yd = ty ? Dims{sh.n, sh.k} : Dims{sh.k, sh.n};
      const Tensor x = RandomTensor(DType::kFloat32, xd, 31), y = RandomTensor(DType::kFloat32, yd, 32);
      std::vector<ir::pb::OpDesc::Attr> attrs;
      if (tx) attrs.push_back(ops::MakeAttr("trans_x", true));
      if (ty) attrs.push_back(ops::MakeAttr("trans_y", true));
      for (int threads : {1, 2}) {
        CAPTURE(sh.m);
        CAPTURE(sh.k);
        CAPTURE(variant);
        CAPTURE(threads);
        auto out = RunOpNamedBySlot("matmul_v2", {{"X", x}, {"Y", y}}, attrs, {"Out"}, {.threads = threads});
        ExpectClose(out.at("Out"), FromDoubles<float>({sh.m, sh.n}, RefMatmul(x, y, tx, ty, {sh.m, sh.n})),
                    {static_cast<double>(sh.k) * 2e-7, 1e-5}, "matmul_v2");
      }
    }
  }
}

TEST_CASE("matmul_v2 on the tiled GEMM: the same bits on one thread and two") {
  const math_test::ScopedTiledGemmUse tiles(ops::math::TiledGemmUse::kAlways);
  // math/gemm.cc sums each element of C in one order, whichever thread computes it and however many
  // there are (here tasks hold 4 panels of 130 rows on one thread and 2 on two).
  const Tensor x = RandomTensor(DType::kFloat32, {130, 700}, 61), y = RandomTensor(DType::kFloat32, {700, 256}, 62);
  auto one = RunOpNamedBySlot("matmul_v2", {{"X", x}, {"Y", y}}, {}, {"Out"}, {.threads = 1});
  for (int run = 0; run < 3; ++run) {
    auto two = RunOpNamedBySlot("matmul_v2", {{"X", x}, {"Y", y}}, {}, {"Out"}, {.threads = 2});
    const Tensor &a = one.at("Out"), &b = two.at("Out");
    REQUIRE(a.numel() == b.numel());
    CHECK(std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)) == 0);
  }
}

TEST_CASE("matmul_v2 on the tiled GEMM: a last row tile of each size from 1 to 7 rows") {
  const math_test::ScopedTiledGemmUse tiles(ops::math::TiledGemmUse::kAlways);
  // math/gemm.cc computes M's remainder rows in a tile of that many rows (common/microkernel.h's
  // kRows): tiles of 6 rows, or 8 against packed B on AVX-512. Up to 128 rows B is copied a block at
  // a time (a depth of 300 spans three blocks, so the remainder tile also accumulates); above, B is
  // packed whole. X transposed is copied into row tiles, the last one short. 40 columns are a pair
  // of panels and a single one overlapping it, which runs an 8-row tile as 6 rows and the rest.
  for (int64_t base : {6, 128})
    for (int64_t rem = 1; rem <= 7; ++rem)
      for (bool tx : {false, true}) {
        const int64_t m = base + rem, k = 300, n = 40;
        const Tensor x = RandomTensor(DType::kFloat32, tx ? Dims{k, m} : Dims{m, k}, 41 + rem);
        const Tensor y = RandomTensor(DType::kFloat32, {k, n}, 51 + rem);
        std::vector<ir::pb::OpDesc::Attr> attrs;
        if (tx) attrs.push_back(ops::MakeAttr("trans_x", true));
        for (int threads : {1, 2}) {
          CAPTURE(m);
          CAPTURE(tx);
          CAPTURE(threads);
          auto out = RunOpNamedBySlot("matmul_v2", {{"X", x}, {"Y", y}}, attrs, {"Out"}, {.threads = threads});
          ExpectClose(out.at("Out"), FromDoubles<float>({m, n}, RefMatmul(x, y, tx, false, {m, n})),
                      {static_cast<double>(k) * 2e-7, 1e-5}, "matmul_v2");
        }
      }
}

TEST_CASE("matmul_v2 and its gradient in float32 on two threads") {
  // A batch-broadcast product big enough for oneDNN to thread, and its gradient's batch reduction.
  Tensor x = RandomTensor(DType::kFloat32, {3, 64, 200}, 21), y = RandomTensor(DType::kFloat32, {1, 200, 96}, 22);
  Tensor yb = RandomTensor(DType::kFloat32, {3, 200, 96}, 23);
  auto out = RunOpNamedBySlot("matmul_v2", {{"X", x}, {"Y", y}}, {}, {"Out"}, {.threads = 2});
  ExpectClose(out.at("Out"), FromDoubles<float>({3, 64, 96}, RefMatmul(x, y, false, false, {3, 64, 96})),
              {200 * 2e-7, 1e-5}, "matmul_v2 [3,64,200] x [1,200,96]");

  Tensor x1 = RandomTensor(DType::kFloat32, {64, 200}, 24);
  Tensor dout = RandomTensor(DType::kFloat32, {3, 64, 96}, 25);
  auto g = RunOpNamedBySlot("matmul_v2_grad", {{"X", x1}, {"Y", yb}, {"Out@GRAD", dout}}, {}, {"X@GRAD", "Y@GRAD"},
                            {.threads = 2});
  // X@GRAD = sum_b dOut[b] Y[b]^T (3 * 96 terms); Y@GRAD[b] = X^T dOut[b] (64 terms).
  std::vector<double> ref_dx(64 * 200, 0.0), ref_dy(3 * 200 * 96, 0.0);
  const std::vector<double> d = ToDoubles(dout), w = ToDoubles(yb), xv = ToDoubles(x1);
  for (int b = 0; b < 3; ++b)
    for (int i = 0; i < 64; ++i)
      for (int q = 0; q < 200; ++q)
        for (int j = 0; j < 96; ++j) {
          ref_dx[i * 200 + q] += d[(b * 64 + i) * 96 + j] * w[(b * 200 + q) * 96 + j];
          ref_dy[(b * 200 + q) * 96 + j] += xv[i * 200 + q] * d[(b * 64 + i) * 96 + j];
        }
  ExpectClose(g.at("X@GRAD"), FromDoubles<float>({64, 200}, ref_dx), {3 * 96 * 2e-7, 1e-5}, "X@GRAD");
  ExpectClose(g.at("Y@GRAD"), FromDoubles<float>({3, 200, 96}, ref_dy), {64 * 2e-7, 1e-5}, "Y@GRAD");
}

}  // namespace
}  // namespace paddlec::testing
