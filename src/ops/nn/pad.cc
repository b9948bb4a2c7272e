// pad3d and pad3d_grad: constant, reflect, replicate and circular padding of 5-D tensors (NCDHW or
// NDHWC) with PaddlePaddle's attributes, the paddings given by the attribute or by the Paddings tensor.
// The index rules are pad_index.h's, shared with the CUDA kernels.
#include <algorithm>
#include <cstring>

#include "common/cpu_kernels.h"
#include "common/host_values.h"
#include "nn/nn.h"
#include "nn/pad_slots.h"

namespace paddlec::ops {

namespace pad {

Status Pad3dShapeOf(const Dims& x, const Pad3dAttrs& a, std::span<const int64_t> values, nn::Pad3dShape& p) {
  const char* layout = a.channel_last ? "NDHWC" : "NCDHW";
  if (x.rank() != 5)
    return MakeError(ErrorCode::kShape, "X has shape {} (rank {}) but pad3d needs a 5-D {} input", x.ToString(),
                     x.rank(), layout);
  std::vector<int64_t> pads(values.begin(), values.end());
  if (values.empty()) pads.assign(a.paddings.begin(), a.paddings.end());
  if (pads.size() != 6)
    return MakeError(ErrorCode::kShape, "{} has {} values but pad3d needs 6 (left, right, top, bottom, front, back)",
                     values.empty() ? "attribute 'paddings'" : "input Paddings", pads.size());
  static constexpr const char* kAxis[3] = {"depth", "height", "width"};
  static constexpr const char* kSide[3][2] = {{"front", "back"}, {"top", "bottom"}, {"left", "right"}};
  p.n = x[0];
  p.c = a.channel_last ? x[4] : x[1];
  p.mode = a.mode;
  p.channel_last = a.channel_last;
  p.value = a.value;
  for (int ax = 0; ax < 3; ++ax) {
    nn::PadAxis& pa = p.axis[ax];
    const int64_t before = pads[4 - 2 * ax], after = pads[5 - 2 * ax];
    pa.in = x[(a.channel_last ? 1 : 2) + ax];
    pa.before = before;
    pa.out = pa.in < 0 ? kUnknownDim : pa.in + before + after;
    if (pa.in < 0) continue;
    if (pa.out < 0)
      return MakeError(ErrorCode::kShape,
                       "X has shape {} but the paddings {} = {} and {} = {} leave {} elements on the {} axis",
                       x.ToString(), kSide[ax][0], before, kSide[ax][1], after, pa.out, kAxis[ax]);
    if (a.mode == nn::PadMode::kReflect && (before >= pa.in || after >= pa.in))
      return MakeError(ErrorCode::kShape,
                       "X has shape {} but reflect padding needs pads smaller than the {} {}: {} = {}, {} = {}",
                       x.ToString(), kAxis[ax], pa.in, kSide[ax][0], before, kSide[ax][1], after);
    if ((a.mode == nn::PadMode::kReplicate || a.mode == nn::PadMode::kCircular) && pa.in == 0 && pa.out > 0)
      return MakeError(ErrorCode::kShape, "X has shape {} but {} padding needs a non-empty {} axis", x.ToString(),
                       a.mode == nn::PadMode::kReplicate ? "replicate" : "circular", kAxis[ax]);
  }
  return Status::OK();
}

}  // namespace pad

namespace {

using namespace pad;  // NOLINT: the op's shared slots and attributes

Status InferPad3d(InferShapeContext& ctx) {
  Pad3dAttrs a = Pad3dAttrs::Decode(ctx.attrs());
  Dims x = ctx.InputDims(kX);
  nn::Pad3dShape p;
  if (ctx.HasInput(kPaddings)) {
    // The paddings are values known at run time: the spatial sizes are unknown until then.
    Dims pd = ctx.InputDims(kPaddings);
    if (pd.rank() != 1 || !DimMatch(pd[0], 6))
      return ctx.Fail("Paddings has shape {} but pad3d needs 6 values (left, right, top, bottom, front, back)",
                      pd.ToString());
    Pad3dAttrs unknown = a;
    unknown.paddings.assign(6, 0);
    unknown.mode = nn::PadMode::kConstant;
    PC_RETURN_IF_ERROR(Pad3dShapeOf(x, unknown, {}, p));
    for (nn::PadAxis& axis : p.axis) axis.out = kUnknownDim;
  } else {
    PC_RETURN_IF_ERROR(Pad3dShapeOf(x, a, {}, p));
  }
  ctx.SetOutput(kOut, Pad3dOutDims(p), ctx.InputDType(kX));
  return Status::OK();
}

Status InferPad3dGrad(InferShapeContext& ctx) {
  ctx.ShareDims(kX, kDX);
  return Status::OK();
}

/// The geometry of a run: the Paddings tensor's values when bound, else the attribute.
StatusOr<nn::Pad3dShape> RunShape(KernelContext& ctx, const Pad3dAttrs& a) {
  std::vector<int64_t> values;
  if (const Tensor* t = ctx.InOpt(kPaddings)) {
    PC_ASSIGN_OR_RETURN(values, HostValues<int64_t>(*t, "Paddings"));
    if (values.size() != 6)
      return MakeError(ErrorCode::kShape, "Paddings has {} values but pad3d needs 6", values.size());
  }
  nn::Pad3dShape p;
  PC_RETURN_IF_ERROR(Pad3dShapeOf(ctx.In(kX).dims(), a, values, p));
  return p;
}

template <class T>
Status Pad3dCpu(KernelContext& ctx, const Pad3dAttrs& a) {
  PC_ASSIGN_OR_RETURN(nn::Pad3dShape p, RunShape(ctx, a));
  const Tensor& xt = ctx.In(kX);
  PC_RETURN_IF_ERROR(ctx.ResizeOut(kOut, Pad3dOutDims(p), xt.dtype()));
  const T* x = xt.data<T>();
  T* y = ctx.Out(kOut).data<T>();
  const int64_t in[3] = {p.axis[0].in, p.axis[1].in, p.axis[2].in};
  const int64_t od = p.axis[0].out, oh = p.axis[1].out, ow = p.axis[2].out;
  const T value = static_cast<T>(p.value);
  // One output row per task: (n, c, d, h) rows of w elements, or (n, d, h, w) rows of c channels.
  const int64_t rows = p.channel_last ? p.n * od * oh * ow : p.n * p.c * od * oh;
  const int64_t row_len = p.channel_last ? p.c : ow;
  ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(row_len, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      T* out = y + r * row_len;
      int64_t q = r, n, c = 0, d, h, w = 0;
      if (p.channel_last) {
        w = q % ow, q /= ow;
      }
      h = q % oh, q /= oh;
      d = q % od, q /= od;
      if (!p.channel_last) c = q % p.c, q /= p.c;
      n = q;
      const int64_t sd = nn::PadSource(p.axis[0], p.mode, d), sh = nn::PadSource(p.axis[1], p.mode, h);
      const int64_t sw = p.channel_last ? nn::PadSource(p.axis[2], p.mode, w) : 0;
      if (sd < 0 || sh < 0 || sw < 0) {
        std::fill(out, out + row_len, value);
        continue;
      }
      if (p.channel_last) {
        std::memcpy(out, x + nn::PadOffset(p, n, 0, in, sd, sh, sw), sizeof(T) * p.c);
        continue;
      }
      const T* src = x + nn::PadOffset(p, n, c, in, sd, sh, 0);
      for (int64_t i = 0; i < ow; ++i) {
        int64_t s = nn::PadSource(p.axis[2], p.mode, i);
        out[i] = s < 0 ? value : src[s];
      }
    }
  });
  return Status::OK();
}

