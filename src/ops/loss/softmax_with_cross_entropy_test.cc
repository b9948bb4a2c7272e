// softmax_with_cross_entropy against a double-precision reference, with shape errors and gradient checks.
#include <cmath>

#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

Tensor RandomLabels(const Dims& dims, int64_t classes, uint64_t seed, DType dtype = DType::kInt64) {
  return RandomTensor(dtype, dims, seed, 0, static_cast<double>(classes));
}

struct Ref {
  Tensor softmax, loss;
};

/// Reference in double along `axis`: softmax (or the probabilities themselves when !use_softmax) and
/// loss = -log(p[label]) (0 for ignore_index) or -sum(label * log(p)).
Ref RefSwce(const Tensor& x, const Tensor& label, int axis, bool soft, bool use_softmax = true,
            int64_t ignore_index = -100) {
  const Dims& d = x.dims();
  const int a = axis < 0 ? axis + d.rank() : axis;
  const int64_t outer = d.Product(0, a), n = d[a], inner = d.Product(a + 1, d.rank());
  std::vector<double> xv = ToDoubles(x), lv = ToDoubles(label), p(xv.size()), loss(outer * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + i; };
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, xv[at(k)]);
      for (int64_t k = 0; k < n; ++k) s += std::exp(xv[at(k)] - m);
      for (int64_t k = 0; k < n; ++k) p[at(k)] = use_softmax ? std::exp(xv[at(k)] - m) / s : xv[at(k)];
      auto logp = [&](int64_t k) {
        if (use_softmax) return xv[at(k)] - m - std::log(s);
        return p[at(k)] == 0 ? -1e20 : std::log(p[at(k)]);
      };
      double l = 0;
      if (soft) {
        for (int64_t k = 0; k < n; ++k) l -= lv[at(k)] == 0 ? 0 : lv[at(k)] * logp(k);
      } else {
        auto lbl = static_cast<int64_t>(lv[o * inner + i]);
        l = lbl == ignore_index ? 0 : -logp(lbl);
      }
      loss[o * inner + i] = l;
    }
  Dims ld = d;
  ld[a] = 1;
  return {Cast(MakeTensor<double>(d, p), x.dtype()), Cast(MakeTensor<double>(ld, loss), x.dtype())};
}

TEST_CASE("softmax_with_cross_entropy hard labels on odd class counts") {
  for (DType dt : {DType::kFloat32, DType::kFloat64})
    for (int64_t d : {1, 7, 513, 3001}) {  // 3001: a block per line on the GPU
      CAPTURE(DTypeName(dt));
      CAPTURE(d);
      Tensor x = RandomTensor(dt, {5, d}, 100 + d, -5, 5);
      Tensor label = RandomLabels({5, 1}, d, 101 + d);
      OpTest t("softmax_with_cross_entropy");
      t.Input("Logits", x).Input("Label", label).Output("Softmax").Output("Loss");
      REQUIRE_OK(t.Run());
      Ref ref = RefSwce(x, label, -1, false);
      Tolerance tol = dt == DType::kFloat32 ? Tolerance{1e-6, 1e-5} : Tolerance{1e-14, 1e-12};
      t.ExpectOutput("Softmax", ref.softmax, tol);
      t.ExpectOutput("Loss", ref.loss, tol);
    }
}

TEST_CASE("softmax_with_cross_entropy along a middle and the first axis") {
  Tensor x = RandomTensor(DType::kFloat32, {3, 7, 5}, 111, -4, 4);
  for (int axis : {1, 0, -2}) {
    CAPTURE(axis);
    const int a = axis < 0 ? axis + 3 : axis;
    Dims ld = x.dims();
    ld[a] = 1;
    Tensor hard = RandomLabels(ld, x.dims()[a], 112 + a, DType::kInt32);
    OpTest h("softmax_with_cross_entropy");
    h.Input("Logits", x).Input("Label", hard).Attr("axis", axis).Output("Softmax").Output("Loss");
    REQUIRE_OK(h.Run());
    Ref rh = RefSwce(x, hard, axis, false);
    h.ExpectOutput("Softmax", rh.softmax, {1e-6, 1e-5});
    h.ExpectOutput("Loss", rh.loss, {1e-6, 1e-5});

    Tensor soft = RandomTensor(DType::kFloat32, x.dims(), 113 + a, 0, 1);
    OpTest s("softmax_with_cross_entropy");
    s.Input("Logits", x).Input("Label", soft).Attr("axis", axis).Attr("soft_label", true);
    s.Output("Softmax").Output("Loss");
    REQUIRE_OK(s.Run());
    Ref rs = RefSwce(x, soft, axis, true);
    s.ExpectOutput("Softmax", rs.softmax, {1e-6, 1e-5});
    s.ExpectOutput("Loss", rs.loss, {1e-6, 1e-5});
  }
}

