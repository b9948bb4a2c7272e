// The table-driven op test harness: builds a one-op program, compiles it (validate + infer-shape),
// runs it on every available place, compares outputs to references, and checks gradients by
// central differences.
//
//   OpTest t("elementwise_add");
//   t.Input("X", MakeTensor<float>({2, 3}, {...})).Input("Y", MakeTensor<float>({3}, {...}))
//    .Attr("axis", 1).Output("Out");
//   REQUIRE_OK(t.Run());
//   t.ExpectOutput("Out", MakeTensor<float>({2, 3}, {...}), {.atol = 1e-6});
//   t.CheckGrad({.inputs = {"X", "Y"}});
//
// Only attributes that differ from their defaults are set, so defaults are exercised too. Places
// without a device (a GPU on this machine) are skipped with a visible doctest MESSAGE.
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "paddlec/ir/program.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/runtime/tensor.h"

namespace paddlec::testing {

using runtime::Tensor;

/// The allocator test tensors live in.
runtime::Allocator& HostAllocator();

template <class T>
Tensor MakeTensor(const Dims& dims, const std::vector<T>& values);
/// A tensor of `dims` with every element equal to `value`.
template <class T>
Tensor FullTensor(const Dims& dims, T value);
/// Uniform random values in [lo, hi) (integers: [lo, hi) truncated), reproducible from `seed`.
Tensor RandomTensor(DType dtype, const Dims& dims, uint64_t seed, double lo = -1.0, double hi = 1.0);
template <class T>
std::vector<T> ToVector(const Tensor& t);
/// Element values as doubles, whatever the dtype.
std::vector<double> ToDoubles(const Tensor& t);
/// A copy converted to another dtype.
Tensor Cast(const Tensor& t, DType to);
/// A rank-4 NCHW tensor rearranged to oneDNN's nChw{block}c (to_blocked), or back; the channels
/// must be a multiple of `block`. For kernels run on the layout pass's blocked tensors.
Tensor Reblock(const Tensor& t, int64_t block, bool to_blocked);
/// A .npy file under testdata/ (path relative to the repository root).
Tensor LoadGolden(const std::string& relative_path);

struct Tolerance {
  double atol = 1e-6;
  double rtol = 1e-6;
};

/// Fails the current test (with the first mismatching indices) unless dims match and every element
/// satisfies |actual - expected| <= atol + rtol * |expected|. NaNs must match NaNs.
void ExpectClose(const Tensor& actual, const Tensor& expected, Tolerance tol, const std::string& what);

/// REQUIRE that a Status is OK, printing the rendered error otherwise.
#define REQUIRE_OK(expr)                                                              \
  do {                                                                                \
    ::paddlec::Status pc_test_st_ = (expr);                                           \
    if (!pc_test_st_.ok()) FAIL(pc_test_st_.error().Render());                        \
  } while (0)
#define CHECK_OK(expr)                                                                \
  do {                                                                                \
    ::paddlec::Status pc_test_st_ = (expr);                                           \
    if (!pc_test_st_.ok()) FAIL_CHECK(pc_test_st_.error().Render());                  \
  } while (0)

class OpTest {
 public:
  explicit OpTest(std::string op_type);
  ~OpTest();

  /// Binds a tensor to input `slot` (a variable named like the slot, or `slot_i` for lists).
  OpTest& Input(const std::string& slot, Tensor t);
  OpTest& Inputs(const std::string& slot, std::vector<Tensor> ts);
  /// Declares the compile-time dims of an input (e.g. a -1 batch) instead of the tensor's own.
  OpTest& CompileDims(const std::string& slot, const Dims& dims, int i = 0);
  /// Binds `count` output variables to `slot`.
  OpTest& Output(const std::string& slot, int count = 1);
  template <class T>
  OpTest& Attr(const std::string& name, const T& value) {
    attrs_.push_back(ops::MakeAttr<T>(name, value));
    return *this;
  }
  OpTest& Attr(const std::string& name, const char* value) { return Attr<std::string>(name, std::string(value)); }

  /// Validates and infers shapes only (no execution). Errors come back as from `paddlec compile`.
  Status Compile();
  /// Compiles, then runs on every available place. Checks that compile-time inferred dims match
  /// the run-time dims (with -1 matching anything).
  Status Run();
  /// The CPU result of the last Run.
  const Tensor& Out(const std::string& slot, int i = 0) const;
  /// Compares the output of every place to `expected`.
  void ExpectOutput(const std::string& slot, const Tensor& expected, Tolerance tol = {}, int i = 0);
  /// The compile-time dims inferred for an output.
  Dims CompiledDims(const std::string& slot, int i = 0);
  /// The compile-time lod_level inferred for an output (inputs with a LoD declare its depth).
  int CompiledLoDLevel(const std::string& slot, int i = 0);

  struct GradCheck {
    std::vector<std::string> inputs;  // input slots to differentiate (float tensors only)
    std::string output = "Out";       // loss = sum(W * output) with a fixed random W
    double eps = 1e-3;                // central-difference step
    Tolerance tol = {1e-4, 1e-3};
    /// Run forward and grad ops in float64 when both have float64 CPU kernels (precise references).
    bool prefer_float64 = true;
  };
  /// Generates the grad op(s) with the op's gradient maker, runs them, and compares every gradient
  /// to central differences of the loss.
  void CheckGrad(const GradCheck& check);

  struct Impl;  // implementation detail, public for the helpers in op_test.cc

 private:
  std::unique_ptr<Impl> impl_;
  std::string type_;
  std::vector<ops::pb::OpDesc::Attr> attrs_;
};

/// The message of the error compiling `t` gives; fails the test case when it compiles.
std::string CompileError(OpTest& t);

}  // namespace paddlec::testing
