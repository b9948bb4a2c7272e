// Activation ops: the element-wise activations of kActivations (relu, sigmoid, tanh, sqrt, gelu,
// leaky_relu, relu6, hard_swish, hard_sigmoid, swish, silu, elu, exp, log, pow, clip), softmax and
// log_softmax, and their gradients.
//
// Element-wise kernels are Eigen array expressions over chunks split across the CPU pool (vectorized
// exp, tanh and log; piecewise functions as min/max, selects of constants or plain loops the
// compiler vectorizes), chosen once per run by the decoded kind. The softmax family works on [outer, axis, inner] views
// so any axis is handled without transposes.
#include <cmath>

#include "activation/activation_slots.h"
#include "common/cpu_kernels.h"

namespace paddlec::ops {
namespace {

using namespace activation;  // NOLINT: the family's shared slots and decoding

// ---- Element-wise activations ------------------------------------------------------------

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

/// y = f(x) over n elements; `f` maps an Eigen array expression to an expression.
template <class T, class F>
void MapChunks(const T* x, T* y, int64_t n, F f) {
  ParallelChunks(n, [&](int64_t b, int64_t len) { MutEigenVec<T>(y + b, len) = f(ConstEigenVec<T>(x + b, len)); });
}

/// g = f(a, d) over n elements, where `a` is X or Out and `d` is Out@GRAD.
template <class T, class F>
void GradChunks(const T* a, const T* d, T* g, int64_t n, F f) {
  ParallelChunks(n, [&](int64_t b, int64_t len) {
    MutEigenVec<T>(g + b, len) = f(ConstEigenVec<T>(a + b, len), ConstEigenVec<T>(d + b, len));
  });
}

/// Piecewise derivatives with arithmetic in a piece: that piece is computed for every element first
/// (vectorized), then a select picks per element. Eigen evaluates a select one element at a time, and
/// the compiler cannot turn an arithmetic branch into a blend (floating-point traps), so arithmetic
/// inside a select would run as a mispredicted branch per element, tens of times slower.
template <class T, class Piece, class Pick>
void GradPieces(const T* a, const T* d, T* g, int64_t n, Piece piece, Pick pick) {
  ParallelChunks(n, [&](int64_t b, int64_t len) {
    ConstEigenVec<T> av(a + b, len), dv(d + b, len);
    MutEigenVec<T> gv(g + b, len);
    gv = piece(av, dv);
    gv = pick(av, dv, gv);
  });
}

template <class T>
void Forward(const ActivationCall& call, const T* x, T* y, int64_t n) {
  const T a = static_cast<T>(call.p.a), b = static_cast<T>(call.p.b), c = static_cast<T>(call.p.c);
  switch (call.kind) {
    case Activation::kRelu:
      return MapChunks(x, y, n, [](const auto& v) { return v.max(T(0)); });
    case Activation::kSigmoid:
      return MapChunks(x, y, n, [](const auto& v) { return T(1) / (T(1) + (-v).exp()); });
    case Activation::kTanh:
      return MapChunks(x, y, n, [](const auto& v) { return v.tanh(); });
    case Activation::kSqrt:
      return MapChunks(x, y, n, [](const auto& v) { return v.sqrt(); });
    case Activation::kGelu:
      return MapChunks(x, y, n, [](const auto& v) { return T(0.5) * v * (T(1) + (v * T(kInvSqrt2)).erf()); });
    case Activation::kGeluTanh:
      return MapChunks(x, y, n, [](const auto& v) {
        return T(0.5) * v * (T(1) + (T(kSqrt2OverPi) * (v + T(0.044715) * v.cube())).tanh());
      });
    case Activation::kLeakyRelu:
      return MapChunks(x, y, n, [a](const auto& v) { return v.max(T(0)) + v.min(T(0)) * a; });
    case Activation::kRelu6:  // min(max(x, 0), threshold)
      return MapChunks(x, y, n, [a](const auto& v) { return v.max(T(0)).min(a); });
    case Activation::kHardSwish:  // x * min(max(x + offset, 0), threshold) / scale
      return MapChunks(x, y, n, [a, b, c](const auto& v) { return v * (v + c).max(T(0)).min(a) / b; });
    case Activation::kHardSigmoid:  // min(max(slope * x + offset, 0), 1)
      return MapChunks(x, y, n, [a, b](const auto& v) { return (v * a + b).max(T(0)).min(T(1)); });
    case Activation::kSwish:  // x * sigmoid(beta * x)
      return MapChunks(x, y, n, [a](const auto& v) { return v / (T(1) + (v * (-a)).exp()); });
    case Activation::kSilu:
      return MapChunks(x, y, n, [](const auto& v) { return v / (T(1) + (-v).exp()); });
    case Activation::kElu:  // max(x, 0) + alpha * (exp(min(x, 0)) - 1): no select, all vectorized
      return MapChunks(x, y, n, [a](const auto& v) { return v.max(T(0)) + a * (v.min(T(0)).exp() - T(1)); });
    case Activation::kExp:
      return MapChunks(x, y, n, [](const auto& v) { return v.exp(); });
    case Activation::kLog:
      return MapChunks(x, y, n, [](const auto& v) { return v.log(); });
    case Activation::kPow:
      if (a == T(2)) return MapChunks(x, y, n, [](const auto& v) { return v.square(); });
      return MapChunks(x, y, n, [a](const auto& v) { return v.pow(a); });
    case Activation::kClip:  // NaN stays NaN, as in PaddlePaddle
      return MapChunks(x, y, n, [a, b](const auto& v) { return (v < a).select(a, (v > b).select(b, v)); });
  }
}

/// dX from A (Out for GradReads::kOut, else X) and dOut; the formulas of PaddlePaddle's grad kernels.
template <class T>
void Backward(const ActivationCall& call, const T* x_or_out, const T* dout, T* dx, int64_t n) {
  const T a = static_cast<T>(call.p.a), b = static_cast<T>(call.p.b), c = static_cast<T>(call.p.c);
  const T* p = x_or_out;
  switch (call.kind) {
    case Activation::kRelu:  // A = Out
      return GradChunks(p, dout, dx, n, [](const auto& o, const auto& d) { return (o > T(0)).select(d, T(0)); });
    case Activation::kSigmoid:
      return GradChunks(p, dout, dx, n, [](const auto& o, const auto& d) { return d * o * (T(1) - o); });
    case Activation::kTanh:
      return GradChunks(p, dout, dx, n, [](const auto& o, const auto& d) { return d * (T(1) - o.square()); });
    case Activation::kSqrt:
      return GradChunks(p, dout, dx, n, [](const auto& o, const auto& d) { return d * T(0.5) / o; });
    case Activation::kGelu:  // A = X
      return GradChunks(p, dout, dx, n, [](const auto& v, const auto& d) {
        return d * (T(0.5) * (T(1) + (v * T(kInvSqrt2)).erf()) + v * T(kInvSqrt2Pi) * (T(-0.5) * v.square()).exp());
      });
    case Activation::kGeluTanh:
      return GradChunks(p, dout, dx, n, [](const auto& v, const auto& d) {
        auto t = (T(kSqrt2OverPi) * (v + T(0.044715) * v.cube())).tanh();
        auto dinner = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * v.square());
        return d * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t.square()) * dinner);
      });
    case Activation::kLeakyRelu:
      return GradPieces(
          p, dout, dx, n, [a](const auto&, const auto& d) { return d * a; },
          [](const auto& v, const auto& d, const auto& g) { return (v > T(0)).select(d, g); });
    case Activation::kRelu6:  // A = Out: dOut where 0 < Out < threshold
      return GradChunks(p, dout, dx, n,
                        [a](const auto& o, const auto& d) { return (o > T(0) && o < a).select(d, T(0)); });
    case Activation::kHardSwish:  // 0 below -offset, 1 from threshold - offset, (2x + offset) / scale between
      return GradPieces(
          p, dout, dx, n, [b, c](const auto& v, const auto& d) { return d * (T(2) * v + c) / b; },
          [a, c](const auto& v, const auto& d, const auto& g) {
            return (v + c > T(0)).select((v + c < a).select(g, d), T(0));
          });
    case Activation::kHardSigmoid:  // A = Out: slope where 0 < Out < 1
      return GradPieces(
          p, dout, dx, n, [a](const auto&, const auto& d) { return d * a; },
          [](const auto& o, const auto&, const auto& g) { return (o > T(0) && o < T(1)).select(g, T(0)); });
    case Activation::kSwish:  // with s = sigmoid(beta x), o = x s: beta o + s (1 - beta o)
      return GradChunks(p, dout, dx, n, [a](const auto& v, const auto& d) {
        auto s = T(1) / (T(1) + (v * (-a)).exp());
        auto bo = a * v * s;
        return d * (bo + s * (T(1) - bo));
      });
    case Activation::kSilu:  // s (1 + x (1 - s))
      return GradChunks(p, dout, dx, n, [](const auto& v, const auto& d) {
        auto s = T(1) / (T(1) + (-v).exp());
        return d * s * (T(1) + v * (T(1) - s));
      });
    case Activation::kElu:  // exp(min(X, 0)) for every element, then the pick
      return GradPieces(
          p, dout, dx, n, [a](const auto& v, const auto& d) { return d * a * v.min(T(0)).exp(); },
          [](const auto& v, const auto& d, const auto& g) { return (v > T(0)).select(d, g); });
    case Activation::kExp:  // A = Out
      return GradChunks(p, dout, dx, n, [](const auto& o, const auto& d) { return d * o; });
    case Activation::kLog:
      return GradChunks(p, dout, dx, n, [](const auto& v, const auto& d) { return d / v; });
    case Activation::kPow:
      if (a == T(2)) return GradChunks(p, dout, dx, n, [](const auto& v, const auto& d) { return d * T(2) * v; });
      return GradChunks(p, dout, dx, n, [a](const auto& v, const auto& d) { return d * a * v.pow(a - T(1)); });
    case Activation::kClip:  // dOut strictly inside (min, max)
      return GradChunks(p, dout, dx, n,
                        [a, b](const auto& v, const auto& d) { return (v > a && v < b).select(d, T(0)); });
  }
}

