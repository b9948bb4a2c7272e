// cross_entropy: negative log-likelihood of probabilities under hard or soft labels, and its gradient.
//
// X is [..., D] probabilities (typically a softmax output); every row of D classes is one sample.
#include "loss/loss_common.h"

namespace paddlec::ops {
namespace {

using loss::AxisView;

constexpr InSlot kX{0, "X"};
constexpr InSlot kLabel{1, "Label"};
constexpr OutSlot kY{0, "Y"};
// cross_entropy_grad: (X, Label, Y@GRAD) -> X@GRAD.
constexpr InSlot kDY{2, "Y@GRAD"};
constexpr OutSlot kDX{0, "X@GRAD"};

struct CrossEntropyAttrs {
  bool soft_label;
  int64_t ignore_index;
  static CrossEntropyAttrs Decode(const AttrReader& a) {
    return {a.Get<bool>("soft_label"), a.Get<int>("ignore_index")};
  }
};

Status InferCrossEntropy(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(kX), label = ctx.InputDims(kLabel);
  const DType xt = ctx.InputDType(kX), lt = ctx.InputDType(kLabel);
  const int r = x.rank();
  if (r == 0) return ctx.Fail("X has shape [] but needs rank >= 1: its last dim holds the class probabilities");
  Dims y = x;
  if (ctx.Attr<bool>("soft_label")) {
    if (!DimsMatch(x, label))
      return ctx.Fail("X has shape {} but Label has shape {}: with soft_label true, Label must have X's shape",
                      x.ToString(), label.ToString());
    if (lt != xt)
      return ctx.Fail("Label is {} but X is {}: with soft_label true, Label must have X's dtype", DTypeName(lt),
                      DTypeName(xt));
  } else {
    // PaddlePaddle accepts hard labels shaped like X with the last dim 1, or with that dim dropped.
    bool ok = label.rank() == r || label.rank() == r - 1;
    for (int i = 0; ok && i < r - 1; ++i) ok = DimMatch(x[i], label[i]);
    if (ok && label.rank() == r) ok = DimMatch(label[r - 1], 1);
    if (!ok)
      return ctx.Fail(
          "X has shape {} but Label has shape {}: with soft_label false, Label must be X's shape with the last dim 1 "
          "(or without it)",
          x.ToString(), label.ToString());
    if (!loss::IsIndexDType(lt))
      return ctx.Fail("Label is {}: with soft_label false, Label must hold int64 or int32 class indices",
                      DTypeName(lt));
  }
  for (int i = 0; i < r - 1; ++i) y[i] = DimMerge(x[i], label[i]);
  // Y takes Label's rank, as in PaddlePaddle: [..., 1], or [...] for labels without the trailing 1.
  if (label.rank() == r)
    y[r - 1] = 1;
  else
    y.resize(r - 1);
  ctx.SetOutput(kY, y, xt);
  return Status::OK();
}

/// Rows of D classes; the run-time rank is at least 1 (checked by the shape function).
AxisView RowsOf(const Tensor& x) { return loss::ViewAround(x.dims(), x.dims().rank() - 1); }

template <class T, class L>
Status HardForward(const Tensor& x, const Tensor& label, Tensor& y, int64_t ignore_index) {
  const AxisView v = RowsOf(x);
  const L* lp = label.data<L>();
  PC_RETURN_IF_ERROR(loss::CheckHardLabels(lp, v.lines(), v.n, ignore_index, "X", x.dims().rank() - 1));
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  ParallelChunks(v.lines(), [&](int64_t b, int64_t n) {
    for (int64_t i = b; i < b + n; ++i) {
      const int64_t l = lp[i];
      yp[i] = l == ignore_index ? T(0) : -loss::TolerableLog(xp[i * v.n + l]);
    }
  });
  return Status::OK();
}

template <class T>
Status SoftForward(const Tensor& x, const Tensor& label, Tensor& y) {
  const T* xp = x.data<T>();
  const T* lp = label.data<T>();
  T* yp = y.data<T>();
  loss::ForEachLine(
      RowsOf(x), [&](int64_t row, auto view) { yp[row] = -(view(lp) * loss::TolerableLogArray<T>(view(xp))).sum(); });
  return Status::OK();
}

template <class T>
Status CrossEntropyCpu(KernelContext& ctx, const CrossEntropyAttrs& a) {
  const Tensor& x = ctx.In(kX);
  const Tensor& label = ctx.In(kLabel);
  Tensor& y = ctx.Out(kY);
  if (a.soft_label) return SoftForward<T>(x, label, y);
  if (label.dtype() == DType::kInt32) return HardForward<T, int32_t>(x, label, y, a.ignore_index);
  return HardForward<T, int64_t>(x, label, y, a.ignore_index);
}

/// dX = -dY / X at the label, 0 elsewhere and on ignored rows (PaddlePaddle's formula; X = 0 at a
/// label gives -inf, as there).
template <class T, class L>
Status HardBackward(const Tensor& x, const Tensor& label, const Tensor& dy, Tensor& dx, int64_t ignore_index) {
  const AxisView v = RowsOf(x);
  const L* lp = label.data<L>();
  PC_RETURN_IF_ERROR(loss::CheckHardLabels(lp, v.lines(), v.n, ignore_index, "X", x.dims().rank() - 1));
  const T* xp = x.data<T>();
  const T* dyp = dy.data<T>();
  T* gp = dx.data<T>();
  ParallelFor(v.lines(), loss::LineGrain(v.n), [&](int64_t b, int64_t e) {
    MutEigenVec<T>(gp + b * v.n, (e - b) * v.n).setZero();
    for (int64_t i = b; i < e; ++i) {
      const int64_t l = lp[i];
      if (l != ignore_index) gp[i * v.n + l] = -dyp[i] / xp[i * v.n + l];
    }
  });
  return Status::OK();
}

/// dX = -Label * dY / X. Where Label is 0 the gradient is 0 even at X = 0: the forward counts
/// 0 * log(0) as 0 there (PaddlePaddle would produce NaN).
template <class T>
Status SoftBackward(const Tensor& x, const Tensor& label, const Tensor& dy, Tensor& dx) {
  const T* xp = x.data<T>();
  const T* lp = label.data<T>();
  const T* dyp = dy.data<T>();
  T* gp = dx.data<T>();
  loss::ForEachLine(RowsOf(x), [&](int64_t row, auto view) {
    auto lab = view(lp);
    view(gp) = (lab == T(0)).select(T(0), -lab * (dyp[row] / view(xp)));
  });
  return Status::OK();
}

template <class T>
Status CrossEntropyGradCpu(KernelContext& ctx, const CrossEntropyAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(kX);
  const Tensor& label = ctx.In(kLabel);
  const Tensor& dy = ctx.In(kDY);
  if (a.soft_label) return SoftBackward<T>(x, label, dy, *dx);
  if (label.dtype() == DType::kInt32) return HardBackward<T, int32_t>(x, label, dy, *dx, a.ignore_index);
  return HardBackward<T, int64_t>(x, label, dy, *dx, a.ignore_index);
}

}  // namespace

void RegisterCrossEntropyOps(OpRegistry& r) {
  r.Add("cross_entropy")
      .Doc(
          "Cross entropy of probabilities X against Label over X's last dim: Y = -log(X[label]) for hard labels "
          "(0 where label == ignore_index), Y = -sum(Label * log(X)) for soft labels. log(0) counts as -1e20, "
          "as PaddlePaddle's TolerableValue does, so the loss stays finite and 0 * log(0) is 0.")
      .Input(kX, "Probabilities [..., D] (typically a softmax output), float32 or float64.")
      .Input(kLabel,
             "Hard labels: int64 or int32 class indices in [0, D), shaped like X with the last dim 1 or without it. "
             "Soft labels: one distribution per row, shaped and typed like X.")
      .Output(kY, "The loss per row, shaped like Label: X's shape with the last dim 1 (or without it).")
      .Attr("soft_label", false, "Label holds distributions over the classes (true) or class indices (false).")
      .Attr("ignore_index", -100,
            "A hard label equal to this contributes zero loss and zero gradient; it may lie outside [0, D). "
            "Unused with soft labels.")
      .InferShape(InferCrossEntropy)
      .Grad()
      .NoGradInput(kLabel)
      .KernelDTypeFromInput(kX)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(CrossEntropyCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(CrossEntropyCpu<double>));
  r.Add("cross_entropy_grad")
      .GradOf("cross_entropy")
      .Doc("Gradient of cross_entropy: X@GRAD = -Y@GRAD / X at the label (hard) or -Label * Y@GRAD / X (soft).")
      .Input(kX, "The forward input probabilities.")
      .Input(kLabel, "The forward labels.")
      .Input(kDY, "Gradient of the loss with respect to Y.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .KernelDTypeFromInput(kX)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(CrossEntropyGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(CrossEntropyGradCpu<double>));
}

}  // namespace paddlec::ops
