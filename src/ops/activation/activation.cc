// Activation ops: relu, sigmoid, sqrt, tanh, gelu, leaky_relu, softmax, log_softmax and their gradients.
//
// Element-wise kernels are Eigen array expressions over chunks split across the CPU pool; the
// softmax family works on [outer, axis, inner] views so any axis is handled without transposes.
#include <cmath>

#include "common/cpu_kernels.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

constexpr InSlot kX{0, "X"};
constexpr OutSlot kOut{0, "Out"};
// Gradient ops that read the forward output: (Out, Out@GRAD) -> X@GRAD.
constexpr InSlot kOutIn{0, "Out"};
constexpr InSlot kDOutAfterOut{1, "Out@GRAD"};
// Gradient ops that read the forward input: (X, Out@GRAD) -> X@GRAD.
constexpr InSlot kXIn{0, "X"};
constexpr InSlot kDOutAfterX{1, "Out@GRAD"};
constexpr OutSlot kDX{0, "X@GRAD"};

Status InferDXLikeOut(InferShapeContext& ctx) {
  if (ctx.HasOutput(kDX)) ctx.SetOutput(kDX, ctx.InputDims(kOutIn), ctx.InputDType(kOutIn));
  return Status::OK();
}

Status InferDXLikeX(InferShapeContext& ctx) {
  if (ctx.HasOutput(kDX)) ctx.SetOutput(kDX, ctx.InputDims(kXIn), ctx.InputDType(kXIn));
  return Status::OK();
}

/// Out = f(X) element-wise; `f` maps an Eigen array expression to an expression.
template <class T, class F>
Status UnaryMap(KernelContext& ctx, F f) {
  const Tensor& x = ctx.In(kX);
  Tensor& out = ctx.Out(kOut);
  const T* xp = x.data<T>();
  T* yp = out.data<T>();
  ParallelChunks(x.numel(), [&](int64_t b, int64_t n) {
    MutEigenVec<T>(yp + b, n) = f(ConstEigenVec<T>(xp + b, n));
  });
  return Status::OK();
}

/// dX = g(A, dOut) element-wise where A is the grad op's first input (X or Out).
template <class T, class G>
Status GradMap(KernelContext& ctx, G g) {
  const Tensor& a = ctx.In(kOutIn);
  const Tensor& dout = ctx.In(kDOutAfterOut);
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const T* ap = a.data<T>();
  const T* dp = dout.data<T>();
  T* gp = dx->data<T>();
  ParallelChunks(a.numel(), [&](int64_t b, int64_t n) {
    MutEigenVec<T>(gp + b, n) = g(ConstEigenVec<T>(ap + b, n), ConstEigenVec<T>(dp + b, n));
  });
  return Status::OK();
}

// ---- relu / sigmoid / tanh ------------------------------------------------------------------

template <class T>
Status ReluCpu(KernelContext& ctx) {
  return UnaryMap<T>(ctx, [](const auto& x) { return x.max(T(0)); });
}
template <class T>
Status ReluGradCpu(KernelContext& ctx) {
  return GradMap<T>(ctx, [](const auto& out, const auto& d) { return (out > T(0)).select(d, T(0)); });
}

template <class T>
Status SigmoidCpu(KernelContext& ctx) {
  return UnaryMap<T>(ctx, [](const auto& x) { return T(1) / (T(1) + (-x).exp()); });
}
template <class T>
Status SigmoidGradCpu(KernelContext& ctx) {
  return GradMap<T>(ctx, [](const auto& out, const auto& d) { return d * out * (T(1) - out); });
}

template <class T>
Status TanhCpu(KernelContext& ctx) {
  return UnaryMap<T>(ctx, [](const auto& x) { return x.tanh(); });
}
template <class T>
Status TanhGradCpu(KernelContext& ctx) {
  return GradMap<T>(ctx, [](const auto& out, const auto& d) { return d * (T(1) - out.square()); });
}

template <class T>
Status SqrtCpu(KernelContext& ctx) {
  return UnaryMap<T>(ctx, [](const auto& x) { return x.sqrt(); });
}
template <class T>
Status SqrtGradCpu(KernelContext& ctx) {
  return GradMap<T>(ctx, [](const auto& out, const auto& d) { return d * T(0.5) / out; });
}

