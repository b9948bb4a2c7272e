// squared_l2_norm: Out = sum(X^2), used by gradient clipping by global norm, and its gradient.
#include <vector>

#include "loss/loss_common.h"

namespace paddlec::ops {
namespace {

constexpr InSlot kX{0, "X"};
constexpr OutSlot kOut{0, "Out"};
// squared_l2_norm_grad: (X, Out@GRAD) -> X@GRAD.
constexpr InSlot kDOut{1, "Out@GRAD"};
constexpr OutSlot kDX{0, "X@GRAD"};

Status InferSquaredL2Norm(InferShapeContext& ctx) {
  ctx.SetOutput(kOut, {1}, ctx.InputDType(kX));
  return Status::OK();
}

/// The sum runs over fixed blocks whose partial sums are added in block order, so the result does not
/// depend on the thread count (bit-identical runs); partials are kept in double.
template <class T>
class SquaredL2NormKernel final : public OpKernel {
 public:
  explicit SquaredL2NormKernel(const KernelInit&) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const T* xp = x.data<T>();
    const int64_t n = x.numel();
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    if (static_cast<int64_t>(partials_.size()) < blocks) partials_.resize(blocks);  // grows only with X
    ParallelFor(blocks, std::max<int64_t>(1, kElementwiseGrain / kBlock), [&](int64_t b, int64_t e) {
      for (int64_t blk = b; blk < e; ++blk) {
        const int64_t begin = blk * kBlock, len = std::min(kBlock, n - begin);
        partials_[blk] = static_cast<double>(ConstEigenVec<T>(xp + begin, len).square().sum());
      }
    });
    double total = 0;
    for (int64_t blk = 0; blk < blocks; ++blk) total += partials_[blk];
    ctx.Out(kOut).data<T>()[0] = static_cast<T>(total);
    return Status::OK();
  }

 private:
  static constexpr int64_t kBlock = 8192;
  std::vector<double> partials_;
};

template <class T>
Status SquaredL2NormGradCpu(KernelContext& ctx) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(kX);
  const T scale = T(2) * ctx.In(kDOut).data<T>()[0];
  const T* xp = x.data<T>();
  T* gp = dx->data<T>();
  ParallelChunks(x.numel(),
                 [&](int64_t b, int64_t n) { MutEigenVec<T>(gp + b, n) = scale * ConstEigenVec<T>(xp + b, n); });
  return Status::OK();
}

}  // namespace

void RegisterSquaredL2NormOps(OpRegistry& r) {
  r.Add("squared_l2_norm")
      .Doc("Squared L2 norm of a tensor: Out = sum(X^2), a [1] tensor. Gradient clipping by global norm sums these.")
      .Input(kX, "Input tensor of any shape, float32 or float64.")
      .Output(kOut, "The sum of squares of all elements, shape [1], X's dtype.")
      .InferShape(InferSquaredL2Norm)
      .Grad()
      .KernelDTypeFromInput(kX)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<SquaredL2NormKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<SquaredL2NormKernel<double>>());
  r.Add("squared_l2_norm_grad")
      .GradOf("squared_l2_norm")
      .Doc("Gradient of squared_l2_norm: X@GRAD = 2 * Out@GRAD * X.")
      .Input(kX, "The forward input.")
      .Input(kDOut, "Gradient of the loss with respect to Out ([1]).")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .KernelDTypeFromInput(kX)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(SquaredL2NormGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(SquaredL2NormGradCpu<double>));
}

}  // namespace paddlec::ops
