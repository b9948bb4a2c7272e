// The random family's CUDA kernels as paddlec kernels: uniform_random and gaussian_random, keyed and
// stepped exactly as random.cc's kernels (same Philox key from `seed` or the plan's per-op seed, a
// step counter bumped every Run), so a GPU draws the CPU's stream (random.cu says how exactly).
// Built into libpaddlec_cuda.so only.
#include "random/random_cuda.h"

#include <cmath>

#include "common/cuda_host.h"

namespace paddlec::ops {
namespace {

constexpr OutSlot kOut{0, "Out"};

/// random.cc's KeyOf: the `seed` attribute, or the plan's seed for this op when it is 0.
uint64_t KeyOf(const KernelInit& init) {
  int seed = init.attrs.Get<int>("seed");
  return seed != 0 ? static_cast<uint64_t>(static_cast<uint32_t>(seed)) : init.seed;
}

template <class T>
class UniformGpu final : public OpKernel {
 public:
  explicit UniformGpu(const KernelInit& init)
      : key_(KeyOf(init)),
        step_(init.start_step),
        min_(init.attrs.Get<float>("min")),
        max_(init.attrs.Get<float>("max")),
        diag_num_(init.attrs.Get<int>("diag_num")),
        diag_step_(init.attrs.Get<int>("diag_step")),
        diag_val_(static_cast<T>(init.attrs.Get<float>("diag_val"))) {}

  // Each run draws new values (its step is a launch argument): a replay would repeat one draw.
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override {
    Tensor& out = ctx.Out(kOut);
    const uint64_t step = step_++;  // as the CPU kernel: runs so far, counting those before a resume
    const double lo = min_, span = max_ - min_;
    const T hi = static_cast<T>(max_), below_hi = std::nextafter(hi, static_cast<T>(min_));
    return cuda::Launched(cuda::Uniform<T>(out.data<T>(), out.numel(), key_, step, lo, span, hi, below_hi, diag_num_,
                                           diag_step_, diag_val_, cuda::Stream(ctx)),
                          "uniform_random");
  }

 private:
  uint64_t key_;
  uint64_t step_;
  double min_, max_;
  int64_t diag_num_, diag_step_;
  T diag_val_;
};

template <class T>
class GaussianGpu final : public OpKernel {
 public:
  explicit GaussianGpu(const KernelInit& init)
      : key_(KeyOf(init)), step_(init.start_step), mean_(init.attrs.Get<float>("mean")), std_(init.attrs.Get<float>("std")) {}

  // Each run draws new values (its step is a launch argument): a replay would repeat one draw.
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override {
    Tensor& out = ctx.Out(kOut);
    const uint64_t step = step_++;
    // The CPU kernel's value for u1 < 1e-300 (the expression GCC folds there, folded here the same way).
    const double r_floor = std::sqrt(-2.0 * std::log(1e-300));
    return cuda::Launched(
        cuda::Gaussian<T>(out.data<T>(), out.numel(), key_, step, mean_, std_, r_floor, cuda::Stream(ctx)),
        "gaussian_random");
  }

 private:
  uint64_t key_;
  uint64_t step_;
  double mean_, std_;
};

}  // namespace

Status RegisterRandomCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(
      r.AddKernel("uniform_random", DeviceType::kCUDA, DType::kFloat32, MakeKernelClass<UniformGpu<float>>()));
  PC_RETURN_IF_ERROR(
      r.AddKernel("uniform_random", DeviceType::kCUDA, DType::kFloat64, MakeKernelClass<UniformGpu<double>>()));
  PC_RETURN_IF_ERROR(
      r.AddKernel("gaussian_random", DeviceType::kCUDA, DType::kFloat32, MakeKernelClass<GaussianGpu<float>>()));
  return r.AddKernel("gaussian_random", DeviceType::kCUDA, DType::kFloat64, MakeKernelClass<GaussianGpu<double>>());
}

}  // namespace paddlec::ops