// ---- gelu -----------------------------------------------------------------------------------

struct GeluAttrs {
  bool approximate;
  static GeluAttrs Decode(const AttrReader& a) { return {a.Get<bool>("approximate")}; }
};

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

template <class T>
Status GeluCpu(KernelContext& ctx, const GeluAttrs& attrs) {
  if (attrs.approximate)
    return UnaryMap<T>(ctx, [](const auto& x) {
      return T(0.5) * x * (T(1) + (T(kSqrt2OverPi) * (x + T(0.044715) * x.cube())).tanh());
    });
  return UnaryMap<T>(ctx, [](const auto& x) { return T(0.5) * x * (T(1) + (x * T(kInvSqrt2)).erf()); });
}

template <class T>
Status GeluGradCpu(KernelContext& ctx, const GeluAttrs& attrs) {
  if (attrs.approximate)
    return GradMap<T>(ctx, [](const auto& x, const auto& d) {
      auto inner = T(kSqrt2OverPi) * (x + T(0.044715) * x.cube());
      auto t = inner.tanh();
      auto dinner = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * x.square());
      return d * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t.square()) * dinner);
    });
  return GradMap<T>(ctx, [](const auto& x, const auto& d) {
    return d * (T(0.5) * (T(1) + (x * T(kInvSqrt2)).erf()) + x * T(kInvSqrt2Pi) * (T(-0.5) * x.square()).exp());
  });
}

// ---- leaky_relu -----------------------------------------------------------------------------

struct LeakyReluAttrs {
  float alpha;
  static LeakyReluAttrs Decode(const AttrReader& a) { return {a.Get<float>("alpha")}; }
};

template <class T>
Status LeakyReluCpu(KernelContext& ctx, const LeakyReluAttrs& attrs) {
  T alpha = static_cast<T>(attrs.alpha);
  return UnaryMap<T>(ctx, [alpha](const auto& x) { return (x > T(0)).select(x, x * alpha); });
}

template <class T>
Status LeakyReluGradCpu(KernelContext& ctx, const LeakyReluAttrs& attrs) {
  T alpha = static_cast<T>(attrs.alpha);
  return GradMap<T>(ctx, [alpha](const auto& x, const auto& d) { return (x > T(0)).select(d, d * alpha); });
}

// ---- softmax / log_softmax ------------------------------------------------------------------

struct SoftmaxAttrs {
  int axis;
  static SoftmaxAttrs Decode(const AttrReader& a) { return {a.Get<int>("axis")}; }
};

Status InferSoftmax(InferShapeContext& ctx) {
  Dims x = ctx.InputDims(kX);
  int axis = ctx.Attr<int>("axis");
  if (x.rank() == 0 ? (axis != 0 && axis != -1) : NormalizeAxis(axis, x.rank()) < 0)
    return ctx.Fail("axis {} is out of range for X of shape {} (rank {})", axis, x.ToString(), x.rank());
  ctx.ShareDims(kX, kOut);
  return Status::OK();
}

/// Splits dims into [outer, n, inner] around `axis`.
struct AxisView {
  int64_t outer, n, inner;
};
AxisView ViewAround(const Dims& d, int axis) {
  if (d.rank() == 0) return {1, 1, 1};
  int a = NormalizeAxis(axis, d.rank());
  return {d.Product(0, a), d[a], d.Product(a + 1, d.rank())};
}

