// conv2d, depthwise_conv2d, conv2d_transpose, their gradients and fused_conv2d_bn_act on the GPU:
// cuDNN's legacy convolution API (cudnnConvolutionForward / BackwardData / BackwardFilter) on NCHW
// tensors and OIHW filters. conv2d_transpose runs the convolution it transposes backwards (conv.cc):
// forward = backward-data, input gradient = forward, filter gradient = backward-filter with the
// roles of input and output gradient swapped.
//
// Geometry: conv.cc's (nn::ConvGeometryOf / nn::ConvTransposeGeometryOf, on the attributes decoded once
// into conv_slots.h's ConvAttrs). cuDNN pads symmetrically, so
// an asymmetric padding (SAME with an odd total, or 4 unequal paddings) is applied to a zero-padded
// copy of the input (PadPlanes) and cuDNN runs unpadded; the gradient of that copy is cropped back
// (CropPlanes). Groups are cuDNN's group count; dilations are cuDNN's (both count the step).
//
// Algorithms are chosen once per geometry and cached in the kernel object: by cuDNN's heuristics
// (cudnnGet*Algorithm_v7, no GPU work, no synchronization) or, with the exhaustive_search attribute, by
// timing them (cudnnFind*AlgorithmEx, which synchronizes once per geometry). Deterministic algorithms
// are taken whenever one fits the workspace limit (workspace_size_MB), so training runs are
// reproducible bit for bit, and direct (GEMM-style) ones before FFT / Winograd transforms; float32
// runs with CUDNN_FMA_MATH: true float32 arithmetic, no TF32 (the CPU's results and the op tests'
// tolerances assume float32 products). Workspace memory comes from CudaContext::Workspace.
#include <cudnn.h>

#include <climits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nn/conv_slots.h"
#include "nn/nn_cuda.h"
#include "nn/nn_cuda_host.h"
#include "nn/window.h"

