// accuracy: the fraction of samples whose label is among their top-k predicted indices.
#include "loss/loss_common.h"

namespace paddlec::ops {
namespace {

constexpr InSlot kOut{0, "Out"};
constexpr InSlot kIndices{1, "Indices"};
constexpr InSlot kLabel{2, "Label"};
constexpr OutSlot kAccuracy{0, "Accuracy"};
constexpr OutSlot kCorrect{1, "Correct"};
constexpr OutSlot kTotal{2, "Total"};

Status InferAccuracy(InferShapeContext& ctx) {
  const Dims out = ctx.InputDims(kOut), idx = ctx.InputDims(kIndices), label = ctx.InputDims(kLabel);
  if (out.rank() != 2)
    return ctx.Fail("Out has shape {} but must be [N, k]: the top-k values of every sample", out.ToString());
  if (!DimsMatch(out, idx))
    return ctx.Fail("Out has shape {} but Indices has shape {}: both come from top_k and must match", out.ToString(),
                    idx.ToString());
  if (label.rank() != 2 || !DimMatch(label[1], 1) || !DimMatch(label[0], out[0]))
    return ctx.Fail("Out has shape {} but Label has shape {}: Label must be [N, 1], one class per sample",
                    out.ToString(), label.ToString());
  if (!loss::IsIndexDType(ctx.InputDType(kIndices)))
    return ctx.Fail("Indices is {}: it must hold int64 or int32 class indices", DTypeName(ctx.InputDType(kIndices)));
  if (!loss::IsIndexDType(ctx.InputDType(kLabel)))
    return ctx.Fail("Label is {}: it must hold int64 or int32 class indices", DTypeName(ctx.InputDType(kLabel)));
  ctx.SetOutput(kAccuracy, {1}, DType::kFloat32);
  ctx.SetOutput(kCorrect, {1}, DType::kInt32);
  ctx.SetOutput(kTotal, {1}, DType::kInt32);
  return Status::OK();
}

/// Samples whose label appears among their k indices (a repeated index counts once).
template <class I, class L>
StatusOr<int64_t> CountCorrect(const I* idx, const L* label, int64_t n, int64_t k) {
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = label[i];
    if (l < 0) return MakeError(ErrorCode::kRuntime, "Label holds {} at row {}: class indices must be >= 0", l, i);
    const I* row = idx + i * k;
    // An int64 label beyond the range of int32 indices matches none of them (rather than a truncation).
    const bool representable = static_cast<int64_t>(static_cast<I>(l)) == l;
    correct += representable && std::find(row, row + k, static_cast<I>(l)) != row + k;
  }
  return correct;
}

/// Out's values are not read (only their dtype selects the kernel): the indices decide.
Status AccuracyCpu(KernelContext& ctx) {
  const Tensor& idx = ctx.In(kIndices);
  const Tensor& label = ctx.In(kLabel);
  const int64_t n = idx.dims()[0], k = idx.dims()[1];
  const bool idx64 = idx.dtype() == DType::kInt64, label64 = label.dtype() == DType::kInt64;
  StatusOr<int64_t> correct = idx64 ? (label64 ? CountCorrect(idx.data<int64_t>(), label.data<int64_t>(), n, k)
                                               : CountCorrect(idx.data<int64_t>(), label.data<int32_t>(), n, k))
                                    : (label64 ? CountCorrect(idx.data<int32_t>(), label.data<int64_t>(), n, k)
                                               : CountCorrect(idx.data<int32_t>(), label.data<int32_t>(), n, k));
  if (!correct.ok()) return correct.status();
  ctx.Out(kAccuracy).data<float>()[0] = n == 0 ? 0.0f : static_cast<float>(*correct) / static_cast<float>(n);
  ctx.Out(kCorrect).data<int32_t>()[0] = static_cast<int32_t>(*correct);
  ctx.Out(kTotal).data<int32_t>()[0] = static_cast<int32_t>(n);
  return Status::OK();
}

}  // namespace

void RegisterAccuracyOps(OpRegistry& r) {
  r.Add("accuracy")
      .Doc(
          "Top-k accuracy of a batch: a sample is correct when its label is among its k predicted indices. "
          "Accuracy = Correct / Total (0 for an empty batch).")
      .Input(kOut, "The top-k values [N, k] (from top_k); only its dtype is used.")
      .Input(kIndices, "The top-k class indices [N, k] (from top_k), int64 or int32.")
      .Input(kLabel, "The true class of every sample [N, 1], int64 or int32.")
      .Output(kAccuracy, "The fraction of correct samples, float32 [1].")
      .Output(kCorrect, "The number of correct samples, int32 [1].")
      .Output(kTotal, "The number of samples N, int32 [1].")
      .InferShape(InferAccuracy)
      .NoGradient()
      .KernelDTypeFromInput(kOut)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(AccuracyCpu))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(AccuracyCpu));
}

}  // namespace paddlec::ops
