// The sequence ops against references written here over explicit LoD offsets (empty sequences and
// nested LoD included), with gradient checks, LoD propagation at compile time (lod_level) and run
// time, and the errors a batch without a LoD gets.
#include <cmath>

#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::testing {
namespace {

using runtime::LoD;

Tensor WithLoD(Tensor t, LoD lod) {
  t.mutable_lod() = std::move(lod);
  return t;
}

/// Pools rows [lo, hi) of x [N, w] per sequence, in double.
Tensor RefPool(const Tensor& x, const std::vector<uint64_t>& seq, const std::string& type, double pad) {
  std::vector<double> v = ToDoubles(x), out;
  const int64_t w = x.dims()[1];
  for (size_t s = 0; s + 1 < seq.size(); ++s)
    for (int64_t j = 0; j < w; ++j) {
      const int64_t lo = seq[s], hi = seq[s + 1], len = hi - lo;
      double sum = 0, mx = -1e300;
      for (int64_t r = lo; r < hi; ++r) sum += v[r * w + j], mx = std::max(mx, v[r * w + j]);
      double r = pad;
      if (len > 0) {
        if (type == "SUM") r = sum;
        if (type == "AVERAGE") r = sum / len;
        if (type == "SQRT") r = sum / std::sqrt(double(len));
        if (type == "MAX") r = mx;
        if (type == "FIRST") r = v[lo * w + j];
        if (type == "LAST") r = v[(hi - 1) * w + j];
      }
      out.push_back(r);
    }
  return Cast(MakeTensor<double>({static_cast<int64_t>(seq.size()) - 1, w}, out), x.dtype());
}

TEST_CASE("sequence_pool: every pooltype over sequences with an empty one, keeping the outer LoD") {
  const std::vector<uint64_t> seq{0, 2, 2, 5, 6};
  for (std::string type : {"SUM", "AVERAGE", "SQRT", "MAX", "FIRST", "LAST"}) {
    CAPTURE(type);
    Tensor x = WithLoD(RandomTensor(DType::kFloat32, {6, 3}, 7), {{0, 3, 4}, seq});
    OpTest t("sequence_pool");
    t.Input("X", x)
        .CompileDims("X", {-1, 3})
        .Attr("pooltype", type)
        .Attr("pad_value", 0.5f)
        .Output("Out")
        .Output("MaxIndex");
    REQUIRE_OK(t.Run());
    t.ExpectOutput("Out", RefPool(x, seq, type, 0.5), {1e-6, 1e-5});
    CHECK(t.Out("Out").lod() == LoD{{0, 3, 4}});
    CHECK(t.CompiledLoDLevel("Out") == 1);
    CHECK(t.CompiledDims("Out") == Dims{-1, 3});
  }
}

TEST_CASE("sequence_pool gradients by finite differences") {
  for (std::string type : {"SUM", "AVERAGE", "SQRT", "MAX", "FIRST", "LAST"}) {
    CAPTURE(type);
    OpTest t("sequence_pool");
    t.Input("X", WithLoD(RandomTensor(DType::kFloat32, {6, 2}, 8), {{0, 2, 2, 5, 6}}))
        .Attr("pooltype", type)
        .Output("Out")
        .Output("MaxIndex");
    t.CheckGrad({.inputs = {"X"}});
  }
}

TEST_CASE("sequence_softmax normalizes within each sequence; its gradient checks") {
  Tensor x = WithLoD(RandomTensor(DType::kFloat32, {5, 1}, 9, -2, 2), {{0, 1, 4, 5}});
  OpTest t("sequence_softmax");
  t.Input("X", x).Output("Out");
  REQUIRE_OK(t.Run());
  std::vector<double> v = ToDoubles(x), y(5);
  for (auto [lo, hi] : {std::pair{0, 1}, std::pair{1, 4}, std::pair{4, 5}}) {
    double z = 0;
    for (int r = lo; r < hi; ++r) z += std::exp(v[r]);
    for (int r = lo; r < hi; ++r) y[r] = std::exp(v[r]) / z;
  }
  t.ExpectOutput("Out", Cast(MakeTensor<double>({5, 1}, y), DType::kFloat32), {1e-6, 1e-5});
  CHECK(t.Out("Out").lod() == x.lod());
  CHECK(t.CompiledLoDLevel("Out") == 1);
  OpTest g("sequence_softmax");
  g.Input("X", x).Output("Out");
  g.CheckGrad({.inputs = {"X"}});
}

TEST_CASE("sequence_expand repeats rows (X without LoD) or sequences (X with LoD) by Y's LoD") {
  Tensor y = WithLoD(RandomTensor(DType::kFloat32, {5, 1}, 1), {{0, 2, 2, 5}});
  Tensor rows = MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  OpTest t("sequence_expand");
  t.Input("X", rows).Input("Y", y).Output("Out");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Out", MakeTensor<float>({5, 2}, {1, 2, 1, 2, 5, 6, 5, 6, 5, 6}), {0, 0});
  CHECK(t.Out("Out").lod() == LoD{{0, 2, 2, 5}});
  CHECK(t.CompiledLoDLevel("Out") == 1);

  Tensor seqs = WithLoD(MakeTensor<float>({3, 1}, {1, 2, 3}), {{0, 2, 3}});
  Tensor y2 = WithLoD(RandomTensor(DType::kFloat32, {3, 1}, 2), {{0, 1, 3}});
  OpTest s("sequence_expand");
  s.Input("X", seqs).Input("Y", y2).Output("Out");
  REQUIRE_OK(s.Run());
  t.ExpectOutput("Out", MakeTensor<float>({5, 2}, {1, 2, 1, 2, 5, 6, 5, 6, 5, 6}), {0, 0});
  s.ExpectOutput("Out", MakeTensor<float>({4, 1}, {1, 2, 3, 3}), {0, 0});
  CHECK(s.Out("Out").lod() == LoD{{0, 2, 3, 4}});

  OpTest g("sequence_expand");
  g.Input("X", RandomTensor(DType::kFloat32, {3, 2}, 3)).Input("Y", y).Output("Out");
  g.CheckGrad({.inputs = {"X"}});
  OpTest g2("sequence_expand");
  g2.Input("X", WithLoD(RandomTensor(DType::kFloat32, {3, 2}, 4), {{0, 2, 3}})).Input("Y", y2).Output("Out");
  g2.CheckGrad({.inputs = {"X"}});
}

TEST_CASE("sequence_pad and sequence_unpad invert each other; both have gradients") {
  Tensor x = WithLoD(MakeTensor<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), {{0, 3, 3, 4}});
  OpTest p("sequence_pad");
  p.Input("X", x).Input("PadValue", MakeTensor<float>({1}, {-1})).Output("Out").Output("Length");
  REQUIRE_OK(p.Run());
  p.ExpectOutput("Out", MakeTensor<float>({3, 3, 2}, {1, 2, 3, 4, 5, 6, -1, -1, -1, -1, -1, -1, 7, 8, -1, -1, -1, -1}),
                 {0, 0});
  p.ExpectOutput("Length", MakeTensor<int64_t>({3}, {3, 0, 1}), {0, 0});
  CHECK(p.Out("Out").lod().empty());
  CHECK(p.CompiledLoDLevel("Out") == 0);