template <class T>
Status Pad3dGradCpu(KernelContext& ctx, const Pad3dAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  PC_ASSIGN_OR_RETURN(nn::Pad3dShape p, RunShape(ctx, a));
  const Dims expected = Pad3dOutDims(p);
  if (!(ctx.In(kDOut).dims() == expected))
    return MakeError(ErrorCode::kShape, "Out@GRAD has shape {} but pad3d of X {} produces {}",
                     ctx.In(kDOut).dims().ToString(), ctx.In(kX).dims().ToString(), expected.ToString());
  const T* dy = ctx.In(kDOut).data<T>();
  T* out = dx->data<T>();
  ParallelChunks(dx->numel(), [&](int64_t b, int64_t len) {
    for (int64_t q = b; q < b + len; ++q) out[q] = nn::PadGradAt(p, dy, q);
  });
  return Status::OK();
}

}  // namespace

void RegisterPadOps(OpRegistry& r) {
  r.Add("pad3d")
      .Doc(
          "Pads a 5-D tensor on its depth, height and width axes. constant fills with `value`; reflect mirrors about "
          "the edge elements (each pad smaller than its axis); replicate repeats the edge elements; circular wraps "
          "around. Negative paddings crop.")
      .Input(kX, "Input [N, C, D, H, W] (NCDHW) or [N, D, H, W, C] (NDHWC).")
      .Input(kPaddings, "A 1-D int32 or int64 tensor of 6 values overriding `paddings` (read at run time).",
             kDispensable)
      .Output(kOut, "Output [N, C, D + front + back, H + top + bottom, W + left + right] (or NDHWC).")
      .Attr("paddings", std::vector<int>{0, 0, 0, 0, 0, 0},
            "Pads (left, right, top, bottom, front, back): width, then height, then depth.")
      .Attr("mode", "constant", "constant, reflect, replicate or circular.")
      .AllowedValues({"constant", "reflect", "replicate", "circular"})
      .Attr("value", 0.0f, "The fill value of constant padding.")
      .Attr("data_format", "NCDHW", "Layout of X and Out.")
      .AllowedValues({"NCDHW", "NDHWC"})
      .InferShape(InferPad3d)
      .OutputDimsFromKernel({kPaddings})
      .NoGradInput(kPaddings)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(Pad3dCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(Pad3dCpu<double>))
      .Kernel(DeviceType::kCPU, DType::kInt32, MakeKernel(Pad3dCpu<int32_t>))
      .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernel(Pad3dCpu<int64_t>));

  r.Add("pad3d_grad")
      .GradOf("pad3d")
      .Doc("Gradient of pad3d: each X@GRAD element sums Out@GRAD over the output positions that read it.")
      .Input(kX, "The forward X (for its shape).")
      .Input(kPaddings, "The forward Paddings, when bound.", kDispensable)
      .Input(kDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferPad3dGrad)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(Pad3dGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(Pad3dGradCpu<double>));
}

}  // namespace paddlec::ops
