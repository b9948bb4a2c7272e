// softmax_with_cross_entropy: softmax along an axis fused with cross entropy, and its gradient.
//
// The loss is computed from the log-softmax (x - max - log(sum(exp(x - max)))), which never
// underflows to log(0), instead of from log(softmax) as PaddlePaddle's CPU kernel does; the two agree
// wherever softmax is representable. Lines along the axis are Eigen arrays (vectorized when the axis is
// the last one, strided otherwise) split across the CPU pool.
#include <memory>

#include "loss/loss_common.h"

namespace paddlec::ops {
namespace {

using loss::AxisView;

constexpr InSlot kLogits{0, "Logits"};
constexpr InSlot kLabel{1, "Label"};
constexpr OutSlot kSoftmax{0, "Softmax"};
constexpr OutSlot kLoss{1, "Loss"};
// softmax_with_cross_entropy_grad: (Label, Softmax, Loss@GRAD) -> Logits@GRAD.
constexpr InSlot kGLabel{0, "Label"};
constexpr InSlot kGSoftmax{1, "Softmax"};
constexpr InSlot kGDLoss{2, "Loss@GRAD"};
constexpr OutSlot kDLogits{0, "Logits@GRAD"};

struct SwceAttrs {
  bool soft_label;
  int64_t ignore_index;
  bool use_softmax;
  int axis;
  static SwceAttrs Decode(const AttrReader& a) {
    return {a.Get<bool>("soft_label"), a.Get<int>("ignore_index"), a.Get<bool>("use_softmax"), a.Get<int>("axis")};
  }
};

Status InferSoftmaxWithCrossEntropy(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(kLogits), label = ctx.InputDims(kLabel);
  const DType xt = ctx.InputDType(kLogits), lt = ctx.InputDType(kLabel);
  const int r = x.rank();
  const int axis = ctx.Attr<int>("axis");
  if (r == 0) return ctx.Fail("Logits has shape [] but needs rank >= 1: the classes lie along axis {}", axis);
  const int a = NormalizeAxis(axis, r);
  if (a < 0) return ctx.Fail("axis {} is out of range for Logits of shape {} (rank {})", axis, x.ToString(), r);
  if (!ctx.Attr<bool>("numeric_stable_mode") && a != r - 1)
    return ctx.Fail("axis {} is not the last axis of Logits (shape {}): numeric_stable_mode false supports only that",
                    axis, x.ToString());
  const bool soft = ctx.Attr<bool>("soft_label");
  bool ok = label.rank() == r;
  for (int i = 0; ok && i < r; ++i) ok = DimMatch(label[i], i != a ? x[i] : soft ? x[a] : 1);
  if (!ok) {
    if (soft)
      return ctx.Fail("Logits has shape {} but Label has shape {}: with soft_label true, Label must have Logits' shape",
                      x.ToString(), label.ToString());
    return ctx.Fail(
        "Logits has shape {} but Label has shape {}: with soft_label false, Label must be Logits' shape with dim {} "
        "(the class axis) set to 1",
        x.ToString(), label.ToString(), a);
  }
  if (soft && lt != xt)
    return ctx.Fail("Label is {} but Logits is {}: with soft_label true, Label must have Logits' dtype", DTypeName(lt),
                    DTypeName(xt));
  if (!soft && !loss::IsIndexDType(lt))
    return ctx.Fail("Label is {}: with soft_label false, Label must hold int64 or int32 class indices", DTypeName(lt));
  Dims merged = x;
  for (int i = 0; i < r; ++i)
    if (i != a || soft) merged[i] = DimMerge(x[i], label[i]);
  ctx.SetOutput(kSoftmax, merged, xt);
  merged[a] = 1;
  ctx.SetOutput(kLoss, merged, xt);
  return Status::OK();
}

AxisView ViewOf(const Tensor& t, int axis) { return loss::ViewAround(t.dims(), NormalizeAxis(axis, t.dims().rank())); }

/// (max, log(sum(exp(x - max)))) of one line.
template <class T, class X>
std::pair<T, T> LogSumExp(const X& x) {
  const T m = x.maxCoeff();
  return {m, std::log((x - m).exp().sum())};
}

/// The same, also writing the line's softmax into `sm` (one exp per element).
template <class T, class X, class S>
std::pair<T, T> SoftmaxInto(const X& x, S&& sm) {
  const T m = x.maxCoeff();
  sm = (x - m).exp();
  const T s = sm.sum();
  sm /= s;
  return {m, std::log(s)};
}

/// Elements of one block of HardSoftmaxRows: 16 KB of floats, which stay in L1 between its passes.
constexpr int64_t kRowsBlockElements = 4096;

/// HardForward's use_softmax case for lines of n contiguous classes (the class axis last): a block of
/// lines is shifted by each line's max, then exponentiated in one pass, so that Eigen's exp runs on
/// whole packets. Line by line, n = 10 (MNIST's classes) took a packet and two scalar calls per line.
template <class T, class L>
void HardSoftmaxRows(const T* xp, const L* lp, T* smp, T* out, int64_t lines, int64_t n, int64_t ignore_index) {
  using Line = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  using MutLine = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  const int64_t block_lines = std::max<int64_t>(1, kRowsBlockElements / n);
  ParallelFor(lines, loss::LineGrain(n), [&](int64_t b, int64_t e) {
    // A line longer than a block is a block of its own, in Softmax or, without it, on the heap.
    alignas(64) T scratch[kRowsBlockElements];
    std::unique_ptr<T[]> long_line(smp == nullptr && n > kRowsBlockElements ? new T[n] : nullptr);
    T maxes[kRowsBlockElements];
    for (int64_t l0 = b; l0 < e; l0 += block_lines) {
      const int64_t count = std::min(block_lines, e - l0);
      T* shifted = smp != nullptr ? smp + l0 * n : long_line ? long_line.get() : scratch;
      for (int64_t i = 0; i < count; ++i) {
        const Line x(xp + (l0 + i) * n, n);
        maxes[i] = x.maxCoeff();
        MutLine(shifted + i * n, n) = x - maxes[i];
      }
      MutLine all(shifted, count * n);
      all = all.exp();
      for (int64_t i = 0; i < count; ++i) {
        const int64_t line = l0 + i, l = lp[line];
        MutLine sm(shifted + i * n, n);
        const T sum = sm.sum();
        if (smp != nullptr) sm /= sum;
        out[line] = l == ignore_index ? T(0) : std::log(sum) - (xp[line * n + l] - maxes[i]);
      }
    }
  });
}

/// Loss of hard labels: -log_softmax(x)[label] (use_softmax) or -log(x[label]) (x already probabilities).
template <class T, class L>
Status HardForward(const Tensor& x, const Tensor& label, Tensor* sm, Tensor& loss_t, const SwceAttrs& a) {
  const AxisView v = ViewOf(x, a.axis);
  const L* lp = label.data<L>();
  PC_RETURN_IF_ERROR(
      loss::CheckHardLabels(lp, v.lines(), v.n, a.ignore_index, "Logits", NormalizeAxis(a.axis, x.dims().rank())));
  const T* xp = x.data<T>();
  T* smp = sm ? sm->data<T>() : nullptr;
  T* out = loss_t.data<T>();
  if (v.n == 0) {  // every label is ignore_index (checked above)
    std::fill(out, out + v.lines(), T(0));
    return Status::OK();
  }
  if (a.use_softmax && v.inner == 1) {
    HardSoftmaxRows<T, L>(xp, lp, smp, out, v.lines(), v.n, a.ignore_index);
    return Status::OK();
  }
  loss::ForEachLine(v, [&](int64_t line, auto view) {
    const int64_t l = lp[line];
    auto xv = view(xp);
    if (a.use_softmax) {
      auto [m, lse] = smp ? SoftmaxInto<T>(xv, view(smp)) : LogSumExp<T>(xv);
      out[line] = l == a.ignore_index ? T(0) : lse - (xv(l) - m);
    } else {
      if (smp) view(smp) = xv;
      out[line] = l == a.ignore_index ? T(0) : -loss::TolerableLog(xv(l));
    }
  });
  return Status::OK();
}

/// Loss of soft labels: -sum(label * log_softmax(x)) or -sum(label * log(x)). ignore_index does not apply.
template <class T>
Status SoftForward(const Tensor& x, const Tensor& label, Tensor* sm, Tensor& loss_t, const SwceAttrs& a) {
  const AxisView v = ViewOf(x, a.axis);
  const T* xp = x.data<T>();
  const T* lp = label.data<T>();
  T* smp = sm ? sm->data<T>() : nullptr;
  T* out = loss_t.data<T>();
  if (v.n == 0) {
    std::fill(out, out + v.lines(), T(0));
    return Status::OK();
  }
  loss::ForEachLine(v, [&](int64_t line, auto view) {
    auto xv = view(xp);
    auto lab = view(lp);
    if (a.use_softmax) {
      auto [m, lse] = smp ? SoftmaxInto<T>(xv, view(smp)) : LogSumExp<T>(xv);
      out[line] = -(lab * (xv - (m + lse))).sum();
    } else {
      if (smp) view(smp) = xv;
      out[line] = -(lab * loss::TolerableLogArray<T>(xv)).sum();
    }
  });
  return Status::OK();
}

template <class T>
Status SoftmaxWithCrossEntropyCpu(KernelContext& ctx, const SwceAttrs& a) {
  const Tensor& x = ctx.In(kLogits);
  const Tensor& label = ctx.In(kLabel);
  Tensor* sm = ctx.OutOpt(kSoftmax);  // intermediate: a program without a backward may leave it out
  Tensor& loss_t = ctx.Out(kLoss);
  if (a.soft_label) return SoftForward<T>(x, label, sm, loss_t, a);
  if (label.dtype() == DType::kInt32) return HardForward<T, int32_t>(x, label, sm, loss_t, a);
  return HardForward<T, int64_t>(x, label, sm, loss_t, a);
}

/// use_softmax: dLogits = (softmax - onehot(label)) * dLoss, 0 on ignored lines.
/// Otherwise (Softmax holds the input probabilities p): dLogits = -dLoss / p at the label, 0 elsewhere.
template <class T, class L>
Status HardBackward(const Tensor& sm, const Tensor& label, const Tensor& dloss, Tensor& dx, const SwceAttrs& a) {
  const AxisView v = ViewOf(sm, a.axis);
  const L* lp = label.data<L>();
  PC_RETURN_IF_ERROR(
      loss::CheckHardLabels(lp, v.lines(), v.n, a.ignore_index, "Logits", NormalizeAxis(a.axis, sm.dims().rank())));
  const T* smp = sm.data<T>();
  const T* dlp = dloss.data<T>();
  T* gp = dx.data<T>();
  loss::ForEachLine(v, [&](int64_t line, auto view) {
    const int64_t l = lp[line];
    auto g = view(gp);
    if (l == a.ignore_index) {
      g.setZero();
      return;
    }
    const T d = dlp[line];
    if (a.use_softmax) {
      g = view(smp) * d;
      g(l) -= d;
    } else {
      g.setZero();
      g(l) = -d / view(smp)(l);
    }
  });
  return Status::OK();
}

/// use_softmax: dLogits = (softmax * sum(label) - label) * dLoss. This is PaddlePaddle's
/// (softmax - label) * dLoss when the label sums to 1, and the exact gradient when it does not.
/// Otherwise: dLogits = -label * dLoss / p, 0 where the label is 0 (the forward counts 0 * log(0) as 0).
template <class T>
Status SoftBackward(const Tensor& sm, const Tensor& label, const Tensor& dloss, Tensor& dx, const SwceAttrs& a) {
  const T* smp = sm.data<T>();
  const T* lp = label.data<T>();
  const T* dlp = dloss.data<T>();
  T* gp = dx.data<T>();
  loss::ForEachLine(ViewOf(sm, a.axis), [&](int64_t line, auto view) {
    auto lab = view(lp);
    auto s = view(smp);
    const T d = dlp[line];
    if (a.use_softmax)
      view(gp) = (s * lab.sum() - lab) * d;
    else
      view(gp) = (lab == T(0)).select(T(0), -lab * (d / s));
  });
  return Status::OK();
}

template <class T>
Status SoftmaxWithCrossEntropyGradCpu(KernelContext& ctx, const SwceAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDLogits);
  if (dx == nullptr) return Status::OK();
  const Tensor& label = ctx.In(kGLabel);
  const Tensor& sm = ctx.In(kGSoftmax);
  const Tensor& dloss = ctx.In(kGDLoss);
  if (a.soft_label) return SoftBackward<T>(sm, label, dloss, *dx, a);
  if (label.dtype() == DType::kInt32) return HardBackward<T, int32_t>(sm, label, dloss, *dx, a);
  return HardBackward<T, int64_t>(sm, label, dloss, *dx, a);
}

Status InferSoftmaxWithCrossEntropyGrad(InferShapeContext& ctx) {
  if (ctx.HasOutput(kDLogits)) ctx.SetOutput(kDLogits, ctx.InputDims(kGSoftmax), ctx.InputDType(kGSoftmax));
  return Status::OK();
}

}  // namespace