/// Softmax (or log-softmax) of every length-n line with stride `inner`.
template <class T, bool kLog>
void SoftmaxLines(const T* x, T* y, const AxisView& v) {
  ParallelFor(v.outer * v.inner, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(v.n, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t line = b; line < e; ++line) {
                  int64_t o = line / v.inner, in = line % v.inner;
                  const T* xl = x + o * v.n * v.inner + in;
                  T* yl = y + o * v.n * v.inner + in;
                  if (v.inner == 1) {
                    ConstEigenVec<T> xv(xl, v.n);
                    MutEigenVec<T> yv(yl, v.n);
                    T m = xv.maxCoeff();
                    yv = (xv - m).exp();
                    T s = yv.sum();
                    if constexpr (kLog) yv = (xv - m) - std::log(s);
                    else yv /= s;
                    continue;
                  }
                  T m = xl[0];
                  for (int64_t k = 1; k < v.n; ++k) m = std::max(m, xl[k * v.inner]);
                  T s = 0;
                  for (int64_t k = 0; k < v.n; ++k) s += std::exp(xl[k * v.inner] - m);
                  T ls = std::log(s);
                  for (int64_t k = 0; k < v.n; ++k) {
                    T z = xl[k * v.inner] - m;
                    yl[k * v.inner] = kLog ? z - ls : std::exp(z) / s;
                  }
                }
              });
}

template <class T>
Status SoftmaxCpu(KernelContext& ctx, const SoftmaxAttrs& attrs) {
  const Tensor& x = ctx.In(kX);
  SoftmaxLines<T, false>(x.data<T>(), ctx.Out(kOut).data<T>(), ViewAround(x.dims(), attrs.axis));
  return Status::OK();
}

template <class T>
Status LogSoftmaxCpu(KernelContext& ctx, const SoftmaxAttrs& attrs) {
  const Tensor& x = ctx.In(kX);
  SoftmaxLines<T, true>(x.data<T>(), ctx.Out(kOut).data<T>(), ViewAround(x.dims(), attrs.axis));
  return Status::OK();
}

/// softmax: dX = Out * (dOut - sum(dOut * Out)); log_softmax: dX = dOut - exp(Out) * sum(dOut).
template <class T, bool kLog>
Status SoftmaxGradImpl(KernelContext& ctx, const SoftmaxAttrs& attrs) {
  const Tensor& out = ctx.In(kOutIn);
  const Tensor& dout = ctx.In(kDOutAfterOut);
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  AxisView v = ViewAround(out.dims(), attrs.axis);
  const T* y = out.data<T>();
  const T* dy = dout.data<T>();
  T* g = dx->data<T>();
  ParallelFor(v.outer * v.inner, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(v.n, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t line = b; line < e; ++line) {
                  int64_t base = (line / v.inner) * v.n * v.inner + line % v.inner;
                  T s = 0;
                  for (int64_t k = 0; k < v.n; ++k) {
                    int64_t i = base + k * v.inner;
                    s += kLog ? dy[i] : dy[i] * y[i];
                  }
                  for (int64_t k = 0; k < v.n; ++k) {
                    int64_t i = base + k * v.inner;
                    g[i] = kLog ? dy[i] - std::exp(y[i]) * s : y[i] * (dy[i] - s);
                  }
                }
              });
  return Status::OK();
}

template <class T>
Status SoftmaxGradCpu(KernelContext& ctx, const SoftmaxAttrs& a) {
  return SoftmaxGradImpl<T, false>(ctx, a);
}
template <class T>
Status LogSoftmaxGradCpu(KernelContext& ctx, const SoftmaxAttrs& a) {
  return SoftmaxGradImpl<T, true>(ctx, a);
}

// ---- Registration ---------------------------------------------------------------------------

/// An element-wise activation whose gradient reads Out (relu, sigmoid, tanh).
template <class Fwd, class Bwd>
void RegisterOutGradActivation(OpRegistry& r, const char* type, const char* doc, Fwd fwd32, Fwd fwd64, Bwd bwd32,
                               Bwd bwd64) {
  r.Add(type)
      .Doc(doc)
      .Input(kX, "Input tensor of any shape.")
      .Output(kOut, "Output tensor, shaped like X.")
      .InferShape(InferSameAsX)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(fwd32))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(fwd64));
  r.Add(std::string(type) + "_grad")
      .GradOf(type)
      .Doc(fmt::format("Gradient of {}: X@GRAD from Out and Out@GRAD.", type))
      .Input(kOutIn, "The forward output.")
      .Input(kDOutAfterOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferDXLikeOut)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(bwd32))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(bwd64));
}

}  // namespace