TEST_CASE("softmax_with_cross_entropy soft labels on odd class counts") {
  for (int64_t d : {1, 7, 513, 3001}) {  // 3001: a block per line on the GPU
    CAPTURE(d);
    Tensor x = RandomTensor(DType::kFloat32, {3, d}, 120 + d, -5, 5);
    Tensor label = RandomTensor(DType::kFloat32, {3, d}, 121 + d, 0, 1);
    OpTest t("softmax_with_cross_entropy");
    t.Input("Logits", x).Input("Label", label).Attr("soft_label", true).Output("Softmax").Output("Loss");
    REQUIRE_OK(t.Run());
    Ref ref = RefSwce(x, label, -1, true);
    t.ExpectOutput("Softmax", ref.softmax, {1e-6, 1e-5});
    t.ExpectOutput("Loss", ref.loss, {1e-5, 1e-5});
  }
}

TEST_CASE("softmax_with_cross_entropy gives zero loss at ignore_index") {
  Tensor x = RandomTensor(DType::kFloat32, {4, 5}, 131, -3, 3);
  Tensor label = MakeTensor<int64_t>({4, 1}, {2, 0, 2, 4});
  OpTest t("softmax_with_cross_entropy");
  t.Input("Logits", x).Input("Label", label).Attr("ignore_index", 2).Output("Softmax").Output("Loss");
  REQUIRE_OK(t.Run());
  Ref ref = RefSwce(x, label, -1, false, true, 2);
  t.ExpectOutput("Softmax", ref.softmax, {1e-6, 1e-5});  // computed for ignored rows too
  t.ExpectOutput("Loss", ref.loss, {1e-6, 1e-5});
  CHECK(ToVector<float>(t.Out("Loss"))[0] == 0.0f);
  CHECK(ToVector<float>(t.Out("Loss"))[2] == 0.0f);
}

TEST_CASE("softmax_with_cross_entropy with use_softmax false takes probabilities") {
  Tensor p = RandomTensor(DType::kFloat32, {4, 7}, 141, 0.01, 1);
  Tensor hard = MakeTensor<int64_t>({4, 1}, {6, -100, 0, 3});
  OpTest h("softmax_with_cross_entropy");
  h.Input("Logits", p).Input("Label", hard).Attr("use_softmax", false).Output("Softmax").Output("Loss");
  REQUIRE_OK(h.Run());
  Ref rh = RefSwce(p, hard, -1, false, false);
  h.ExpectOutput("Softmax", p, {0, 0});
  h.ExpectOutput("Loss", rh.loss, {1e-6, 1e-6});

  Tensor soft = RandomTensor(DType::kFloat32, {4, 7}, 142, 0, 1);
  OpTest s("softmax_with_cross_entropy");
  s.Input("Logits", p).Input("Label", soft).Attr("use_softmax", false).Attr("soft_label", true);
  s.Output("Softmax").Output("Loss");
  REQUIRE_OK(s.Run());
  s.ExpectOutput("Loss", RefSwce(p, soft, -1, true, false).loss, {1e-6, 1e-6});
}

TEST_CASE("softmax_with_cross_entropy is stable for large and widely spread logits") {
  OpTest t("softmax_with_cross_entropy");
  t.Input("Logits", MakeTensor<float>({2, 3}, {1000.f, 1001.f, 1002.f, 0.f, -200.f, -50.f}));
  t.Input("Label", MakeTensor<int64_t>({2, 1}, {0, 1})).Output("Softmax").Output("Loss");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Softmax", MakeTensor<float>({2, 3}, {0.09003057f, 0.24472847f, 0.66524096f, 1.f, 0.f, 0.f}),
                 {1e-7, 1e-6});
  // softmax[1] underflows to 0 in float32, the log-softmax does not: the loss is 200, not infinite.
  t.ExpectOutput("Loss", MakeTensor<float>({2, 1}, {2.40760596f, 200.f}), {1e-6, 1e-6});
}

