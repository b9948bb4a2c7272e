// pool2d and pool2d_grad on the GPU with pool.cc's semantics.
//
// Forward: cuDNN's pooling (cudnnPoolingForward, NCHW) when it computes exactly pool.cc's windows
// (nn::PoolAxisFitsCudnn: symmetric padding smaller than the window, no window added by ceil_mode,
// none empty; global pooling qualifies); pool.cu's kernel otherwise (adaptive pooling, asymmetric or
// SAME padding, ceil_mode windows, empty windows). Gradients: pool.cu's gather kernels (deterministic,
// the max gradient to the first maximal element of each window as on the CPU), never cuDNN's
// backward, whose choice among equal maxima is unspecified.
#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "nn/nn_cuda.h"
#include "nn/nn_cuda_host.h"
#include "nn/pool_slots.h"
#include "nn/window.h"

namespace paddlec::ops::nn {
namespace {

using namespace pool;  // NOLINT: the op's shared slots and attributes
using runtime::cuda::CudaContext;

/// pool.cc's PoolGeometryOf on validated shapes, as the launchers' PoolShape; `pad_after` gets the
/// bottom / right paddings.
cuda::PoolShape ShapeOf(const Dims& x, const PoolAttrs& a, int64_t pad_after[2]) {
  Window2d w;
  for (int ax = 0; ax < 2; ++ax) {
    w.in[ax] = x[2 + ax];
    w.kernel[ax] = a.ksize[ax];
    w.stride[ax] = a.window.strides[ax];
  }
  // PaddlePaddle's order: padding algorithm, then global/adaptive pooling drop the padding, then
  // global pooling widens the window to the whole input.
  ResolvePadding(a.window.paddings, a.window.algorithm, w);
  if (a.global || a.adaptive) std::fill(w.pad, w.pad + 4, 0);
  if (a.global)
    for (int ax = 0; ax < 2; ++ax) w.kernel[ax] = w.in[ax];
  if (a.adaptive) {
    for (int ax = 0; ax < 2; ++ax) w.out[ax] = w.kernel[ax];
  } else if (a.global) {
    w.out[0] = w.out[1] = 1;
  } else {
    ComputeOutputSize(w, a.ceil_mode);
  }
  cuda::PoolShape p{};
  p.planes = x[0] * x[1];
  for (int ax = 0; ax < 2; ++ax) {
    p.axis[ax] = {w.in[ax], w.out[ax], w.kernel[ax], w.stride[ax], w.pad_before(ax)};
    pad_after[ax] = w.pad_after(ax);
  }
  p.max = a.max;
  p.adaptive = a.adaptive;
  p.count_clipped = a.exclusive || a.adaptive;
  return p;
}

template <class T>
constexpr cudnnDataType_t kCudnnType = std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;

template <class T>
class PoolKernel final : public OpKernel {
 public:
  explicit PoolKernel(const KernelInit& init) : attrs_(PoolAttrs::Decode(init.attrs)) {}
  ~PoolKernel() override {
    if (x_desc_) cudnnDestroyTensorDescriptor(x_desc_);
    if (y_desc_) cudnnDestroyTensorDescriptor(y_desc_);
    if (pool_desc_) cudnnDestroyPoolingDescriptor(pool_desc_);
  }

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& x = ctx.In(kX);
    Tensor& out = ctx.Out(kOut);
    if (out.numel() == 0) return Status::OK();
    int64_t pad_after[2];
    cuda::PoolShape p = ShapeOf(x.dims(), attrs_, pad_after);
    PC_ASSIGN_OR_RETURN(bool cudnn, PrepareCudnn(x.dims(), p, pad_after));
    if (!cudnn)
      return cuda::Launched(cuda::PoolForward<T>(p, x.data<T>(), out.data<T>(), cc.stream()), "pool2d forward");
    const T one = 1, zero = 0;
    PC_CUDNN_RETURN_IF_ERROR(
        cudnnPoolingForward(cc.cudnn(), pool_desc_, &one, x_desc_, x.data<T>(), &zero, y_desc_, out.data<T>()));
    return Status::OK();
  }