void RegisterSoftmaxWithCrossEntropyOps(OpRegistry& r) {
  r.Add("softmax_with_cross_entropy")
      .Doc(
          "Softmax of Logits along `axis` followed by cross entropy against Label: Loss = -log(softmax[label]) for "
          "hard labels (0 where label == ignore_index), -sum(Label * log(softmax)) for soft labels. The softmax is "
          "always computed stably (max subtracted) and the loss from the log-softmax. With use_softmax false, "
          "Logits already hold probabilities: Softmax is a copy of them and log(0) counts as -1e20.")
      .Input(kLogits, "Unscaled log-probabilities, float32 or float64; the classes lie along `axis`.")
      .Input(kLabel,
             "Hard labels: int64 or int32 class indices, shaped like Logits with the `axis` dim 1. Soft labels: one "
             "distribution per line, shaped and typed like Logits.")
      .Output(kSoftmax, "Softmax of Logits along `axis`, shaped like Logits; read by the gradient.", kIntermediate)
      .Output(kLoss, "The loss, shaped like Logits with the `axis` dim 1.")
      .Attr("soft_label", false, "Label holds distributions over the classes (true) or class indices (false).")
      .Attr("ignore_index", -100,
            "A hard label equal to this contributes zero loss and zero gradient; it may lie outside the classes. "
            "Unused with soft labels.")
      .Attr("numeric_stable_mode", true,
            "PaddlePaddle's switch for its CUDA kernel; the CPU kernel is always stable. When false, `axis` must be "
            "the last axis, as in PaddlePaddle.")
      .Attr("axis", -1, "The class axis; negative counts from the end.")
      .Attr("use_softmax", true, "Apply softmax first (true) or treat Logits as probabilities (false).")
      .InferShape(InferSoftmaxWithCrossEntropy)
      .Grad()
      .NoGradInput(kLabel)
      .KernelDTypeFromInput(kLogits)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(SoftmaxWithCrossEntropyCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(SoftmaxWithCrossEntropyCpu<double>));
  r.Add("softmax_with_cross_entropy_grad")
      .GradOf("softmax_with_cross_entropy")
      .Doc(
          "Gradient of softmax_with_cross_entropy: Logits@GRAD = (Softmax - onehot(Label)) * Loss@GRAD (hard), "
          "(Softmax * sum(Label) - Label) * Loss@GRAD (soft); 0 on ignored lines.")
      .Input(kGLabel, "The forward labels.")
      .Input(kGSoftmax, "The forward Softmax output (the probabilities themselves when use_softmax is false).")
      .Input(kGDLoss, "Gradient of the loss with respect to Loss.")
      .Output(kDLogits, "Gradient of the loss with respect to Logits.")
      .InferShape(InferSoftmaxWithCrossEntropyGrad)
      .KernelDTypeFromInput(kGSoftmax)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(SoftmaxWithCrossEntropyGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(SoftmaxWithCrossEntropyGradCpu<double>));
}

}  // namespace paddlec::ops
