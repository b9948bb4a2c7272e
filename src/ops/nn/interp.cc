// nearest_interp_v2, bilinear_interp_v2 and their gradients: 2-D resizing of NCHW / NHWC tensors with
// PaddlePaddle's attributes (align_corners, align_mode, scale or out_h / out_w) and its size inputs
// (OutSize, SizeTensor, Scale), which are read at run time and then size the output. The source
// coordinates are interp_index.h's, shared with the CUDA kernels.
#include <cmath>

#include "common/cpu_kernels.h"
#include "common/host_values.h"
#include "nn/interp_slots.h"
#include "nn/nn.h"

namespace paddlec::ops {

namespace interp {

Status InterpShapeOf(const Dims& x, const InterpAttrs& a, const InterpValues& v, const Dims* out_dims,
                     nn::InterpShape& s) {
  const char* layout = a.channel_last ? "NHWC" : "NCHW";
  if (x.rank() != 4)
    return MakeError(ErrorCode::kShape, "X has shape {} (rank {}) but {} needs a 4-D {} input", x.ToString(), x.rank(),
                     a.op, layout);
  s.n = x[0];
  s.c = a.channel_last ? x[3] : x[1];
  s.nearest = a.nearest;
  s.align_corners = a.align_corners;
  s.half_pixel = !a.nearest && a.align_mode == 0 && !a.align_corners;
  s.channel_last = a.channel_last;
  const int64_t in[2] = {a.channel_last ? x[1] : x[2], a.channel_last ? x[2] : x[3]};
  double scale[2] = {-1, -1};
  int64_t out[2] = {a.out_h, a.out_w};
  bool valued = false;  // the sizes come from a tensor's values (-1 while they are unknown)
  if (!v.size_tensor.empty()) {
    if (v.size_tensor.size() != 2)
      return MakeError(ErrorCode::kShape, "SizeTensor has {} tensors but {} needs 2 (height, width)",
                       v.size_tensor.size(), a.op);
    out[0] = v.size_tensor[0];
    out[1] = v.size_tensor[1];
    valued = true;
  } else {
    std::vector<double> sc(a.scale.begin(), a.scale.end());
    if (v.scale_bound) {
      sc = v.scale;
      for (double f : sc)
        if (!(f > 0))
          return MakeError(ErrorCode::kInvalidArgument, "Scale holds {} but {} needs positive scales", f, a.op);
    }
    if (sc.size() > 2)
      return MakeError(ErrorCode::kShape, "the scale has {} values but {} needs 1 or 2 (height, width)", sc.size(),
                       a.op);
    if (v.scale_bound && sc.empty()) {  // compile time: the scale is a value
      out[0] = out[1] = kUnknownDim;
      valued = true;
    } else if (!sc.empty() && sc[0] > 0 && sc.back() > 0) {
      scale[0] = sc[0];
      scale[1] = sc.back();
      for (int ax = 0; ax < 2; ++ax)
        out[ax] = in[ax] < 0 ? kUnknownDim : static_cast<int64_t>(static_cast<double>(in[ax]) * scale[ax]);
      valued = true;
    }
    if (!v.out_size.empty()) {
      if (v.out_size.size() != 2)
        return MakeError(ErrorCode::kShape, "OutSize has {} values but {} needs 2 (height, width)", v.out_size.size(),
                         a.op);
      out[0] = v.out_size[0];
      out[1] = v.out_size[1];
      valued = true;
    }
  }
  if (out_dims != nullptr) {
    out[0] = (*out_dims)[a.channel_last ? 1 : 2];
    out[1] = (*out_dims)[a.channel_last ? 2 : 3];
  }
  for (int ax = 0; ax < 2; ++ax) {
    nn::InterpAxis& ia = s.axis[ax];
    ia.in = in[ax];
    ia.out = out[ax];
    ia.ratio = 0;
    if (ia.out == 0 || ia.out < kUnknownDim || (ia.out == kUnknownDim && !valued))
      return MakeError(ErrorCode::kShape,
                       "X has shape {} but the output {} is {}: give {} a positive out_h / out_w, scale, OutSize or "
                       "SizeTensor",
                       x.ToString(), ax == 0 ? "height" : "width", ia.out, a.op);
    if (ia.in < 0 || ia.out <= 1) continue;
    // PaddlePaddle's ratio, in float: (in - 1) / (out - 1) with aligned corners, else 1 / scale when a
    // scale was given, else in / out.
    const float unaligned =
        scale[ax] > 0 ? static_cast<float>(1.0 / scale[ax]) : static_cast<float>(ia.in) / static_cast<float>(ia.out);
    ia.ratio = a.align_corners ? static_cast<float>(ia.in - 1) / static_cast<float>(ia.out - 1) : unaligned;
  }
  return Status::OK();
}

}  // namespace interp

namespace {

using namespace interp;  // NOLINT: the ops' shared slots and attributes

Status InferInterp(InferShapeContext& ctx) {
  InterpAttrs a = InterpAttrs::Decode(ctx.attrs());
  Dims x = ctx.InputDims(kX);
  // Values of bound size inputs are known at run time only; their dims are checked here.
  InterpValues v;
  if (ctx.HasInput(kSizeTensor)) {
    if (ctx.NumInputs(kSizeTensor) != 2)
      return ctx.Fail("SizeTensor has {} tensors but {} needs 2 (height, width)", ctx.NumInputs(kSizeTensor), a.op);
    v.size_tensor = {kUnknownDim, kUnknownDim};
  }
  if (ctx.HasInput(kOutSize)) {
    Dims d = ctx.InputDims(kOutSize);
    if (d.rank() != 1 || !DimMatch(d[0], 2))
      return ctx.Fail("OutSize has shape {} but {} needs 2 values (height, width)", d.ToString(), a.op);
    v.out_size = {kUnknownDim, kUnknownDim};
  }
  if (ctx.HasInput(kScale)) {
    Dims d = ctx.InputDims(kScale);
    if (d.rank() > 1 || (d.rank() == 1 && d[0] >= 0 && d[0] != 1 && d[0] != 2))
      return ctx.Fail("Scale has shape {} but {} needs 1 or 2 values", d.ToString(), a.op);
    v.scale_bound = true;
  }
  nn::InterpShape s;
  PC_RETURN_IF_ERROR(InterpShapeOf(x, a, v, nullptr, s));
  ctx.SetOutput(kOut, InterpOutDims(s), ctx.InputDType(kX));
  return Status::OK();
}

Status InferInterpGrad(InferShapeContext& ctx) {
  ctx.ShareDims(kX, kDX);
  return Status::OK();
}

/// The bound size inputs' values.
StatusOr<InterpValues> RunValues(const KernelContext& ctx) {
  InterpValues v;
  for (int i = 0; i < ctx.NumIn(kSizeTensor); ++i) {
    const Tensor* t = ctx.InOpt(kSizeTensor, i);
    if (t == nullptr) continue;
    PC_ASSIGN_OR_RETURN(std::vector<int64_t> one, HostValues<int64_t>(*t, "SizeTensor"));
    if (one.size() != 1)
      return MakeError(ErrorCode::kShape, "SizeTensor {} has {} values but must hold one", i, one.size());
    v.size_tensor.push_back(one[0]);
  }
  if (const Tensor* t = ctx.InOpt(kOutSize)) {
    PC_ASSIGN_OR_RETURN(v.out_size, HostValues<int64_t>(*t, "OutSize"));
  }
  if (const Tensor* t = ctx.InOpt(kScale)) {
    PC_ASSIGN_OR_RETURN(v.scale, HostValues<double>(*t, "Scale"));
    v.scale_bound = true;
  }
  return v;
}

template <class T>
Status InterpCpu(KernelContext& ctx, const InterpAttrs& a) {
  PC_ASSIGN_OR_RETURN(InterpValues v, RunValues(ctx));
  const Tensor& xt = ctx.In(kX);
  nn::InterpShape s;
  PC_RETURN_IF_ERROR(InterpShapeOf(xt.dims(), a, v, nullptr, s));
  PC_RETURN_IF_ERROR(ctx.ResizeOut(kOut, InterpOutDims(s), xt.dtype()));
  const nn::InterpAxis &ah = s.axis[0], &aw = s.axis[1];
  // The taps of every output row and column, once per run.
  std::vector<nn::InterpTaps> th(ah.out), tw(aw.out);
  for (int64_t o = 0; o < ah.out; ++o) th[o] = nn::InterpSource(s, ah, o);
  for (int64_t o = 0; o < aw.out; ++o) tw[o] = nn::InterpSource(s, aw, o);
  const T* x = xt.data<T>();
  T* y = ctx.Out(kOut).data<T>();
  const int64_t rows = s.n * ah.out * (s.channel_last ? 1 : s.c);
  const int64_t row_len = aw.out * (s.channel_last ? s.c : 1);
  ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(row_len, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      // NCHW rows are (n, c, oh); NHWC rows are (n, oh), each holding out_w * c values.
      const int64_t oh = r % ah.out, n = s.channel_last ? r / ah.out : r / ah.out / s.c;
      const int64_t c0 = s.channel_last ? 0 : (r / ah.out) % s.c, channels = s.channel_last ? s.c : 1;
      const nn::InterpTaps& h = th[oh];
      T* out = y + r * row_len;
      for (int64_t ow = 0; ow < aw.out; ++ow) {
        const nn::InterpTaps& w = tw[ow];
        for (int64_t k = 0; k < channels; ++k) {
          const int64_t c = c0 + k;
          auto at = [&](int64_t ih, int64_t iw) { return x[nn::InterpOffset(s, n, c, ah.in, aw.in, ih, iw)]; };
          out[ow * channels + k] =
              s.nearest ? at(h.lo, w.lo)
                        : nn::InterpBlend(at(h.lo, w.lo), at(h.hi, w.lo), at(h.lo, w.hi), at(h.hi, w.hi), h, w);
        }
      }
    }
  });
  return Status::OK();
}