TEST_CASE("softmax_with_cross_entropy runs without the intermediate Softmax output") {
  Tensor x = RandomTensor(DType::kFloat32, {6, 9}, 151, -3, 3);
  Tensor label = RandomLabels({6, 1}, 9, 152);
  OpTest t("softmax_with_cross_entropy");
  t.Input("Logits", x).Input("Label", label).Output("Loss");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Loss", RefSwce(x, label, -1, false).loss, {1e-6, 1e-5});
}

TEST_CASE("softmax_with_cross_entropy over lines in several blocks, and lines longer than a block") {
  // The last axis is exponentiated a block of lines at a time (4096 elements): 8000 x 10 spans
  // three chunks of the pool and several blocks in each; a line of 5000 classes is a block of its
  // own, and without the Softmax output it has no room there.
  const std::pair<int64_t, int64_t> shapes[] = {{8000, 10}, {3, 5000}};
  for (bool with_softmax : {true, false})
    for (auto [lines, n] : shapes) {
      CAPTURE(with_softmax);
      CAPTURE(lines);
      Tensor x = RandomTensor(DType::kFloat32, {lines, n}, 161 + n, -8, 8);
      std::vector<int64_t> labels = ToVector<int64_t>(RandomLabels({lines, 1}, n, 162 + n));
      labels[1] = -100;  // ignored, in the first block
      labels[lines - 1] = -100;
      Tensor label = MakeTensor<int64_t>({lines, 1}, labels);
      OpTest t("softmax_with_cross_entropy");
      t.Input("Logits", x).Input("Label", label).Output("Loss");
      if (with_softmax) t.Output("Softmax");
      REQUIRE_OK(t.Run());
      Ref ref = RefSwce(x, label, -1, false);
      if (with_softmax) t.ExpectOutput("Softmax", ref.softmax, {1e-6, 1e-5});
      t.ExpectOutput("Loss", ref.loss, {1e-6, 1e-5});
      CHECK(ToVector<float>(t.Out("Loss"))[1] == 0.0f);
    }
}

TEST_CASE("softmax_with_cross_entropy rejects labels outside the classes at run time") {
  OpTest t("softmax_with_cross_entropy");
  t.Input("Logits", RandomTensor(DType::kFloat32, {2, 7, 3}, 161)).Attr("axis", 1);
  t.Input("Label", MakeTensor<int64_t>({2, 1, 3}, {0, 6, 1, 2, 7, 3})).Output("Softmax").Output("Loss");
  Status st = t.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code() == ErrorCode::kRuntime);
  CHECK(st.error().message() ==
        "Label holds 7 at index 4, outside the 7 classes [0, 7) along axis 1 of Logits (ignore_index is -100)");
}

TEST_CASE("softmax_with_cross_entropy keeps an unknown batch at compile time") {
  OpTest t("softmax_with_cross_entropy");
  t.Input("Logits", RandomTensor(DType::kFloat32, {4, 7}, 171)).CompileDims("Logits", {-1, 7});
  t.Input("Label", RandomLabels({4, 1}, 7, 172)).CompileDims("Label", {-1, 1}).Output("Softmax").Output("Loss");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Softmax") == Dims{-1, 7});
  CHECK(t.CompiledDims("Loss") == Dims{-1, 1});
}

TEST_CASE("softmax_with_cross_entropy shape errors name both shapes") {
  struct Case {
    Dims x;
    Tensor label;
    int axis;
    bool soft;
    bool stable;
    const char* message;
  };
  const Case cases[] = {
      {{4, 7},
       RandomLabels({4, 1}, 7, 1),
       2,
       false,
       true,
       "axis 2 is out of range for Logits of shape [4, 7] (rank 2)"},
      {{4, 7},
       RandomLabels({4, 2}, 7, 1),
       -1,
       false,
       true,
       "Logits has shape [4, 7] but Label has shape [4, 2]: with soft_label false, Label must be Logits' shape with "
       "dim 1 (the class axis) set to 1"},
      {{4, 7, 3},
       RandomLabels({4, 7, 1}, 7, 1),
       1,
       false,
       true,
       "Logits has shape [4, 7, 3] but Label has shape [4, 7, 1]: with soft_label false, Label must be Logits' shape "
       "with dim 1 (the class axis) set to 1"},
      {{4, 7},
       RandomLabels({4}, 7, 1),
       -1,
       false,
       true,
       "Logits has shape [4, 7] but Label has shape [4]: with soft_label false, Label must be Logits' shape with dim "
       "1 (the class axis) set to 1"},
      {{4, 7},
       RandomTensor(DType::kFloat32, {4, 6}, 1),
       -1,
       true,
       true,
       "Logits has shape [4, 7] but Label has shape [4, 6]: with soft_label true, Label must have Logits' shape"},
      {{4, 7},
       RandomTensor(DType::kFloat32, {4, 1}, 1),
       -1,
       false,
       true,
       "Label is float32: with soft_label false, Label must hold int64 or int32 class indices"},
      {{4, 7},
       RandomTensor(DType::kFloat64, {4, 7}, 1),
       -1,
       true,
       true,
       "Label is float64 but Logits is float32: with soft_label true, Label must have Logits' dtype"},
      {{4, 7},
       RandomLabels({1, 7}, 4, 1),
       0,
       false,
       false,
       "axis 0 is not the last axis of Logits (shape [4, 7]): numeric_stable_mode false supports only that"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    OpTest t("softmax_with_cross_entropy");
    t.Input("Logits", RandomTensor(DType::kFloat32, c.x, 2)).Input("Label", c.label).Output("Softmax").Output("Loss");
    if (c.axis != -1) t.Attr("axis", c.axis);
    if (c.soft) t.Attr("soft_label", true);
    if (!c.stable) t.Attr("numeric_stable_mode", false);
    Status st = t.Compile();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == c.message);
  }
}