void RegisterActivationOps(OpRegistry& r) {
  RegisterOutGradActivation(r, "relu", "Rectified linear unit: Out = max(X, 0).", ReluCpu<float>, ReluCpu<double>,
                            ReluGradCpu<float>, ReluGradCpu<double>);
  RegisterOutGradActivation(r, "sigmoid", "Logistic sigmoid: Out = 1 / (1 + exp(-X)).", SigmoidCpu<float>,
                            SigmoidCpu<double>, SigmoidGradCpu<float>, SigmoidGradCpu<double>);
  RegisterOutGradActivation(r, "sqrt", "Square root: Out = sqrt(X).", SqrtCpu<float>, SqrtCpu<double>,
                            SqrtGradCpu<float>, SqrtGradCpu<double>);
  RegisterOutGradActivation(r, "tanh", "Hyperbolic tangent: Out = tanh(X).", TanhCpu<float>, TanhCpu<double>,
                            TanhGradCpu<float>, TanhGradCpu<double>);

  r.Add("gelu")
      .Doc("Gaussian error linear unit: Out = X * Phi(X), exactly (erf) or with the tanh approximation.")
      .Input(kX, "Input tensor of any shape.")
      .Output(kOut, "Output tensor, shaped like X.")
      .Attr("approximate", false, "Use the tanh approximation instead of erf.")
      .InferShape(InferSameAsX)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(GeluCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(GeluCpu<double>));
  r.Add("gelu_grad")
      .GradOf("gelu")
      .Doc("Gradient of gelu: X@GRAD from X and Out@GRAD.")
      .Input(kXIn, "The forward input.")
      .Input(kDOutAfterX, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferDXLikeX)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(GeluGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(GeluGradCpu<double>));

  r.Add("leaky_relu")
      .Doc("Leaky rectified linear unit: Out = X if X > 0 else alpha * X.")
      .Input(kX, "Input tensor of any shape.")
      .Output(kOut, "Output tensor, shaped like X.")
      .Attr("alpha", 0.02f, "Slope for negative inputs.")
      .InferShape(InferSameAsX)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(LeakyReluCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(LeakyReluCpu<double>));
  r.Add("leaky_relu_grad")
      .GradOf("leaky_relu")
      .Doc("Gradient of leaky_relu: X@GRAD from X and Out@GRAD.")
      .Input(kXIn, "The forward input.")
      .Input(kDOutAfterX, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferDXLikeX)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(LeakyReluGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(LeakyReluGradCpu<double>));

  for (bool log : {false, true}) {
    const char* type = log ? "log_softmax" : "softmax";
    r.Add(type)
        .Doc(log ? "Log of the normalized exponential along `axis`: Out = X - max - log(sum(exp(X - max)))."
                 : "Normalized exponential along `axis`: Out = exp(X - max) / sum(exp(X - max)).")
        .Input(kX, "Input tensor of any shape.")
        .Output(kOut, "Output tensor, shaped like X.")
        .Attr("axis", -1, "The axis to normalize over; negative counts from the end.")
        .Attr("data_format", "AnyLayout", "PaddlePaddle layout hint; ignored.")
        .ExtraAttr()
        .InferShape(InferSoftmax)
        .Grad()
        .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(log ? LogSoftmaxCpu<float> : SoftmaxCpu<float>))
        .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(log ? LogSoftmaxCpu<double> : SoftmaxCpu<double>));
    r.Add(std::string(type) + "_grad")
        .GradOf(type)
        .Doc(fmt::format("Gradient of {}: X@GRAD from Out and Out@GRAD.", type))
        .Input(kOutIn, "The forward output.")
        .Input(kDOutAfterOut, "Gradient of the loss with respect to Out.")
        .Output(kDX, "Gradient of the loss with respect to X.")
        .InferShape(InferDXLikeOut)
        .Kernel(DeviceType::kCPU, DType::kFloat32,
                MakeKernel(log ? LogSoftmaxGradCpu<float> : SoftmaxGradCpu<float>))
        .Kernel(DeviceType::kCPU, DType::kFloat64,
                MakeKernel(log ? LogSoftmaxGradCpu<double> : SoftmaxGradCpu<double>));
  }
}

}  // namespace paddlec::ops