template <class T>
Status InterpGradCpu(KernelContext& ctx, const InterpAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  PC_ASSIGN_OR_RETURN(InterpValues v, RunValues(ctx));
  const Tensor& dy = ctx.In(kDOut);
  nn::InterpShape s;
  PC_RETURN_IF_ERROR(InterpShapeOf(ctx.In(kX).dims(), a, v, &dy.dims(), s));
  if (!(dy.dims() == InterpOutDims(s)))
    return MakeError(ErrorCode::kShape, "Out@GRAD has shape {} but {} of X {} produces {}", dy.dims().ToString(), a.op,
                     ctx.In(kX).dims().ToString(), InterpOutDims(s).ToString());
  const T* g = dy.data<T>();
  T* out = dx->data<T>();
  ParallelChunks(dx->numel(), [&](int64_t b, int64_t len) {
    for (int64_t q = b; q < b + len; ++q) out[q] = nn::InterpGradAt(s, g, q);
  });
  return Status::OK();
}

void AddInterpOp(OpRegistry& r, const std::string& type, const std::string& method, const std::string& doc) {
  r.Add(type)
      .Doc(doc)
      .Input(kX, "Input [N, C, H, W] (NCHW) or [N, H, W, C] (NHWC).")
      .Input(kOutSize, "A 1-D int tensor (height, width) overriding the output size (read at run time).", kDispensable)
      .Input(kSizeTensor, "Two 1-element int tensors (height, width) overriding everything else (read at run time).",
             kDuplicable | kDispensable)
      .Input(kScale, "A 1-D float tensor of 1 or 2 scales overriding the `scale` attribute (read at run time).",
             kDispensable)
      .Output(kOut, "Output [N, C, out_h, out_w] (or NHWC).")
      .Attr("data_layout", "NCHW", "Layout of X and Out.")
      .AllowedValues({"NCHW", "NHWC"})
      .Attr("out_d", 0, "Output depth of the 3-D interpolations; unused here.")
      .Attr("out_h", 0, "Output height, when neither a scale nor a size tensor is given.")
      .Attr("out_w", 0, "Output width, when neither a scale nor a size tensor is given.")
      .Attr("scale", std::vector<float>{},
            "Scales (height, width; or one for both): out = floor(in * scale) when positive, and the sampling "
            "ratio is 1 / scale.")
      .Attr("interp_method", "bilinear", "PaddlePaddle's method name; the op type decides (" + method + ").")
      .Attr("align_corners", true,
            "Align the centres of the corner pixels: ratio (in - 1) / (out - 1). Otherwise the ratio is 1 / scale "
            "or in / out.")
      .Attr("align_mode", 1,
            "Without align_corners: 0 samples bilinearly at pixel centres ((o + 0.5) * ratio - 0.5), 1 at o * "
            "ratio. Nearest always uses floor(o * ratio).")
      .AllowedInts({0, 1})
      .InferShape(InferInterp)
      .OutputDimsFromKernel({kOutSize, kSizeTensor, kScale})
      .NoGradInput(kOutSize)
      .NoGradInput(kSizeTensor)
      .NoGradInput(kScale)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(InterpCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(InterpCpu<double>));

  r.Add(type + "_grad")
      .GradOf(type)
      .Doc("Gradient of " + type + ": each X@GRAD element sums Out@GRAD over the outputs sampling it, weighted.")
      .Input(kX, "The forward X (for its shape).")
      .Input(kOutSize, "The forward OutSize, when bound.", kDispensable)
      .Input(kSizeTensor, "The forward SizeTensor, when bound.", kDuplicable | kDispensable)
      .Input(kScale, "The forward Scale, when bound.", kDispensable)
      .Input(kDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferInterpGrad)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(InterpGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(InterpGradCpu<double>));
}

}  // namespace

void RegisterInterpOps(OpRegistry& r) {
  AddInterpOp(r, "nearest_interp_v2", "nearest",
              "Nearest-neighbour resizing of the two spatial axes: Out[n, c, y, x] = X[n, c, src(y), src(x)] with "
              "src(o) = floor(o * ratio), or round(o * ratio) with align_corners.");
  AddInterpOp(r, "bilinear_interp_v2", "bilinear",
              "Bilinear resizing of the two spatial axes: each output pixel blends the four input pixels around its "
              "source point o * ratio (align_mode 1 or align_corners) or (o + 0.5) * ratio - 0.5 (align_mode 0), "
              "clamped to the input.");
}

}  // namespace paddlec::ops
