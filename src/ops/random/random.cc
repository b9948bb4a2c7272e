// Random initializers: uniform_random and gaussian_random.
//
// Each kernel owns a Philox generator keyed by the op's `seed` attribute, or, when that is 0, by the
// seed the plan derives for this op from the program seed; and a step counter bumped every Run.
// Element i of step s is a pure function of (key, s, i): a fixed seed reproduces every step bit for
// bit whatever the thread count, while successive steps draw fresh values. (PaddlePaddle re-seeds a
// fixed-seed op every run and so repeats its values; paddlec does not.)
#include <cmath>

#include "common/cpu_kernels.h"
#include "common/philox.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

constexpr InSlot kShapeTensor{0, "ShapeTensor"};
constexpr InSlot kShapeTensorList{1, "ShapeTensorList"};
constexpr OutSlot kOut{0, "Out"};

/// Elements per thread below which generation stays on one thread (Philox costs ~10 multiplies per 4 words).
constexpr int64_t kRandomGrain = 8192;

/// The `shape` attribute as Out's dims, shared by both ops (tensor-valued shapes are not supported yet).
StatusOr<Dims> RandomOutDims(InferShapeContext& ctx) {
  for (InSlot s : {kShapeTensor, kShapeTensorList})
    if (ctx.HasInput(s))
      return ctx.Fail("input {} (bound to '{}') is not supported yet: give `shape` as an attribute instead", s.name,
                      ctx.InputName(s));
  auto shape = ctx.Attr<std::vector<int64_t>>("shape");
  PC_ASSIGN_OR_RETURN(Dims dims, Dims::FromRange(shape.begin(), shape.end()));
  for (int i = 0; i < dims.rank(); ++i)
    if (dims[i] < 0)
      return ctx.Fail("shape {} has negative dimension {} at index {}: {} needs a fully known shape", dims.ToString(),
                      dims[i], i, ctx.op_type());
  return dims;
}

Status InferUniform(InferShapeContext& ctx) {
  PC_ASSIGN_OR_RETURN(Dims dims, RandomOutDims(ctx));
  float lo = ctx.Attr<float>("min"), hi = ctx.Attr<float>("max");
  if (!(lo <= hi)) return ctx.Fail("min {} is greater than max {}", lo, hi);
  int diag_num = ctx.Attr<int>("diag_num"), diag_step = ctx.Attr<int>("diag_step");
  if (diag_num > 0) {
    int64_t last = int64_t{diag_num - 1} * (diag_step + 1);
    if (last >= dims.Numel())
      return ctx.Fail(
          "diag_num = {} and diag_step = {} put the last diagonal value at index {}, but Out of shape {} "
          "has {} elements",
          diag_num, diag_step, last, dims.ToString(), dims.Numel());
  }
  PC_ASSIGN_OR_RETURN(DType dtype, DTypeFromProto(ctx.Attr<int>("dtype")));
  ctx.SetOutput(kOut, dims, dtype);
  return Status::OK();
}

Status InferGaussian(InferShapeContext& ctx) {
  PC_ASSIGN_OR_RETURN(Dims dims, RandomOutDims(ctx));
  PC_ASSIGN_OR_RETURN(DType dtype, DTypeFromProto(ctx.Attr<int>("dtype")));
  ctx.SetOutput(kOut, dims, dtype);
  return Status::OK();
}

uint64_t KeyOf(const KernelInit& init) {
  int seed = init.attrs.Get<int>("seed");
  return seed != 0 ? static_cast<uint64_t>(static_cast<uint32_t>(seed)) : init.seed;
}

/// Calls put(i, block) for the elements [b, e) that counter block q = i / per_block produces.
template <int kPerBlock, class Put>
void ForBlocks(const Philox& rng, uint64_t step, int64_t b, int64_t e, Put put) {
  for (int64_t q = b / kPerBlock; q * kPerBlock < e; ++q) {
    auto block = rng.Block(step, static_cast<uint64_t>(q));
    int64_t first = std::max(b, q * kPerBlock), last = std::min(e, (q + 1) * kPerBlock);
    for (int64_t i = first; i < last; ++i) put(i, block);
  }
}

// ---- uniform_random -------------------------------------------------------------------------

/// Uniform in [min, max): float32 draws 24 random bits per element (Philox::UniformFloat), float64 53
/// (Philox::UniformDouble); a value that rounds up to max is moved to the largest T below it.
template <class T>
class UniformKernel final : public OpKernel {
 public:
  explicit UniformKernel(const KernelInit& init)
      : rng_(KeyOf(init)),
        step_(init.start_step),
        min_(init.attrs.Get<float>("min")),
        max_(init.attrs.Get<float>("max")),
        diag_num_(init.attrs.Get<int>("diag_num")),
        diag_step_(init.attrs.Get<int>("diag_step")),
        diag_val_(static_cast<T>(init.attrs.Get<float>("diag_val"))) {}