template <class T>
class ActivationCpu final : public OpKernel {
 public:
  ActivationCpu(const KernelInit& init, Activation kind, GradReads reads, bool grad)
      : call_(DecodeActivation(kind, init.attrs)), dout_(DOutSlot(reads)), grad_(grad) {}

  Status Run(KernelContext& ctx) override {
    if (!grad_) {
      const Tensor& x = ctx.In(kX);
      Forward<T>(call_, x.data<T>(), ctx.Out(kOut).data<T>(), x.numel());
      return Status::OK();
    }
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    Backward<T>(call_, ctx.In(kGradA).data<T>(), ctx.In(dout_).data<T>(), dx->data<T>(), dx->numel());
    return Status::OK();
  }

 private:
  ActivationCall call_;
  InSlot dout_;
  bool grad_;
};

template <class T>
KernelFactory ActivationFactory(const ActivationOp& op, bool grad) {
  return [kind = op.kind, reads = op.reads, grad](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new ActivationCpu<T>(init, kind, reads, grad));
  };
}

// ---- Shape functions -----------------------------------------------------------------------

/// PaddlePaddle's tensor-valued attributes (pow's FactorTensor, clip's Min and Max), which paddlec
/// does not take yet; OK when the slot is unbound.
Status RejectTensorAttr(InferShapeContext& ctx, InSlot slot, std::string_view attr) {
  if (!ctx.HasInput(slot)) return Status::OK();
  return ctx.Fail("input {} (bound to '{}') is not supported yet: give `{}` as an attribute instead", slot.name,
                  ctx.InputName(slot), attr);
}