 private:
  /// Sets cuDNN's descriptors for this input shape when cuDNN computes pool.cc's windows; false when
  /// pool.cu's kernel must run instead. Descriptors are rebuilt only when the shape changes.
  StatusOr<bool> PrepareCudnn(const Dims& x, const cuda::PoolShape& p, const int64_t pad_after[2]) {
    if (x == dims_) return use_cudnn_;
    dims_ = x;
    use_cudnn_ =
        !p.adaptive && PoolAxisFitsCudnn(p.axis[0], pad_after[0]) && PoolAxisFitsCudnn(p.axis[1], pad_after[1]);
    for (int64_t v : {x[0], x[1], x[2], x[3], p.axis[0].kernel, p.axis[1].kernel, p.axis[0].stride, p.axis[1].stride})
      if (v > INT_MAX) use_cudnn_ = false;
    if (!use_cudnn_) return false;
    if (!x_desc_) {
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&x_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&y_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreatePoolingDescriptor(&pool_desc_));
    }
    auto i32 = [](int64_t v) { return static_cast<int>(v); };
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NCHW, kCudnnType<T>, i32(x[0]), i32(x[1]),
                                                        i32(x[2]), i32(x[3])));
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NCHW, kCudnnType<T>, i32(x[0]), i32(x[1]),
                                                        i32(p.axis[0].out), i32(p.axis[1].out)));
    cudnnPoolingMode_t mode = p.max             ? CUDNN_POOLING_MAX
                              : p.count_clipped ? CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING
                                                : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    // NaN inputs are skipped by a max, as std::max on the CPU skips them.
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetPooling2dDescriptor(
        pool_desc_, mode, CUDNN_NOT_PROPAGATE_NAN, i32(p.axis[0].kernel), i32(p.axis[1].kernel),
        i32(p.axis[0].pad_before), i32(p.axis[1].pad_before), i32(p.axis[0].stride), i32(p.axis[1].stride)));
    return true;
  }

  PoolAttrs attrs_;
  Dims dims_;  // the input shape the descriptors describe
  bool use_cudnn_ = false;
  cudnnTensorDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr;
  cudnnPoolingDescriptor_t pool_desc_ = nullptr;
};

template <class T>
class PoolGradKernel final : public OpKernel {
 public:
  explicit PoolGradKernel(const KernelInit& init) : attrs_(PoolAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr || dx->numel() == 0) return Status::OK();
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& x = ctx.In(kX);
    int64_t pad_after[2];
    cuda::PoolShape p = ShapeOf(x.dims(), attrs_, pad_after);
    const T* dy = ctx.In(kDOut).data<T>();
    if (!p.max) return cuda::Launched(cuda::PoolAvgBackward<T>(p, dy, dx->data<T>(), cc.stream()), "pool2d backward");
    if (p.axis[0].in * p.axis[1].in > INT_MAX)
      return MakeError(ErrorCode::kUnimplemented, "pool2d_grad on the GPU: a plane of {} x {} exceeds 2^31 elements",
                       p.axis[0].in, p.axis[1].in);
    PC_ASSIGN_OR_RETURN(int32_t * arg, arg_.Get<int32_t>(cc, p.planes * p.axis[0].out * p.axis[1].out));
    PC_RETURN_IF_ERROR(cuda::Launched(cuda::PoolArgMax<T>(p, x.data<T>(), ctx.In(kOutIn).data<T>(), arg, cc.stream()),
                                      "pool2d arg-max"));
    return cuda::Launched(cuda::PoolMaxBackward<T>(p, arg, dy, dx->data<T>(), cc.stream()), "pool2d backward");
  }

 private:
  PoolAttrs attrs_;
  DeviceScratch arg_;  // per output: plane-local index of its window's first maximum
};

template <class T>
KernelFactory PoolFactory() {
  return MakeKernelClass<PoolKernel<T>>();
}
template <class T>
KernelFactory PoolGradFactory() {
  return MakeKernelClass<PoolGradKernel<T>>();
}

}  // namespace

Status RegisterPoolCudaKernels(OpRegistry& r) {
  PC_CUDA_FLOAT_KERNELS(r, "pool2d", PoolFactory);
  PC_CUDA_FLOAT_KERNELS(r, "pool2d_grad", PoolGradFactory);
  return Status::OK();
}

}  // namespace paddlec::ops::nn