  OpTest wide("sequence_pad");
  wide.Input("X", x)
      .Input("PadValue", MakeTensor<float>({2}, {9, 8}))
      .Attr("padded_length", 4)
      .Output("Out")
      .Output("Length");
  REQUIRE_OK(wide.Run());
  CHECK(wide.Out("Out").dims() == Dims{3, 4, 2});
  CHECK(ToVector<float>(wide.Out("Out"))[6] == 9);
  CHECK(ToVector<float>(wide.Out("Out"))[7] == 8);

  OpTest u("sequence_unpad");
  u.Input("X", p.Out("Out")).Input("Length", MakeTensor<int64_t>({3}, {3, 0, 1})).Output("Out");
  REQUIRE_OK(u.Run());
  u.ExpectOutput("Out", x, {0, 0});
  CHECK(u.Out("Out").lod() == x.lod());
  CHECK(u.CompiledLoDLevel("Out") == 1);

  OpTest pg("sequence_pad");
  pg.Input("X", WithLoD(RandomTensor(DType::kFloat32, {4, 2}, 5), {{0, 3, 3, 4}}))
      .Input("PadValue", MakeTensor<float>({1}, {0}))
      .Output("Out")
      .Output("Length");
  pg.CheckGrad({.inputs = {"X"}});
  OpTest ug("sequence_unpad");
  ug.Input("X", RandomTensor(DType::kFloat32, {3, 3, 2}, 6)).Input("Length", MakeTensor<int64_t>({3}, {3, 0, 1}));
  ug.Output("Out");
  ug.CheckGrad({.inputs = {"X"}});

  OpTest short_pad("sequence_pad");
  short_pad.Input("X", x)
      .Input("PadValue", MakeTensor<float>({1}, {0}))
      .Attr("padded_length", 2)
      .Output("Out")
      .Output("Length");
  Status st = short_pad.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "sequence_pad: padded_length 2 is shorter than the longest sequence (3)");

  // A float Length was read as int64, past the end of its buffer (found by the ASan run of test_errors.py).
  OpTest float_len("sequence_unpad");
  float_len.Input("X", RandomTensor(DType::kFloat32, {3, 3, 2}, 7)).Input("Length", MakeTensor<float>({3}, {3, 0, 1}));
  float_len.Output("Out");
  st = float_len.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "sequence_unpad: Length must be int32 or int64, got float32");
}