namespace paddlec::ops::nn {
namespace {

using namespace conv;  // NOLINT: the family's shared slots and attributes
using runtime::cuda::CudaContext;

/// conv.cc's geometry of validated shapes (shape inference has reported any error).
ConvGeometry GeometryOf(const Dims& x, const Dims& f, const ConvAttrs& a) {
  ConvGeometry g;
  Status st = ConvGeometryOf(x, f, a, g);
  (void)st;
  return g;
}
ConvGeometry TransposeGeometryOf(const Dims& x, const Dims& f, const ConvAttrs& a) {
  ConvGeometry g;
  Status st = ConvTransposeGeometryOf(x, f, a, g);
  (void)st;
  return g;
}

template <class T>
constexpr cudnnDataType_t kCudnnType = std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;

/// One cached algorithm choice.
struct Choice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

/// True for the transform-based algorithms (FFT, Winograd): fast on some shapes, but their rounding
/// error grows with the transform (several times a direct sum's in float32), beyond what the op
/// tests allow between the CPU and the GPU.
bool IsTransform(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool IsTransform(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool IsTransform(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

/// Picks from cuDNN's ranked list (best first) the first algorithm that ran (status) and fits the
/// workspace limit, preferring, in this order: deterministic and direct (GEMM-style sums, no FFT or
/// Winograd transform); deterministic; direct; any. float32 runs every algorithm with CUDNN_FMA_MATH
/// (entries that need tensor-op math are skipped: they would compute in TF32); float64 with the math
/// type cuDNN ranked it with. `workspace(p, math)` gives an entry's workspace bytes, or nullopt when
/// cuDNN cannot run it.
template <class Perf, class WorkspaceOf>
StatusOr<std::optional<Choice>> PickAlgorithm(const std::vector<Perf>& perf, bool fp32, size_t limit,
                                              WorkspaceOf&& workspace) {
  struct Tier {
    bool deterministic, direct;
  };
  for (Tier tier : {Tier{true, true}, Tier{true, false}, Tier{false, true}, Tier{false, false}})
    for (const Perf& p : perf) {
      if (p.status != CUDNN_STATUS_SUCCESS) continue;
      if (fp32 && (p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) continue;
      if (tier.deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
      if (tier.direct && IsTransform(p.algo)) continue;
      cudnnMathType_t math = fp32 ? CUDNN_FMA_MATH : p.mathType;
      PC_ASSIGN_OR_RETURN(std::optional<size_t> ws, workspace(p, math));
      if (!ws || *ws > limit) continue;
      return std::optional<Choice>(Choice{static_cast<int>(p.algo), math, *ws});
    }
  return std::optional<Choice>();
}

/// The cuDNN side of one conv2d op instance: descriptors for the current geometry, algorithm
/// choices per geometry, and the padded-copy scratch. Not thread-safe (one per kernel object).
template <class T>
class CudnnConv {
 public:
  explicit CudnnConv(const ConvAttrs& a)
      : exhaustive_(a.exhaustive_search),
        limit_(static_cast<size_t>(a.workspace_size_mb > 0 ? a.workspace_size_mb : 512) << 20) {}
  ~CudnnConv() {
    if (x_desc_) cudnnDestroyTensorDescriptor(x_desc_);
    if (y_desc_) cudnnDestroyTensorDescriptor(y_desc_);
    if (w_desc_) cudnnDestroyFilterDescriptor(w_desc_);
    if (conv_desc_) cudnnDestroyConvolutionDescriptor(conv_desc_);
  }
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  /// Points the descriptors at geometry `g` (a no-op when it is the current one).
  Status Prepare(const ConvGeometry& g) {
    const Window2d& w = g.w;
    padded_ = w.pad[0] != w.pad[1] || w.pad[2] != w.pad[3];
    hp_ = padded_ ? w.in[0] + w.pad[0] + w.pad[1] : w.in[0];
    wp_ = padded_ ? w.in[1] + w.pad[2] + w.pad[3] : w.in[1];
    const int64_t pad_h = padded_ ? 0 : w.pad[0], pad_w = padded_ ? 0 : w.pad[2];
    std::vector<int64_t> key = {g.n,         g.c,         g.o,         g.groups,    hp_,           wp_,
                                w.kernel[0], w.kernel[1], w.stride[0], w.stride[1], w.dilation[0], w.dilation[1],
                                w.pad[0],    w.pad[1],    w.pad[2],    w.pad[3],    w.out[0],      w.out[1]};
    if (key == key_) return Status::OK();
    for (int64_t v : key)
      if (v > INT_MAX)
        return MakeError(ErrorCode::kUnimplemented, "conv2d on the GPU: a size of {} exceeds cuDNN's 32-bit dimensions",
                         v);
    g_ = g;
    if (!x_desc_) {
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&x_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&y_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&w_desc_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&conv_desc_));
    }
    auto i32 = [](int64_t v) { return static_cast<int>(v); };
    PC_CUDNN_RETURN_IF_ERROR(
        cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NCHW, kCudnnType<T>, i32(g.n), i32(g.c), i32(hp_), i32(wp_)));
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NCHW, kCudnnType<T>, i32(g.n), i32(g.o),
                                                        i32(w.out[0]), i32(w.out[1])));
    // Filter [O, C / groups, KH, KW], as cuDNN's grouped filters are laid out.
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(w_desc_, kCudnnType<T>, CUDNN_TENSOR_NCHW, i32(g.o),
                                                        i32(g.c / g.groups), i32(w.kernel[0]), i32(w.kernel[1])));
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(conv_desc_, i32(pad_h), i32(pad_w), i32(w.stride[0]),
                                                             i32(w.stride[1]), i32(w.dilation[0]), i32(w.dilation[1]),
                                                             CUDNN_CROSS_CORRELATION, kCudnnType<T>));
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(conv_desc_, i32(g.groups)));
    // Asked before every algorithm query: FMA only for float32 (no TF32), anything for float64.
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_desc_, kFp32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH));
    // cuDNN's output size must be conv.cc's (it is: both use the floor formula on the same padding).
    int dims[4];
    PC_CUDNN_RETURN_IF_ERROR(
        cudnnGetConvolution2dForwardOutputDim(conv_desc_, x_desc_, w_desc_, &dims[0], &dims[1], &dims[2], &dims[3]));
    if (dims[2] != w.out[0] || dims[3] != w.out[1])
      return MakeError(ErrorCode::kInternal, "conv2d on the GPU: cuDNN computes a {}x{} output where conv2d has {}x{}",
                       dims[2], dims[3], w.out[0], w.out[1]);
    key_ = std::move(key);
    choices_ = &cache_[key_];
    return Status::OK();
  }

  /// The input cuDNN reads: x itself, or its zero-padded copy.
  StatusOr<const T*> Input(CudaContext& cc, const T* x) {
    if (!padded_) return x;
    PC_ASSIGN_OR_RETURN(T * xp, xp_.Get<T>(cc, g_.n * g_.c * hp_ * wp_));
    PC_RETURN_IF_ERROR(cuda::Launched(
        cuda::PadPlanes<T>(x, xp, g_.n * g_.c, g_.w.in[0], g_.w.in[1], hp_, wp_, g_.w.pad[0], g_.w.pad[2], cc.stream()),
        "conv2d padding"));
    return static_cast<const T*>(xp);
  }

  /// y = conv(x, f); `x` as returned by Input().
  Status Forward(CudaContext& cc, const T* x, const T* f, T* y) {
    if (!choices_->fwd) {
      PC_ASSIGN_OR_RETURN(choices_->fwd, ChooseForward(cc, x, f, y));
    }
    const Choice& ch = *choices_->fwd;
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_desc_, ch.math));
    PC_ASSIGN_OR_RETURN(void* ws, cc.Workspace(ch.workspace));
    const T one = 1, zero = 0;
    PC_CUDNN_RETURN_IF_ERROR(cudnnConvolutionForward(cc.cudnn(), &one, x_desc_, x, w_desc_, f, conv_desc_,
                                                     static_cast<cudnnConvolutionFwdAlgo_t>(ch.algo), ws, ch.workspace,
                                                     &zero, y_desc_, y));
    return Status::OK();
  }

  /// dx = conv_backward_data(f, dy), cropped from the padded copy's gradient when padded.
  Status BackwardData(CudaContext& cc, const T* f, const T* dy, T* dx) {
    T* target = dx;
    if (padded_) {
      PC_ASSIGN_OR_RETURN(target, dxp_.Get<T>(cc, g_.n * g_.c * hp_ * wp_));
    }
    if (!choices_->bwd_data) {
      PC_ASSIGN_OR_RETURN(choices_->bwd_data, ChooseBackwardData(cc, f, dy, target));
    }
    const Choice& ch = *choices_->bwd_data;
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_desc_, ch.math));
    PC_ASSIGN_OR_RETURN(void* ws, cc.Workspace(ch.workspace));
    const T one = 1, zero = 0;
    PC_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardData(cc.cudnn(), &one, w_desc_, f, y_desc_, dy, conv_desc_,
                                                          static_cast<cudnnConvolutionBwdDataAlgo_t>(ch.algo), ws,
                                                          ch.workspace, &zero, x_desc_, target));
    if (!padded_) return Status::OK();
    return cuda::Launched(cuda::CropPlanes<T>(target, dx, g_.n * g_.c, g_.w.in[0], g_.w.in[1], hp_, wp_, g_.w.pad[0],
                                              g_.w.pad[2], cc.stream()),
                          "conv2d gradient crop");
  }

  /// df = conv_backward_filter(x, dy); `x` as returned by Input().
  Status BackwardFilter(CudaContext& cc, const T* x, const T* dy, T* df) {
    if (!choices_->bwd_filter) {
      PC_ASSIGN_OR_RETURN(choices_->bwd_filter, ChooseBackwardFilter(cc, x, dy, df));
    }
    const Choice& ch = *choices_->bwd_filter;
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_desc_, ch.math));
    PC_ASSIGN_OR_RETURN(void* ws, cc.Workspace(ch.workspace));
    const T one = 1, zero = 0;
    PC_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter(cc.cudnn(), &one, x_desc_, x, y_desc_, dy, conv_desc_,
                                                            static_cast<cudnnConvolutionBwdFilterAlgo_t>(ch.algo), ws,
                                                            ch.workspace, &zero, w_desc_, df));
    return Status::OK();
  }

 private:
  static constexpr bool kFp32 = std::is_same_v<T, float>;

  struct Choices {
    std::optional<Choice> fwd, bwd_data, bwd_filter;
  };

  Error NoAlgorithm(const char* direction) const {
    return MakeError(ErrorCode::kUnimplemented,
                     "conv2d on the GPU: cuDNN offers no {} algorithm for input [{}, {}, {}, {}], filter [{}, {}, {}, "
                     "{}] within the {} MB workspace limit",
                     direction, g_.n, g_.c, g_.w.in[0], g_.w.in[1], g_.o, g_.c / g_.groups, g_.w.kernel[0],
                     g_.w.kernel[1], limit_ >> 20);
  }

  /// Restores the query math type (the descriptor holds the last run's choice).
  Status QueryMath() {
    PC_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_desc_, kFp32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH));
    return Status::OK();
  }

  StatusOr<Choice> ChooseForward(CudaContext& cc, const T* x, const T* f, T* y) {
    PC_RETURN_IF_ERROR(QueryMath());
    int max = 0, got = 0;
    PC_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithmMaxCount(cc.cudnn(), &max));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
    if (exhaustive_) {
      // Times every algorithm on the real tensors (y is overwritten by the run that follows).
      PC_ASSIGN_OR_RETURN(void* ws, cc.Workspace(limit_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnFindConvolutionForwardAlgorithmEx(cc.cudnn(), x_desc_, x, w_desc_, f, conv_desc_,
                                                                      y_desc_, y, max, &got, perf.data(), ws, limit_));
    } else {
      PC_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(cc.cudnn(), x_desc_, w_desc_, conv_desc_, y_desc_,
                                                                      max, &got, perf.data()));
    }
    perf.resize(static_cast<size_t>(got));
    auto workspace = [&](const cudnnConvolutionFwdAlgoPerf_t& p,
                         cudnnMathType_t math) -> StatusOr<std::optional<size_t>> {
      size_t bytes = 0;
      PC_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_desc_, math));
      cudnnStatus_t st =
          cudnnGetConvolutionForwardWorkspaceSize(cc.cudnn(), x_desc_, w_desc_, conv_desc_, y_desc_, p.algo, &bytes);
      return st == CUDNN_STATUS_SUCCESS ? std::optional<size_t>(bytes) : std::nullopt;
    };
    PC_ASSIGN_OR_RETURN(std::optional<Choice> c, PickAlgorithm(perf, kFp32, limit_, workspace));
    if (!c) return NoAlgorithm("forward");
    return *c;
  }

  StatusOr<Choice> ChooseBackwardData(CudaContext& cc, const T* f, const T* dy, T* dx) {
    PC_RETURN_IF_ERROR(QueryMath());
    int max = 0, got = 0;
    PC_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cc.cudnn(), &max));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
    if (exhaustive_) {
      PC_ASSIGN_OR_RETURN(void* ws, cc.Workspace(limit_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnFindConvolutionBackwardDataAlgorithmEx(
          cc.cudnn(), w_desc_, f, y_desc_, dy, conv_desc_, x_desc_, dx, max, &got, perf.data(), ws, limit_));
    } else {
      PC_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7(cc.cudnn(), w_desc_, y_desc_, conv_desc_,
                                                                           x_desc_, max, &got, perf.data()));
    }
    perf.resize(static_cast<size_t>(got));
    auto workspace = [&](const cudnnConvolutionBwdDataAlgoPerf_t& p,
                         cudnnMathType_t math) -> StatusOr<std::optional<size_t>> {
      size_t bytes = 0;
      PC_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_desc_, math));
      cudnnStatus_t st = cudnnGetConvolutionBackwardDataWorkspaceSize(cc.cudnn(), w_desc_, y_desc_, conv_desc_, x_desc_,
                                                                      p.algo, &bytes);
      return st == CUDNN_STATUS_SUCCESS ? std::optional<size_t>(bytes) : std::nullopt;
    };
    PC_ASSIGN_OR_RETURN(std::optional<Choice> c, PickAlgorithm(perf, kFp32, limit_, workspace));
    if (!c) return NoAlgorithm("backward-data");
    return *c;
  }

  StatusOr<Choice> ChooseBackwardFilter(CudaContext& cc, const T* x, const T* dy, T* df) {
    PC_RETURN_IF_ERROR(QueryMath());
    int max = 0, got = 0;
    PC_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cc.cudnn(), &max));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
    if (exhaustive_) {
      PC_ASSIGN_OR_RETURN(void* ws, cc.Workspace(limit_));
      PC_CUDNN_RETURN_IF_ERROR(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          cc.cudnn(), x_desc_, x, y_desc_, dy, conv_desc_, w_desc_, df, max, &got, perf.data(), ws, limit_));
    } else {
      PC_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cc.cudnn(), x_desc_, y_desc_, conv_desc_,
                                                                             w_desc_, max, &got, perf.data()));
    }
    perf.resize(static_cast<size_t>(got));
    auto workspace = [&](const cudnnConvolutionBwdFilterAlgoPerf_t& p,
                         cudnnMathType_t math) -> StatusOr<std::optional<size_t>> {
      size_t bytes = 0;
      PC_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv_desc_, math));
      cudnnStatus_t st = cudnnGetConvolutionBackwardFilterWorkspaceSize(cc.cudnn(), x_desc_, y_desc_, conv_desc_,
                                                                        w_desc_, p.algo, &bytes);
      return st == CUDNN_STATUS_SUCCESS ? std::optional<size_t>(bytes) : std::nullopt;
    };
    PC_ASSIGN_OR_RETURN(std::optional<Choice> c, PickAlgorithm(perf, kFp32, limit_, workspace));
    if (!c) return NoAlgorithm("backward-filter");
    return *c;
  }

  bool exhaustive_;
  size_t limit_;
  cudnnTensorDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr;
  cudnnFilterDescriptor_t w_desc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
  ConvGeometry g_;
  bool padded_ = false;
  int64_t hp_ = 0, wp_ = 0;
  std::vector<int64_t> key_;
  std::map<std::vector<int64_t>, Choices> cache_;  // per geometry; node addresses are stable
  Choices* choices_ = nullptr;
  DeviceScratch xp_, dxp_;  // padded input and its gradient (asymmetric padding only)
};

