// lookup_table_v2 / lookup_table_v2_grad against a gather and a scatter-add written here.
#include <random>

#include "testing/program_runner.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

/// Out = W[ids] with padding rows zeroed, in double.
Tensor RefLookup(const Tensor& w, const std::vector<int64_t>& ids, const Dims& ids_dims, int64_t padding_idx) {
  std::vector<double> wv = ToDoubles(w), out;
  int64_t dim = w.dims()[1];
  for (int64_t id : ids)
    for (int64_t j = 0; j < dim; ++j) out.push_back(id == padding_idx ? 0.0 : wv[id * dim + j]);
  Dims d = ids_dims;
  d.push_back(dim);
  return Cast(MakeTensor<double>(d, out), w.dtype());
}

TEST_CASE("lookup_table_v2 gathers rows for int64 and int32 ids of any shape, zeroing padding_idx") {
  std::vector<int64_t> ids = {3, 0, 9, 3, 5, 1};
  for (DType wt : {DType::kFloat32, DType::kFloat64})
    for (DType it : {DType::kInt64, DType::kInt32})
      for (int64_t pad : {int64_t{-1}, int64_t{3}})
        for (Dims shape : {Dims{6}, Dims{2, 3}, Dims{3, 1, 2}}) {
          CAPTURE(DTypeName(wt));
          CAPTURE(DTypeName(it));
          CAPTURE(pad);
          CAPTURE(shape.ToString());
          Tensor w = RandomTensor(wt, {10, 7}, 1);
          OpTest t("lookup_table_v2");
          t.Input("W", w).Input("Ids", Cast(MakeTensor<int64_t>(shape, ids), it)).Output("Out");
          if (pad != -1) t.Attr("padding_idx", pad);
          REQUIRE_OK(t.Run());
          t.ExpectOutput("Out", RefLookup(w, ids, shape, pad), {0, 0});
        }
  // A single id (0-D) and a wide table.
  Tensor w = RandomTensor(DType::kFloat32, {4, 513}, 2);
  OpTest s("lookup_table_v2");
  s.Input("W", w).Input("Ids", MakeTensor<int64_t>({}, {2})).Output("Out");
  REQUIRE_OK(s.Run());
  s.ExpectOutput("Out", RefLookup(w, {2}, {}, -1), {0, 0});
}

TEST_CASE("lookup_table_v2 keeps an unknown batch at compile time") {
  OpTest t("lookup_table_v2");
  t.Input("W", RandomTensor(DType::kFloat32, {10, 7}, 1)).Input("Ids", MakeTensor<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  t.CompileDims("Ids", {-1, 3}).Output("Out");
  REQUIRE_OK(t.Run());
  CHECK(t.CompiledDims("Out") == Dims{-1, 3, 7});
}

TEST_CASE("lookup_table_v2 rejects out-of-range ids at run time and bad shapes at compile time") {
  for (int64_t bad : {int64_t{10}, int64_t{-1}}) {
    OpTest t("lookup_table_v2");
    t.Input("W", RandomTensor(DType::kFloat32, {10, 7}, 1)).Input("Ids", MakeTensor<int64_t>({5}, {1, 2, 3, 4, bad}));
    t.Output("Out");
    Status st = t.Run();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() ==
          fmt::format("Ids holds {} at position 4, outside the vocabulary of W [10, 7]: ids must be in [0, 10)", bad));
  }
  // An out-of-range padding_idx is allowed and matches nothing but itself.
  OpTest p("lookup_table_v2");
  p.Input("W", RandomTensor(DType::kFloat32, {10, 7}, 1)).Input("Ids", MakeTensor<int64_t>({2}, {1, 12}));
  p.Output("Out").Attr("padding_idx", int64_t{12});
  REQUIRE_OK(p.Run());

  OpTest r("lookup_table_v2");
  r.Input("W", RandomTensor(DType::kFloat32, {10}, 1)).Input("Ids", MakeTensor<int64_t>({2}, {1, 2})).Output("Out");
  Status st = r.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() ==
        "W has shape [10] (rank 1) but lookup_table_v2 needs a 2-D table [vocabulary, embedding_dim]");

  OpTest f("lookup_table_v2");
  f.Input("W", RandomTensor(DType::kFloat32, {10, 7}, 1)).Input("Ids", RandomTensor(DType::kFloat32, {2}, 2));
  f.Output("Out");
  st = f.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "Ids is float32 but must be int64 or int32");
}

// float64 central differences, step 1e-6 (the loss is linear in W); tolerance 1e-7 + 1e-6 relative.
// Repeated ids check the accumulation, padding_idx that its row gets no gradient.
TEST_CASE("lookup_table_v2_grad matches central differences") {
  for (int64_t pad : {int64_t{-1}, int64_t{2}}) {
    CAPTURE(pad);
    OpTest t("lookup_table_v2");
    t.Input("W", RandomTensor(DType::kFloat32, {6, 5}, 3));
    t.Input("Ids", MakeTensor<int32_t>({2, 4}, {2, 0, 5, 2, 2, 1, 0, 4})).Output("Out");
    if (pad != -1) t.Attr("padding_idx", pad);
    t.CheckGrad({.inputs = {"W"}, .eps = 1e-6, .tol = {1e-7, 1e-6}});
  }
}

// A table large enough to be split across threads: the scatter-add must give the same bits with 1
// and 2 threads, and match a double-precision reference within 1e-5 (float32 sums of ~2 terms per row).
TEST_CASE("lookup_table_v2_grad is deterministic across thread counts") {
  const int64_t vocab = 20011, dim = 16, n = 40009;
  std::mt19937_64 rng(9);
  std::vector<int64_t> ids(n);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % vocab);
  Tensor w = RandomTensor(DType::kFloat32, {vocab, dim}, 4);
  Tensor dout = RandomTensor(DType::kFloat32, {n, dim}, 5);
  std::vector<Tensor> results;
  for (int threads : {1, 2}) {
    StepRunner run("lookup_table_v2_grad", {{"W", "w"}, {"Ids", "ids"}, {"Out@GRAD", "dout"}}, {{"W@GRAD", "dw"}});
    REQUIRE_OK(run.Start({{"w", w}, {"ids", MakeTensor<int64_t>({n}, ids)}, {"dout", dout}}, {.threads = threads}));
    REQUIRE_OK(run.Step());
    results.push_back(run.Get("dw"));
  }
  CHECK(ToVector<float>(results[0]) == ToVector<float>(results[1]));
  std::vector<double> ref(vocab * dim, 0.0), d = ToDoubles(dout);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < dim; ++j) ref[ids[i] * dim + j] += d[i * dim + j];
  ExpectClose(results[0], MakeTensor<double>({vocab, dim}, ref), {1e-5, 1e-5}, "W@GRAD");
}

}  // namespace
}  // namespace paddlec::testing
