// fc: a fully connected layer, Out = act(Input * W + Bias), as one GEMM whose bias and activation
// run as oneDNN post-ops (math/gemm.h), so Out is written once. PaddlePaddle's inference programs
// use the same op; paddlec's fuse-fc pass writes it in place of mul + elementwise_add (+ relu). The GPU
// runs it as cuBLAS's GEMM and fc.cu's epilogue (matmul_cuda.cc).
#include "common/cpu_kernels.h"
#include "math/fc_slots.h"
#include "math/gemm.h"
#include "math/matmul_shape.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using namespace fc;  // NOLINT: the op's shared slots and attributes

Status InferFc(InferShapeContext& ctx) {
  if (ctx.attrs().Get<bool>("padding_weights"))
    return ctx.Fail("padding_weights = true (a padded W layout) is not supported: W must be [K, N]");
  Dims x = ctx.InputDims(kInput), w = ctx.InputDims(kW);
  if (w.rank() != 2) return ctx.Fail("W has shape {} but fc needs a 2-D weight [K, N]", w.ToString());
  PC_ASSIGN_OR_RETURN(matmul::MulDims d, matmul::AnalyzeMul(x, w, ctx.attrs().Get<int>("in_num_col_dims"), 1));
  if (ctx.HasInput(kBias)) {
    Dims b = ctx.InputDims(kBias);
    if (b.Numel() >= 0 && d.n >= 0 && b.Numel() != d.n)
      return ctx.Fail("Bias has shape {} but W {} has {} columns: Bias needs one value per column", b.ToString(),
                      w.ToString(), d.n);
  }
  ctx.SetOutput(kFcOut, d.out, ctx.InputDType(kInput));
  return Status::OK();
}

template <class T>
class FcKernel final : public OpKernel {
 public:
  explicit FcKernel(const KernelInit& init) : attrs_(init.attrs) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kInput);
    const Tensor& w = ctx.In(kW);
    const Tensor* bias = ctx.InOpt(kBias);
    if (!(x.dims() == x_dims_ && w.dims() == w_dims_)) {
      PC_ASSIGN_OR_RETURN(matmul::MulDims d, matmul::AnalyzeMul(x.dims(), w.dims(), attrs_.in_num_col_dims, 1));
      shape_ = d.Forward();
      x_dims_ = x.dims();
      w_dims_ = w.dims();
    }
    T* out = ctx.Out(kFcOut).data<T>();
    const T* b = bias != nullptr ? bias->data<T>() : nullptr;
    if constexpr (std::is_same_v<T, float>) {
      return gemm_.Run(ctx.device_as<runtime::CpuContext>(), shape_, {.bias = b != nullptr, .relu = attrs_.relu},
                       x.data<T>(), w.data<T>(), b, out, w.stamp());
    } else {
      PC_RETURN_IF_ERROR(gemm_.Run(ctx.device_as<runtime::CpuContext>(), shape_, x.data<T>(), w.data<T>(), out));
      for (int64_t i = 0; i < shape_.m; ++i)
        for (int64_t j = 0; j < shape_.n; ++j) {
          T v = out[i * shape_.n + j] + (b != nullptr ? b[j] : T(0));
          out[i * shape_.n + j] = attrs_.relu && v < T(0) ? T(0) : v;
        }
      return Status::OK();
    }
  }

 private:
  FcAttrs attrs_;
  Dims x_dims_{-2}, w_dims_{-2};
  math::GemmShape shape_;
  math::Gemm<T> gemm_;
};

}  // namespace

void RegisterFcOps(OpRegistry& r) {
  r.Add("fc")
      .Doc(
          "Fully connected layer: Out = activation(Input * W + Bias), Input flattened to 2-D at in_num_col_dims "
          "(as mul's X). One GEMM with the bias and the activation applied before Out is written; an inference "
          "op (paddlec's fuse-fc pass writes it for mul + elementwise_add (+ relu)).")
      .Input(kInput, "Input, flattened to [prod(dims[:in_num_col_dims]), prod(dims[in_num_col_dims:])] = [M, K].")
      .Input(kW, "Weight [K, N].")
      .Input(kBias, "Bias, N values ([N] or [1, N]), added to every row.", kDispensable)
      .Output(kFcOut, "Out, shaped Input.dims[:in_num_col_dims] + [N].")
      .Attr("in_num_col_dims", 1, "Leading dims of Input that form the rows of its 2-D view.")
      .Min(1)
      .Attr("activation_type", "", "Activation applied after the bias: none or relu.")
      .AllowedValues({"", "relu"})
      .Attr("padding_weights", false, "PaddlePaddle: W is stored padded by 4 in both dims; must be false.")
      .InferShape(InferFc)
      .NoGradient()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<FcKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<FcKernel<double>>());
}

}  // namespace paddlec::ops