template <class T>
class ConvKernel final : public OpKernel {
 public:
  explicit ConvKernel(const KernelInit& init) : attrs_(ConvAttrs::Decode(init.attrs)), conv_(attrs_) {}

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& x = ctx.In(kInput);
    const Tensor& f = ctx.In(kFilter);
    Tensor& out = ctx.Out(kOutput);
    ConvGeometry g = GeometryOf(x.dims(), f.dims(), attrs_);
    if (g.empty()) return ZeroFill(cc, &out);
    PC_RETURN_IF_ERROR(conv_.Prepare(g));
    PC_ASSIGN_OR_RETURN(const T* xin, conv_.Input(cc, x.data<T>()));
    return conv_.Forward(cc, xin, f.data<T>(), out.data<T>());
  }

 private:
  ConvAttrs attrs_;
  CudnnConv<T> conv_;
};

template <class T>
class ConvGradKernel final : public OpKernel {
 public:
  explicit ConvGradKernel(const KernelInit& init) : attrs_(ConvAttrs::Decode(init.attrs)), conv_(attrs_) {}

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& x = ctx.In(kInput);
    const Tensor& f = ctx.In(kFilter);
    const T* dy = ctx.In(kDOutput).data<T>();
    Tensor* dx = ctx.OutOpt(kDInput);
    Tensor* df = ctx.OutOpt(kDFilter);
    ConvGeometry g = GeometryOf(x.dims(), f.dims(), attrs_);
    if (g.empty()) {
      PC_RETURN_IF_ERROR(ZeroFill(cc, dx));
      return ZeroFill(cc, df);
    }
    PC_RETURN_IF_ERROR(conv_.Prepare(g));
    if (dx != nullptr) PC_RETURN_IF_ERROR(conv_.BackwardData(cc, f.data<T>(), dy, dx->data<T>()));
    if (df != nullptr) {
      PC_ASSIGN_OR_RETURN(const T* xin, conv_.Input(cc, x.data<T>()));
      PC_RETURN_IF_ERROR(conv_.BackwardFilter(cc, xin, dy, df->data<T>()));
    }
    return Status::OK();
  }

 private:
  ConvAttrs attrs_;
  CudnnConv<T> conv_;
};

