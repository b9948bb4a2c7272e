// Tests of the executor's CPU threads: denormals flushed in every thread that runs kernels (or kept
// on request), and the caller's thread count and float mode left as they were.
#include "paddlec/runtime/threads.h"

#include <doctest/doctest.h>
#include <omp.h>
#include <xmmintrin.h>

#include <cmath>

#include "paddlec/exec/executor.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::exec {
namespace {

// 2^20 elements: the scale kernel splits them across both threads, so the second half of the output
// is computed by an OpenMP worker, not by the thread that called Run.
constexpr int64_t kN = int64_t{1} << 20;
constexpr char kScale[] = R"pb(
  blocks {
    idx: 0
    parent_idx: -1
    vars {
      name: "x"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: -1 } }
      }
    }
    ops {
      type: "scale"
      inputs { parameter: "X" arguments: "x" }
      outputs { parameter: "Out" arguments: "y" }
      attrs { name: "scale" type: FLOAT f: 1e-20 }
    }
  }
)pb";

/// Runs y = x * 1e-20 on x = 1e-20 everywhere (a normal operand, a denormal product) with 2 threads
/// and returns how many of y's values are zero in the first and in the second half.
std::pair<int64_t, int64_t> ZerosPerHalf(bool flush) {
  runtime::OverrideMachineBusyForTesting(0);  // two threads even beside other processes
  auto m = testing::CompileText(kScale, "validate,infer-shape", "t.pbtxt");
  REQUIRE(m.ok());
  auto exec = Executor::Create(Place::CPU(), {.num_threads = 2, .flush_denormals = flush});
  REQUIRE(exec.ok());
  runtime::Scope scope;
  std::vector<float> x(kN, 1e-20f);
  REQUIRE((*exec)->device().CopyFromHost(testing::MakeTensor<float>({kN}, x), scope.Var("x").tensor()).ok());
  auto plan = (*exec)->Prepare((*m)->main().global_block(), scope);
  REQUIRE(plan.ok());
  REQUIRE((*plan)->Run().ok());
  const float* y = scope.Find("y")->tensor().data<float>();
  std::pair<int64_t, int64_t> zeros{0, 0};
  for (int64_t i = 0; i < kN; ++i) (i < kN / 2 ? zeros.first : zeros.second) += y[i] == 0.0f;
  runtime::OverrideMachineBusyForTesting(-1);
  return zeros;
}

TEST_CASE("Denormal results are flushed to zero in the calling thread and in the worker threads") {
  REQUIRE(std::fpclassify(1e-20f * 1e-20f) == FP_SUBNORMAL);  // this test thread keeps IEEE denormals
  auto [first, second] = ZerosPerHalf(true);
  CHECK(first == kN / 2);
  CHECK(second == kN / 2);
  // The caller's float mode is its own again after the run.
  CHECK_FALSE(runtime::DenormalsFlushed());
}

TEST_CASE("--keep-denormals keeps IEEE gradual underflow in every thread") {
  ZerosPerHalf(true);  // the workers were switched to flushing first: they must be switched back
  auto [first, second] = ZerosPerHalf(false);
  CHECK(first == 0);
  CHECK(second == 0);
}

TEST_CASE("An executor's thread count applies while its plans run, not to the caller afterwards") {
  runtime::OverrideMachineBusyForTesting(0);
  runtime::ScopedMaxThreads caller(2);
  for (int threads : {1, 3}) {
    runtime::KernelThreadState saved = runtime::EnterKernelThreads(threads, true);
    CHECK(omp_get_max_threads() == threads);
    CHECK(runtime::DenormalsFlushed());
    runtime::LeaveKernelThreads(saved);
    CHECK(omp_get_max_threads() == 2);
    CHECK_FALSE(runtime::DenormalsFlushed());
  }
  // Through a plan: a 1-thread executor leaves the caller's 2 threads as they were.
  auto m = testing::CompileText(kScale, "validate,infer-shape", "t.pbtxt");
  REQUIRE(m.ok());
  auto exec = Executor::Create(Place::CPU(), {.num_threads = 1});
  REQUIRE(exec.ok());
  runtime::Scope scope;
  REQUIRE((*exec)->device().CopyFromHost(testing::MakeTensor<float>({4}, {1, 2, 3, 4}), scope.Var("x").tensor()).ok());
  REQUIRE((*exec)->RunOnce((*m)->main().global_block(), scope).ok());
  CHECK(omp_get_max_threads() == 2);
  runtime::OverrideMachineBusyForTesting(-1);
}

TEST_CASE("On a busy machine a run uses one thread except for large oneDNN primitives") {
  runtime::ScopedMaxThreads caller(1);
  for (int busy : {0, 1}) {
    CAPTURE(busy);
    runtime::OverrideMachineBusyForTesting(busy);
    runtime::KernelThreadState saved = runtime::EnterKernelThreads(2, true);
    CHECK(omp_get_max_threads() == (busy ? 1 : 2));
    CHECK(runtime::OneDnnThreads(1e6) == 1);  // small: always on the calling thread
    CHECK(runtime::OneDnnThreads(1e7) == (busy ? 1 : 2));
    CHECK(runtime::OneDnnThreads(1e8) == 2);  // large: the executor's threads, busy or not
    runtime::LeaveKernelThreads(saved);
    CHECK(omp_get_max_threads() == 1);
  }
  runtime::OverrideMachineBusyForTesting(-1);
}

TEST_CASE("Small work runs on the calling thread; large work is split by its cost") {
  runtime::ScopedMaxThreads two(2);
  int calls = 0, in_parallel = 0;
  runtime::ParallelFor(1000, 1000, [&](int64_t b, int64_t e) {
    ++calls;
    in_parallel += omp_in_parallel();
    CHECK(b == 0);
    CHECK(e == 1000);
  });
  CHECK(calls == 1);
  CHECK(in_parallel == 0);
  std::vector<int> thread_of(4000, -1);
  runtime::ParallelFor(4000, 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) thread_of[i] = omp_get_thread_num();
  });
  CHECK(thread_of.front() == 0);
  CHECK(thread_of.back() == 1);
}

}  // namespace
}  // namespace paddlec::exec