  Status Run(KernelContext& ctx) override {
    Tensor& out = ctx.Out(kOut);
    T* p = out.data<T>();
    const uint64_t step = step_++;
    const double lo = min_, span = max_ - min_;
    const T hi = static_cast<T>(max_), below_hi = std::nextafter(hi, static_cast<T>(min_));
    auto map = [&](double u) {
      // An explicit fma: the same bits whatever the compiler's contraction, and what the GPU computes.
      T v = static_cast<T>(std::fma(span, u, lo));
      return v >= hi && span > 0 ? below_hi : v;
    };
    ParallelFor(out.numel(), kRandomGrain, [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<T, float>) {
        ForBlocks<4>(rng_, step, b, e, [&](int64_t i, const auto& w) { p[i] = map(Philox::ToUnitFloat(w[i % 4])); });
      } else {
        ForBlocks<2>(rng_, step, b, e, [&](int64_t i, const auto& w) {
          int j = static_cast<int>(i % 2) * 2;
          p[i] = map(Philox::ToUnitDouble(w[j], w[j + 1]));
        });
      }
    });
    for (int64_t i = 0; i < diag_num_; ++i) p[i * (diag_step_ + 1)] = diag_val_;
    return Status::OK();
  }

 private:
  Philox rng_;
  uint64_t step_;  // draw number of the next run, counting runs before a resume
  double min_, max_;
  int64_t diag_num_, diag_step_;
  T diag_val_;
};

// ---- gaussian_random ------------------------------------------------------------------------

/// mean + std * N(0, 1), where elements 2q and 2q+1 are the Box-Muller pair of counter block q
/// (the same values as Philox::Normal).
template <class T>
class GaussianKernel final : public OpKernel {
 public:
  explicit GaussianKernel(const KernelInit& init)
      : rng_(KeyOf(init)), step_(init.start_step), mean_(init.attrs.Get<float>("mean")), std_(init.attrs.Get<float>("std")) {}

  Status Run(KernelContext& ctx) override {
    Tensor& out = ctx.Out(kOut);
    T* p = out.data<T>();
    const uint64_t step = step_++;
    const int64_t n = out.numel();
    ParallelFor((n + 1) / 2, kRandomGrain / 2, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        auto w = rng_.Block(step, static_cast<uint64_t>(q));
        double u1 = Philox::ToUnitDouble(w[0], w[1]), u2 = Philox::ToUnitDouble(w[2], w[3]);
        if (u1 < 1e-300) u1 = 1e-300;
        double r = std::sqrt(-2.0 * std::log(u1));
        constexpr double kTwoPi = 6.283185307179586;
        // Both halves computed unconditionally so the compiler fuses sin and cos into one sincos call.
        double z0 = r * std::cos(kTwoPi * u2), z1 = r * std::sin(kTwoPi * u2);
        p[2 * q] = static_cast<T>(std::fma(std_, z0, mean_));
        if (2 * q + 1 < n) p[2 * q + 1] = static_cast<T>(std::fma(std_, z1, mean_));
      }
    });
    return Status::OK();
  }

 private:
  Philox rng_;
  uint64_t step_;  // draw number of the next run, counting runs before a resume
  double mean_, std_;
};

}  // namespace

void RegisterRandomOps(OpRegistry& r) {
  r.Add("uniform_random")
      .Doc(
          "Out = uniform random values in [min, max) of `shape` and `dtype`, then `diag_num` entries set to "
          "`diag_val` at flat positions i * (diag_step + 1).")
      .Input(kShapeTensor, "A 1-D int tensor overriding `shape` (not supported yet).", kDispensable)
      .Input(kShapeTensorList, "1-element int tensors overriding `shape` (not supported yet).",
             kDuplicable | kDispensable)
      .Output(kOut, "The random tensor.")
      .Attr("shape", std::vector<int64_t>{}, "Shape of Out; [] makes a 0-D tensor.")
      .Attr("min", -1.0f, "Lower bound (inclusive).")
      .Attr("max", 1.0f, "Upper bound (exclusive); must be >= min.")
      .Attr("seed", 0, "Random seed; 0 derives one from the program seed and the op's position.")
      .Attr("diag_num", 0, "Number of diagonal entries to overwrite with diag_val (0 = none).")
      .Min(0)
      .Attr("diag_step", 0, "Flat-index step between diagonal entries, minus one.")
      .Min(0)
      .Attr("diag_val", 1.0f, "Value written at the diagonal entries.")
      .Attr("dtype", 5, "Element type of Out as a VarType.Type number: 5 (float32) or 6 (float64).")
      .AllowedInts({5, 6})
      .InferShape(InferUniform)
      .KernelDTypeFromAttr("dtype")
      .NoGradient()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<UniformKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<UniformKernel<double>>());

  r.Add("gaussian_random")
      .Doc("Out = normal random values with the given mean and standard deviation, of `shape` and `dtype`.")
      .Input(kShapeTensor, "A 1-D int tensor overriding `shape` (not supported yet).", kDispensable)
      .Input(kShapeTensorList, "1-element int tensors overriding `shape` (not supported yet).",
             kDuplicable | kDispensable)
      .Output(kOut, "The random tensor.")
      .Attr("shape", std::vector<int64_t>{}, "Shape of Out; [] makes a 0-D tensor.")
      .Attr("mean", 0.0f, "Mean of the distribution.")
      .Attr("std", 1.0f, "Standard deviation of the distribution.")
      .Min(0)
      .Attr("seed", 0, "Random seed; 0 derives one from the program seed and the op's position.")
      .Attr("dtype", 5, "Element type of Out as a VarType.Type number: 5 (float32) or 6 (float64).")
      .AllowedInts({5, 6})
      .InferShape(InferGaussian)
      .KernelDTypeFromAttr("dtype")
      .NoGradient()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<GaussianKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<GaussianKernel<double>>());
}

}  // namespace paddlec::ops