/// conv2d_transpose: Output = conv_backward_data(Filter, Input) of the transposed convolution g.
template <class T>
class ConvTransposeKernel final : public OpKernel {
 public:
  explicit ConvTransposeKernel(const KernelInit& init) : attrs_(ConvAttrs::Decode(init.attrs)), conv_(attrs_) {}

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& x = ctx.In(kInput);
    const Tensor& f = ctx.In(kFilter);
    Tensor& out = ctx.Out(kOutput);
    ConvGeometry g = TransposeGeometryOf(x.dims(), f.dims(), attrs_);
    if (g.empty()) return ZeroFill(cc, &out);
    PC_RETURN_IF_ERROR(conv_.Prepare(g));
    return conv_.BackwardData(cc, f.data<T>(), x.data<T>(), out.data<T>());
  }

 private:
  ConvAttrs attrs_;
  CudnnConv<T> conv_;
};

/// conv2d_transpose_grad: Input@GRAD = conv(Output@GRAD, Filter); Filter@GRAD =
/// conv_backward_filter(src = Output@GRAD, diff_dst = Input).
template <class T>
class ConvTransposeGradKernel final : public OpKernel {
 public:
  explicit ConvTransposeGradKernel(const KernelInit& init) : attrs_(ConvAttrs::Decode(init.attrs)), conv_(attrs_) {}

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& x = ctx.In(kInput);
    const Tensor& f = ctx.In(kFilter);
    Tensor* dx = ctx.OutOpt(kDInput);
    Tensor* df = ctx.OutOpt(kDFilter);
    ConvGeometry g = TransposeGeometryOf(x.dims(), f.dims(), attrs_);
    if (g.empty()) {
      PC_RETURN_IF_ERROR(ZeroFill(cc, dx));
      return ZeroFill(cc, df);
    }
    PC_RETURN_IF_ERROR(conv_.Prepare(g));
    PC_ASSIGN_OR_RETURN(const T* dy, conv_.Input(cc, ctx.In(kDOutput).data<T>()));
    if (dx != nullptr) PC_RETURN_IF_ERROR(conv_.Forward(cc, dy, f.data<T>(), dx->data<T>()));
    if (df != nullptr) PC_RETURN_IF_ERROR(conv_.BackwardFilter(cc, dy, x.data<T>(), df->data<T>()));
    return Status::OK();
  }

 private:
  ConvAttrs attrs_;
  CudnnConv<T> conv_;
};