TEST_CASE("sequence_reverse reverses rows within sequences; its gradient checks") {
  Tensor x = WithLoD(MakeTensor<float>({5, 1}, {1, 2, 3, 4, 5}), {{0, 3, 3, 5}});
  OpTest t("sequence_reverse");
  t.Input("X", x).Output("Y");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Y", MakeTensor<float>({5, 1}, {3, 2, 1, 5, 4}), {0, 0});
  CHECK(t.Out("Y").lod() == x.lod());
  OpTest g("sequence_reverse");
  g.Input("X", WithLoD(RandomTensor(DType::kFloat32, {5, 2}, 10), {{0, 3, 3, 5}})).Output("Y");
  g.CheckGrad({.inputs = {"X"}, .output = "Y"});
}

TEST_CASE("sequence_mask turns lengths into 0/1 rows") {
  OpTest t("sequence_mask");
  t.Input("X", MakeTensor<int64_t>({3}, {2, 0, 3})).Output("Y");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Y", MakeTensor<int64_t>({3, 3}, {1, 1, 0, 0, 0, 0, 1, 1, 1}), {0, 0});
  OpTest f("sequence_mask");
  f.Input("X", MakeTensor<int32_t>({2}, {1, 2})).Attr("maxlen", 4).Attr("out_dtype", 5).Output("Y");
  REQUIRE_OK(f.Run());
  CHECK(f.CompiledDims("Y") == Dims{2, 4});
  f.ExpectOutput("Y", MakeTensor<float>({2, 4}, {1, 0, 0, 0, 1, 1, 0, 0}), {0, 0});
}

TEST_CASE("a sequence op on a batch without LoD is a run-time error saying how to feed one") {
  OpTest t("sequence_pool");
  t.Input("X", RandomTensor(DType::kFloat32, {4, 2}, 1)).Output("Out");
  Status st = t.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "sequence_pool: X has no LoD, but sequence_pool works on a batch of sequences");
}

TEST_CASE("row-wise ops keep their input's LoD; reductions and declared rules do not") {
  Tensor x = WithLoD(RandomTensor(DType::kFloat32, {5, 3}, 11), {{0, 2, 5}});
  OpTest relu("relu");
  relu.Input("X", x).Output("Out");
  REQUIRE_OK(relu.Run());
  CHECK(relu.CompiledLoDLevel("Out") == 1);
  CHECK(relu.Out("Out").lod() == x.lod());

  OpTest add("elementwise_add");
  add.Input("X", x).Input("Y", RandomTensor(DType::kFloat32, {3}, 12)).Output("Out");
  REQUIRE_OK(add.Run());
  CHECK(add.CompiledLoDLevel("Out") == 1);
  CHECK(add.Out("Out").lod() == x.lod());

  OpTest fc("fc");
  fc.Input("Input", x).Input("W", RandomTensor(DType::kFloat32, {3, 4}, 14)).Output("Out");
  REQUIRE_OK(fc.Run());
  CHECK(fc.CompiledLoDLevel("Out") == 1);
  CHECK(fc.Out("Out").lod() == x.lod());

  OpTest mean("mean");
  mean.Input("X", x).Output("Out");
  REQUIRE_OK(mean.Run());
  CHECK(mean.CompiledLoDLevel("Out") == 0);
  CHECK(mean.Out("Out").lod().empty());

  OpTest lookup("lookup_table_v2");
  lookup.Input("W", RandomTensor(DType::kFloat32, {10, 4}, 13))
      .Input("Ids", WithLoD(MakeTensor<int64_t>({3}, {1, 5, 9}), {{0, 1, 3}}))
      .Output("Out");
  REQUIRE_OK(lookup.Run());
  CHECK(lookup.CompiledLoDLevel("Out") == 1);
  CHECK(lookup.Out("Out").lod() == LoD{{0, 1, 3}});
}

TEST_CASE("LoDProblem validates offsets against the row count") {
  CHECK(runtime::LoDProblem({{0, 2, 5}}, 5).empty());
  CHECK(runtime::LoDProblem({{0, 1, 2}, {0, 2, 5}}, 5).empty());
  CHECK(runtime::LoDProblem({{0, 2, 4}}, 5) == "level 0 ends at 4 but the tensor has 5 rows");
  CHECK(runtime::LoDProblem({{1, 2, 5}}, 5) == "level 0 starts at 1, not 0");
  CHECK(runtime::LoDProblem({{0, 3, 2, 5}}, 5) == "level 0 decreases at position 2 (2 after 3)");
  CHECK(runtime::LoDProblem({{0, 1, 3}, {0, 2, 5}}, 5) == "level 0 ends at 3 but level 1 has 2 sequences");
  CHECK(runtime::LoDProblem({{}}, 0) == "level 0 is empty (it needs at least the offset 0)");
}

}  // namespace
}  // namespace paddlec::testing