Status InferPow(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(RejectTensorAttr(ctx, kFactorTensor, "factor"));
  return InferSameAsX(ctx);
}

Status InferClip(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(RejectTensorAttr(ctx, kMin, "min"));
  PC_RETURN_IF_ERROR(RejectTensorAttr(ctx, kMax, "max"));
  const float lo = ctx.Attr<float>("min"), hi = ctx.Attr<float>("max");
  if (!(lo <= hi)) return ctx.Fail("min {} is greater than max {}: clip needs min <= max", lo, hi);
  return InferSameAsX(ctx);
}

/// X@GRAD is shaped like the grad op's first input (X, or Out for GradReads::kOut: both shaped like
/// X), which Out@GRAD must match: the kernels walk them together.
template <GradReads kReads>
Status InferActivationGrad(InferShapeContext& ctx) {
  const InSlot a = kReads == GradReads::kOut ? kGradOut : kGradX;
  const Dims d = ctx.InputDims(a), dout = ctx.InputDims(DOutSlot(kReads));
  if (!DimsMatch(d, dout))
    return ctx.Fail("Out@GRAD has shape {} but {} has shape {}: they must match", dout.ToString(), a.name,
                    d.ToString());
  if (ctx.HasOutput(kDX)) ctx.SetOutput(kDX, d, ctx.InputDType(a));
  return Status::OK();
}

Status InferPowGrad(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(RejectTensorAttr(ctx, kGradFactorTensor, "factor"));
  return InferActivationGrad<GradReads::kX>(ctx);
}