// Gradient checks in float64; eps 1e-6, tolerance 1e-7 absolute + 1e-6 relative. Soft labels do not
// sum to 1, which checks the exact gradient softmax * sum(label) - label.
TEST_CASE("softmax_with_cross_entropy_grad matches central differences") {
  const OpTest::GradCheck check{.inputs = {"Logits"}, .output = "Loss", .eps = 1e-6, .tol = {1e-7, 1e-6}};
  OpTest hard("softmax_with_cross_entropy");
  hard.Input("Logits", RandomTensor(DType::kFloat32, {5, 7}, 181, -3, 3)).Input("Label", RandomLabels({5, 1}, 7, 182));
  hard.Output("Softmax").Output("Loss").CheckGrad(check);

  OpTest ignore("softmax_with_cross_entropy");
  ignore.Input("Logits", RandomTensor(DType::kFloat32, {4, 3}, 183, -3, 3));
  ignore.Input("Label", MakeTensor<int32_t>({4, 1}, {2, 1, 2, 0})).Attr("ignore_index", 2);
  ignore.Output("Softmax").Output("Loss").CheckGrad(check);

  OpTest soft("softmax_with_cross_entropy");
  soft.Input("Logits", RandomTensor(DType::kFloat32, {3, 6}, 184, -3, 3));
  soft.Input("Label", RandomTensor(DType::kFloat32, {3, 6}, 185, 0, 1)).Attr("soft_label", true);
  soft.Output("Softmax").Output("Loss").CheckGrad(check);

  OpTest mid("softmax_with_cross_entropy");
  mid.Input("Logits", RandomTensor(DType::kFloat32, {2, 5, 3}, 186, -3, 3)).Attr("axis", 1);
  mid.Input("Label", RandomLabels({2, 1, 3}, 5, 187)).Output("Softmax").Output("Loss").CheckGrad(check);

  OpTest mid_soft("softmax_with_cross_entropy");
  mid_soft.Input("Logits", RandomTensor(DType::kFloat32, {2, 5, 3}, 188, -3, 3)).Attr("axis", 1);
  mid_soft.Input("Label", RandomTensor(DType::kFloat32, {2, 5, 3}, 189, 0, 1)).Attr("soft_label", true);
  mid_soft.Output("Softmax").Output("Loss").CheckGrad(check);

  // use_softmax false: the gradient of -log(p) with p in [0.2, 1).
  OpTest probs("softmax_with_cross_entropy");
  probs.Input("Logits", RandomTensor(DType::kFloat32, {4, 6}, 190, 0.2, 1)).Attr("use_softmax", false);
  probs.Input("Label", RandomLabels({4, 1}, 6, 191)).Output("Softmax").Output("Loss").CheckGrad(check);

  OpTest probs_soft("softmax_with_cross_entropy");
  probs_soft.Input("Logits", RandomTensor(DType::kFloat32, {4, 6}, 192, 0.2, 1)).Attr("use_softmax", false);
  probs_soft.Input("Label", RandomTensor(DType::kFloat32, {4, 6}, 193, 0, 1)).Attr("soft_label", true);
  probs_soft.Output("Softmax").Output("Loss").CheckGrad(check);
}

}  // namespace
}  // namespace paddlec::testing