/// fused_conv2d_bn_act's pooling (fuse-conv-pool) as pool.cu's launch shape: the windows of
/// conv.cc's FusedPoolAttrs::Window over the convolution's N * O output planes.
cuda::PoolShape FusedPoolShape(const ConvGeometry& g, const ConvPool& p) {
  cuda::PoolShape s{};
  s.planes = g.n * g.o;
  for (int ax = 0; ax < 2; ++ax)
    s.axis[ax] = {p.w.in[ax], p.w.out[ax], p.w.kernel[ax], p.w.stride[ax], p.w.pad_before(ax)};
  s.max = p.max;
  s.adaptive = false;
  s.count_clipped = p.exclusive;
  return s;
}

/// conv2d + inference batch_norm (+ relu) (+ a pooling): the batch-norm affine map is folded into a
/// filter and a bias on the device every run (FoldBatchNorm, O * C/g * KH * KW multiplies), the
/// convolution runs on the folded filter, then one element-wise pass adds the bias and applies the
/// relu; with a pooling, the convolution writes kernel-owned scratch and pool.cu's kernel pools it
/// into Output. blocked_input / blocked_output (the CPU's oneDNN layout, set by the layout pass) are
/// ignored: on the GPU both ends of a fused pair stay NCHW.
template <class T>
class FusedConvKernel final : public OpKernel {
 public:
  explicit FusedConvKernel(const KernelInit& init)
      : attrs_(ConvAttrs::Decode(init.attrs)),
        epsilon_(init.attrs.Get<float>("epsilon")),
        relu_(init.attrs.Get<std::string>("activation") == "relu"),
        pool_attrs_(FusedPoolAttrs::Decode(init.attrs)),
        conv_(attrs_) {}

  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& x = ctx.In(kInput);
    const Tensor& f = ctx.In(kFilter);
    Tensor& out = ctx.Out(kOutput);
    ConvGeometry g = GeometryOf(x.dims(), f.dims(), attrs_);
    if (g.empty()) return ZeroFill(cc, &out);
    PC_RETURN_IF_ERROR(conv_.Prepare(g));
    std::optional<ConvPool> pool;
    if (!pool_attrs_.type.empty()) {
      PC_ASSIGN_OR_RETURN(pool, pool_attrs_.Window(g));
    }
    T* y = out.data<T>();
    if (pool) {
      PC_ASSIGN_OR_RETURN(y, unpooled_.Get<T>(cc, g.n * g.o * g.w.out[0] * g.w.out[1]));
    }
    PC_RETURN_IF_ERROR(Convolve(ctx, cc, g, y));
    if (!pool) return Status::OK();
    return cuda::Launched(cuda::PoolForward<T>(FusedPoolShape(g, *pool), y, out.data<T>(), cc.stream()),
                          "fused_conv2d_bn_act pooling");
  }

 private:
  /// y = act(conv(x, folded filter) + folded bias), NCHW of the convolution's output size.
  Status Convolve(KernelContext& ctx, CudaContext& cc, const ConvGeometry& g, T* y) {
    const Tensor& f = ctx.In(kFilter);
    if (ctx.InOpt(kFScale) == nullptr) {
      // conv + bias (+ relu): the filter and the bias as they are.
      PC_ASSIGN_OR_RETURN(const T* xin, conv_.Input(cc, ctx.In(kInput).data<T>()));
      PC_RETURN_IF_ERROR(conv_.Forward(cc, xin, f.data<T>(), y));
      if (ctx.InOpt(kFBias) == nullptr && !relu_) return Status::OK();
      PC_ASSIGN_OR_RETURN(T * zeros, folded_.Get<T>(cc, g.o));
      const T* bias = zeros;
      if (ctx.InOpt(kFBias) != nullptr)
        bias = ctx.In(kFBias).data<T>();
      else
        PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(zeros, 0, static_cast<size_t>(g.o) * sizeof(T), cc.stream()));
      return cuda::Launched(cuda::BiasActivation<T>(y, bias, g.n, g.o, g.w.out[0] * g.w.out[1], relu_, cc.stream()),
                            "fused_conv2d_bn_act bias and activation");
    }
    const int64_t per_out = f.numel() / g.o;
    PC_ASSIGN_OR_RETURN(T * folded, folded_.Get<T>(cc, f.numel() + g.o));
    T* bias = folded + f.numel();
    PC_RETURN_IF_ERROR(
        cuda::Launched(cuda::FoldBatchNorm<T>(f.data<T>(), ctx.In(kFScale).data<T>(), ctx.In(kFBias).data<T>(),
                                              ctx.In(kFMean).data<T>(), ctx.In(kFVariance).data<T>(), epsilon_, g.o,
                                              per_out, folded, bias, cc.stream()),
                       "fused_conv2d_bn_act fold"));
    PC_ASSIGN_OR_RETURN(const T* xin, conv_.Input(cc, ctx.In(kInput).data<T>()));
    PC_RETURN_IF_ERROR(conv_.Forward(cc, xin, folded, y));
    return cuda::Launched(cuda::BiasActivation<T>(y, bias, g.n, g.o, g.w.out[0] * g.w.out[1], relu_, cc.stream()),
                          "fused_conv2d_bn_act bias and activation");
  }

  ConvAttrs attrs_;
  float epsilon_;
  bool relu_;
  FusedPoolAttrs pool_attrs_;
  CudnnConv<T> conv_;
  DeviceScratch folded_;    // folded filter, then the folded bias
  DeviceScratch unpooled_;  // with a pooling: the convolution's output
};