Status InferClipGrad(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(RejectTensorAttr(ctx, kGradMin, "min"));
  PC_RETURN_IF_ERROR(RejectTensorAttr(ctx, kGradMax, "max"));
  return InferActivationGrad<GradReads::kX>(ctx);
}

InferShapeFn GradShapeFn(const ActivationOp& a) {
  if (a.kind == Activation::kPow) return InferPowGrad;
  if (a.kind == Activation::kClip) return InferClipGrad;
  switch (a.reads) {
    case GradReads::kOut:
      return InferActivationGrad<GradReads::kOut>;
    case GradReads::kX:
      return InferActivationGrad<GradReads::kX>;
    case GradReads::kXOut:
      return InferActivationGrad<GradReads::kXOut>;
  }
  return nullptr;
}

// ---- softmax / log_softmax ------------------------------------------------------------------

Status InferSoftmax(InferShapeContext& ctx) {
  Dims x = ctx.InputDims(kX);
  int axis = ctx.Attr<int>("axis");
  if (x.rank() == 0 ? (axis != 0 && axis != -1) : NormalizeAxis(axis, x.rank()) < 0)
    return ctx.Fail("axis {} is out of range for X of shape {} (rank {})", axis, x.ToString(), x.rank());
  ctx.ShareDims(kX, kOut);
  return Status::OK();
}

