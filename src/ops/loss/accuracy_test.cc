// accuracy against hand-counted references, with shape errors.
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

/// Runs accuracy and checks its three outputs.
void ExpectAccuracy(OpTest& t, int correct, int total) {
  REQUIRE_OK(t.Run());
  t.ExpectOutput("Accuracy", MakeTensor<float>({1}, {total ? static_cast<float>(correct) / total : 0.0f}), {0, 0});
  t.ExpectOutput("Correct", MakeTensor<int32_t>({1}, {correct}), {0, 0});
  t.ExpectOutput("Total", MakeTensor<int32_t>({1}, {total}), {0, 0});
}

OpTest& AccuracyOutputs(OpTest& t) { return t.Output("Accuracy").Output("Correct").Output("Total"); }

TEST_CASE("accuracy top-1") {
  OpTest t("accuracy");
  t.Input("Out", RandomTensor(DType::kFloat32, {7, 1}, 1, 0, 1));
  t.Input("Indices", MakeTensor<int64_t>({7, 1}, {3, 1, 4, 1, 5, 9, 2}));
  t.Input("Label", MakeTensor<int64_t>({7, 1}, {3, 0, 4, 2, 5, 8, 2}));
  AccuracyOutputs(t);
  ExpectAccuracy(t, 4, 7);
}

TEST_CASE("accuracy top-3 with tied values and repeated indices") {
  // Out's values are tied in rows 0 and 2; only the indices decide. Row 3 repeats the label's index
  // and must count once; row 4's label is absent.
  OpTest t("accuracy");
  t.Input("Out",
          MakeTensor<double>({5, 3}, {0.5, 0.5, 0.5, 0.9, 0.05, 0.05, 0.3, 0.3, 0.3, 0.6, 0.2, 0.2, 0.7, 0.2, 0.1}));
  t.Input("Indices", MakeTensor<int64_t>({5, 3}, {0, 1, 2, 4, 6, 8, 2, 0, 1, 3, 3, 3, 5, 6, 7}));
  t.Input("Label", MakeTensor<int64_t>({5, 1}, {2, 4, 1, 3, 0}));
  AccuracyOutputs(t);
  ExpectAccuracy(t, 4, 5);
}

TEST_CASE("accuracy with int32 indices and labels, and an empty batch") {
  OpTest t("accuracy");
  t.Input("Out", RandomTensor(DType::kFloat32, {3, 2}, 2));
  t.Input("Indices", MakeTensor<int32_t>({3, 2}, {1, 2, 3, 4, 5, 6}));
  t.Input("Label", MakeTensor<int32_t>({3, 1}, {2, 5, 5}));
  AccuracyOutputs(t);
  ExpectAccuracy(t, 2, 3);

  OpTest empty("accuracy");
  empty.Input("Out", MakeTensor<float>({0, 2}, {})).Input("Indices", MakeTensor<int64_t>({0, 2}, {}));
  empty.Input("Label", MakeTensor<int64_t>({0, 1}, {}));
  AccuracyOutputs(empty);
  ExpectAccuracy(empty, 0, 0);
}

TEST_CASE("accuracy rejects negative labels at run time") {
  OpTest t("accuracy");
  t.Input("Out", RandomTensor(DType::kFloat32, {2, 1}, 3)).Input("Indices", MakeTensor<int64_t>({2, 1}, {0, 1}));
  t.Input("Label", MakeTensor<int64_t>({2, 1}, {0, -1}));
  AccuracyOutputs(t);
  Status st = t.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "Label holds -1 at row 1: class indices must be >= 0");
}

TEST_CASE("accuracy keeps [1] outputs for an unknown batch") {
  OpTest t("accuracy");
  t.Input("Out", RandomTensor(DType::kFloat32, {4, 3}, 4)).CompileDims("Out", {-1, 3});
  t.Input("Indices", MakeTensor<int64_t>({4, 3}, {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2})).CompileDims("Indices", {-1, 3});
  t.Input("Label", MakeTensor<int64_t>({4, 1}, {0, 3, 2, 5})).CompileDims("Label", {-1, 1});
  AccuracyOutputs(t);
  ExpectAccuracy(t, 2, 4);
  CHECK(t.CompiledDims("Accuracy") == Dims{1});
  CHECK(t.CompiledDims("Correct") == Dims{1});
  CHECK(t.CompiledDims("Total") == Dims{1});
}

TEST_CASE("accuracy shape errors name both shapes") {
  struct Case {
    Dims out;
    Tensor indices, label;
    const char* message;
  };
  const Case cases[] = {
      {{4},
       FullTensor<int64_t>({4}, 0),
       FullTensor<int64_t>({4, 1}, 0),
       "Out has shape [4] but must be [N, k]: the top-k values of every sample"},
      {{4, 3},
       FullTensor<int64_t>({4, 2}, 0),
       FullTensor<int64_t>({4, 1}, 0),
       "Out has shape [4, 3] but Indices has shape [4, 2]: both come from top_k and must match"},
      {{4, 3},
       FullTensor<int64_t>({4, 3}, 0),
       FullTensor<int64_t>({4, 2}, 0),
       "Out has shape [4, 3] but Label has shape [4, 2]: Label must be [N, 1], one class per sample"},
      {{4, 3},
       FullTensor<int64_t>({4, 3}, 0),
       FullTensor<int64_t>({5, 1}, 0),
       "Out has shape [4, 3] but Label has shape [5, 1]: Label must be [N, 1], one class per sample"},
      {{4, 3},
       FullTensor<float>({4, 3}, 0),
       FullTensor<int64_t>({4, 1}, 0),
       "Indices is float32: it must hold int64 or int32 class indices"},
      {{4, 3},
       FullTensor<int64_t>({4, 3}, 0),
       FullTensor<double>({4, 1}, 0),
       "Label is float64: it must hold int64 or int32 class indices"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    OpTest t("accuracy");
    t.Input("Out", RandomTensor(DType::kFloat32, c.out, 5)).Input("Indices", c.indices).Input("Label", c.label);
    AccuracyOutputs(t);
    Status st = t.Compile();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == c.message);
  }
}

}  // namespace
}  // namespace paddlec::testing