template <class T>
KernelFactory ConvFactory() {
  return MakeKernelClass<ConvKernel<T>>();
}
template <class T>
KernelFactory ConvGradFactory() {
  return MakeKernelClass<ConvGradKernel<T>>();
}
template <class T>
KernelFactory ConvTransposeFactory() {
  return MakeKernelClass<ConvTransposeKernel<T>>();
}
template <class T>
KernelFactory ConvTransposeGradFactory() {
  return MakeKernelClass<ConvTransposeGradKernel<T>>();
}
template <class T>
KernelFactory FusedConvFactory() {
  return MakeKernelClass<FusedConvKernel<T>>();
}

}  // namespace

Status RegisterConvCudaKernels(OpRegistry& r) {
  PC_CUDA_FLOAT_KERNELS(r, "conv2d", ConvFactory);
  PC_CUDA_FLOAT_KERNELS(r, "conv2d_grad", ConvGradFactory);
  PC_CUDA_FLOAT_KERNELS(r, "depthwise_conv2d", ConvFactory);
  PC_CUDA_FLOAT_KERNELS(r, "depthwise_conv2d_grad", ConvGradFactory);
  PC_CUDA_FLOAT_KERNELS(r, "conv2d_transpose", ConvTransposeFactory);
  PC_CUDA_FLOAT_KERNELS(r, "conv2d_transpose_grad", ConvTransposeGradFactory);
  PC_CUDA_FLOAT_KERNELS(r, "fused_conv2d_bn_act", FusedConvFactory);
  return Status::OK();
}

}  // namespace paddlec::ops::nn