Status InferSoftmaxGrad(InferShapeContext& ctx) {
  if (ctx.HasOutput(kDX)) ctx.SetOutput(kDX, ctx.InputDims(kSoftmaxOut), ctx.InputDType(kSoftmaxOut));
  return Status::OK();
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
                    if constexpr (kLog)
                      yv = (xv - m) - std::log(s);
                    else
                      yv /= s;
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
  const Tensor& out = ctx.In(kSoftmaxOut);
  const Tensor& dout = ctx.In(kSoftmaxDOut);
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

/// The doc line and the attributes of each element-wise activation (PaddlePaddle's names and
/// defaults), declared on the forward op; its grad op copies them.
void Describe(OpBuilder& op, Activation kind) {
  switch (kind) {
    case Activation::kRelu:
      op.Doc("Rectified linear unit: Out = max(X, 0).");
      break;
    case Activation::kSigmoid:
      op.Doc("Logistic sigmoid: Out = 1 / (1 + exp(-X)).");
      break;
    case Activation::kTanh:
      op.Doc("Hyperbolic tangent: Out = tanh(X).");
      break;
    case Activation::kSqrt:
      op.Doc("Square root: Out = sqrt(X).");
      break;
    case Activation::kGelu:
    case Activation::kGeluTanh:
      op.Doc("Gaussian error linear unit: Out = X * Phi(X), exactly (erf) or with the tanh approximation.")
          .Attr("approximate", false, "Use the tanh approximation instead of erf.");
      break;
    case Activation::kLeakyRelu:
      op.Doc("Leaky rectified linear unit: Out = X if X > 0 else alpha * X.")
          .Attr("alpha", 0.02f, "Slope for negative inputs.");
      break;
    case Activation::kRelu6:
      op.Doc("ReLU capped at `threshold`: Out = min(max(X, 0), threshold).")
          .Attr("threshold", 6.0f, "The upper bound (PaddlePaddle's extra attribute; 6 in every model it writes).")
          .ExtraAttr();
      break;
    case Activation::kHardSwish:
      op.Doc("Hard swish: Out = X * min(max(X + offset, 0), threshold) / scale.")
          .Attr("threshold", 6.0f, "The cap of X + offset (PaddlePaddle 2.x attribute; 3.x fixes it at 6).")
          .ExtraAttr()
          .Attr("scale", 6.0f, "The divisor (PaddlePaddle 2.x attribute; 3.x fixes it at 6).")
          .GreaterThan(0)  // a divisor: 0 gives inf and NaN, a negative one flips the curve
          .ExtraAttr()
          .Attr("offset", 3.0f, "Added to X before capping (PaddlePaddle 2.x attribute; 3.x fixes it at 3).")
          .ExtraAttr();
      break;
    case Activation::kHardSigmoid:
      op.Doc("Hard sigmoid: Out = min(max(slope * X + offset, 0), 1).")
          .Attr("slope", 0.2f, "The slope of the linear part.")
          .Attr("offset", 0.5f, "The value at X = 0.");
      break;
    case Activation::kSwish:
      op.Doc("Swish: Out = X * sigmoid(beta * X).")
          .Attr("beta", 1.0f, "The sigmoid's scale (PaddlePaddle's extra attribute; 1 in every model it writes).")
          .ExtraAttr();
      break;
    case Activation::kSilu:
      op.Doc("Sigmoid linear unit: Out = X * sigmoid(X).");
      break;
    case Activation::kElu:
      op.Doc("Exponential linear unit: Out = X if X > 0 else alpha * (exp(X) - 1).")
          .Attr("alpha", 1.0f, "The scale of the negative part.");
      break;
    case Activation::kExp:
      op.Doc("Exponential: Out = exp(X).");
      break;
    case Activation::kLog:
      op.Doc("Natural logarithm: Out = log(X).");
      break;
    case Activation::kPow:
      op.Doc("Power with a scalar exponent: Out = X ^ factor.")
          .Input(kFactorTensor, "A 1-element tensor overriding `factor` (not supported yet).", kDispensable)
          .Attr("factor", 1.0f, "The exponent.");
      break;
    case Activation::kClip:
      op.Doc("Clips X to [min, max]: Out = min(max(X, min), max); NaN stays NaN.")
          .Input(kMin, "A 1-element tensor overriding `min` (not supported yet).", kDispensable)
          .Input(kMax, "A 1-element tensor overriding `max` (not supported yet).", kDispensable)
          .RequiredAttr<float>("min", "The lower bound.")
          .RequiredAttr<float>("max", "The upper bound.");
      break;
  }
}

void RegisterActivation(OpRegistry& r, const ActivationOp& a) {
  const std::string grad = std::string(a.type) + "_grad";
  OpBuilder fwd = r.Add(a.type);
  fwd.Input(kX, "Input tensor of any shape.");
  Describe(fwd, a.kind);
  fwd.Output(kOut, "Output tensor, shaped like X.")
      .InferShape(a.kind == Activation::kPow    ? InferPow
                  : a.kind == Activation::kClip ? InferClip
                                                : InferSameAsX)
      .Grad();
  if (a.kind == Activation::kPow) fwd.NoGradInput(kFactorTensor);
  if (a.kind == Activation::kClip) fwd.NoGradInput(kMin).NoGradInput(kMax);

  OpBuilder g = r.Add(grad);
  g.GradOf(a.type).Doc(fmt::format("Gradient of {}: X@GRAD from {} and Out@GRAD.", a.type,
                                   a.reads == GradReads::kOut ? "Out"
                                   : a.reads == GradReads::kX ? "X"
                                                              : "X (its Out is declared as PaddlePaddle binds it)"));
  if (a.reads == GradReads::kOut)
    g.Input(kGradOut, "The forward output.");
  else
    g.Input(kGradX, "The forward input.");
  if (a.reads == GradReads::kXOut) g.Input({1, "Out"}, "The forward output (unused: the gradient reads X).");
  g.Input(DOutSlot(a.reads), "Gradient of the loss with respect to Out.");
  if (a.kind == Activation::kPow)
    g.Input(kGradFactorTensor, "The forward FactorTensor (not supported yet).", kDispensable);
  if (a.kind == Activation::kClip)
    g.Input(kGradMin, "The forward Min (not supported yet).", kDispensable)
        .Input(kGradMax, "The forward Max (not supported yet).", kDispensable);
  g.Output(kDX, "Gradient of the loss with respect to X.").InferShape(GradShapeFn(a));

  fwd.Kernel(DeviceType::kCPU, DType::kFloat32, ActivationFactory<float>(a, false))
      .Kernel(DeviceType::kCPU, DType::kFloat64, ActivationFactory<double>(a, false));
  g.Kernel(DeviceType::kCPU, DType::kFloat32, ActivationFactory<float>(a, true))
      .Kernel(DeviceType::kCPU, DType::kFloat64, ActivationFactory<double>(a, true));
}

}  // namespace

void RegisterActivationOps(OpRegistry& r) {
  for (const ActivationOp& a : kActivations) RegisterActivation(r, a);

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
        .Input(kSoftmaxOut, "The forward output.")
        .Input(kSoftmaxDOut, "Gradient of the loss with respect to Out.")
        .Output(kDX, "Gradient of the loss with respect to X.")
        .InferShape(InferSoftmaxGrad)
        .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(log ? LogSoftmaxGradCpu<float> : SoftmaxGradCpu<float>))
        .Kernel(DeviceType::kCPU, DType::kFloat64,
                MakeKernel(log ? LogSoftmaxGradCpu<double> : SoftmaxGradCpu<double>));
  }
}

}  // namespace paddlec::ops
