// conv2d, depthwise_conv2d, conv2d_transpose and their gradients: 2-D convolutions over NCHW tensors
// with PaddlePaddle's attributes (depthwise_conv2d is PaddlePaddle's name for a conv2d with groups =
// input channels; one kernel serves both, oneDNN picking its depthwise implementation from the
// geometry), and paddlec's inference fusion fused_conv2d_bn_act.
//
// float32 runs on paddlec's own kernels where they beat oneDNN 2.6 on AVX2 machines: Winograd
// (F(2x2, 3x3) or F(4x4, 3x3)) for 3x3 stride-1 convolutions of 8+ channels between blocked
// tensors and of 32+ on plain NCHW ones, in all three directions (winograd.h), and direct kernels
// for inputs of 1-4 channels, forward and filter gradient (conv_direct.h); everything else on
// oneDNN (conv_onednn.h). PADDLEC_WINOGRAD=off keeps oneDNN throughout. float64 runs direct loops,
// which exist for precise gradient checks.
// oneDNN's layout choice, measured on this machine (Zen5, AVX-512; ms per call, batch 64,
// 3x3, pad 1; "blocked" = oneDNN's own layouts including the reorders on every call; each cell is
// 1 thread (range over 4 runs on a quiet host) / 2 threads (the one run the shared host left undisturbed)):
//                           forward           backward-data     backward-weights
//   1->32 28x28   plain     0.32-0.33 / 0.22  0.43-0.46 / 0.22  0.80-0.82 / 0.68
//                 blocked   0.34-0.37 / 0.17  2.36-2.50 / 1.16  0.32-0.33 / 0.18
//   32->64 14x14  plain     3.61-3.65 / 1.87  4.20-4.33 / 2.27  3.75-3.85 / 1.89
//                 blocked   2.13-2.19 / 1.09  2.12-2.27 / 1.09  2.16-2.36 / 1.11
// Blocked wins everywhere except backward-data with one input channel (its diff_src would be padded to
// 16 channels); a wider sweep (3->16, 8->8, 16->16, 64->128, 20->24 5x5) put that boundary between 3 and
// 8 channels (3 channels: blocked 0.82 vs plain 0.70 ms), hence DefaultConvLayouts(). The benchmark is
// the skipped test case "conv2d benchmark" in conv_test.cc (run it with --no-skip).
// Depthwise convolutions (one input and one output channel per group) are the exception to that
// exception: oneDNN's jit_dw kernels exist for all three directions in the blocked layout only, and the
// plain layout falls back to a GEMM per channel. CPU ms per call on one thread, 3x3, pad 1, forward /
// backward-data / backward-weights ("depthwise_conv2d benchmark" in conv_test.cc):
//   c=256 28x28 batch 1    plain 0.97 / 1.49 / 1.46     blocked 0.098 / 0.104 / 0.082
//   c=256 28x28 batch 64   plain 67.4 / 102 / 103       blocked 19.7 / 21.0 / 19.7
//   c=512 14x14 s2 b 64    plain 17.5 / 27.5 / 19.1     blocked 8.2 / 8.4 / 7.6
// A direct NCHW kernel (a scaled-row sum per tap, no reorders) measured 0.46 ms and 29.4 ms on the first
// two, slower than oneDNN's blocked path reorders included, so depthwise_conv2d runs on oneDNN.
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "common/cpu_kernels.h"
#include "nn/conv_direct.h"
#include "nn/conv_onednn.h"
#include "nn/conv_slots.h"
#include "nn/nn.h"
#include "nn/winograd.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/runtime/onednn.h"

namespace paddlec::ops {
namespace {

using namespace conv;  // NOLINT: the family's shared slots and attributes
using nn::ConvGeometry;
using nn::FusedPoolAttrs;
using nn::Window2d;

/// oneDNN fusion attributes PaddlePaddle's inference passes may set; paddlec runs the unfused ops,
/// so a program asking for a fusion is rejected rather than silently computed without it.
Status CheckNoFusion(const AttrReader& a) {
  for (const char* name : {"fuse_relu", "fuse_relu_before_depthwise_conv", "fuse_residual_connection", "use_addto"})
    if (a.Get<bool>(name))
      return MakeError(ErrorCode::kUnimplemented,
                       "attribute '{}' = true asks for a fused oneDNN kernel, which paddlec does not implement; "
                       "express the fused operation as separate ops",
                       name);
  if (std::string act = a.Get<std::string>("fuse_activation"); !act.empty())
    return MakeError(ErrorCode::kUnimplemented,
                     "attribute 'fuse_activation' = '{}' asks for a fused oneDNN kernel, which paddlec does not "
                     "implement; apply the activation as a separate op",
                     act);
  return Status::OK();
}

Status InferConv(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(CheckNoFusion(ctx.attrs()));
  Dims x = ctx.InputDims(kInput), f = ctx.InputDims(kFilter);
  if (ctx.InputDType(kInput) != ctx.InputDType(kFilter))
    return ctx.Fail("Input is {} but Filter is {}: conv2d needs both of one dtype", DTypeName(ctx.InputDType(kInput)),
                    DTypeName(ctx.InputDType(kFilter)));
  ConvGeometry g;
  PC_RETURN_IF_ERROR(nn::ConvGeometryOf(x, f, ConvAttrs::Decode(ctx.attrs()), g));
  ctx.SetOutput(kOutput, Dims{g.n, g.o, g.w.out[0], g.w.out[1]}, ctx.InputDType(kInput));
  return Status::OK();
}

Status InferConvGrad(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(CheckNoFusion(ctx.attrs()));
  Dims x = ctx.InputDims(kInput), f = ctx.InputDims(kFilter), dy = ctx.InputDims(kDOutput);
  ConvGeometry g;
  PC_RETURN_IF_ERROR(nn::ConvGeometryOf(x, f, ConvAttrs::Decode(ctx.attrs()), g));
  Dims expected{g.n, g.o, g.w.out[0], g.w.out[1]};
  if (!DimsMatch(dy, expected))
    return ctx.Fail("Output@GRAD has shape {} but conv2d of Input {} and Filter {} produces {}", dy.ToString(),
                    x.ToString(), f.ToString(), expected.ToString());
  ctx.ShareDims(kInput, kDInput);
  ctx.ShareDims(kFilter, kDFilter);
  return Status::OK();
}

// ---- float64: direct loops ------------------------------------------------------------------

/// Calls fn(ih, iw, kh, kw) for every filter tap of output pixel (oh, ow) that lands inside the input.
template <class F>
inline void ForEachTap(const Window2d& w, int64_t oh, int64_t ow, F&& fn) {
  for (int64_t kh = 0; kh < w.kernel[0]; ++kh) {
    int64_t ih = oh * w.stride[0] - w.pad[0] + kh * w.dilation[0];
    if (ih < 0 || ih >= w.in[0]) continue;
    for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
      int64_t iw = ow * w.stride[1] - w.pad[2] + kw * w.dilation[1];
      if (iw >= 0 && iw < w.in[1]) fn(ih, iw, kh, kw);
    }
  }
}

template <class T>
void DirectForward(const ConvGeometry& g, const T* x, const T* f, T* y) {
  const Window2d& w = g.w;
  const int64_t cg = g.c_per_group(), og = g.o_per_group(), hw = w.in[0] * w.in[1], ohw = w.out[0] * w.out[1];
  const int64_t ksize = w.kernel[0] * w.kernel[1];
  ParallelFor(g.n * g.o, 1, [&](int64_t b, int64_t e) {
    for (int64_t no = b; no < e; ++no) {
      int64_t n = no / g.o, o = no % g.o, grp = o / og;
      const T* xg = x + (n * g.c + grp * cg) * hw;
      const T* fo = f + o * cg * ksize;
      T* yo = y + no * ohw;
      for (int64_t oh = 0; oh < w.out[0]; ++oh)
        for (int64_t ow = 0; ow < w.out[1]; ++ow) {
          T acc = 0;
          ForEachTap(w, oh, ow, [&](int64_t ih, int64_t iw, int64_t kh, int64_t kw) {
            for (int64_t c = 0; c < cg; ++c)
              acc += xg[c * hw + ih * w.in[1] + iw] * fo[(c * w.kernel[0] + kh) * w.kernel[1] + kw];
          });
          yo[oh * w.out[1] + ow] = acc;
        }
    }
  });
}

template <class T>
void DirectBackwardData(const ConvGeometry& g, const T* f, const T* dy, T* dx) {
  const Window2d& w = g.w;
  const int64_t cg = g.c_per_group(), og = g.o_per_group(), hw = w.in[0] * w.in[1], ohw = w.out[0] * w.out[1];
  const int64_t ksize = w.kernel[0] * w.kernel[1];
  // One (image, group) per task: tasks write disjoint channel ranges, in a fixed order.
  ParallelFor(g.n * g.groups, 1, [&](int64_t b, int64_t e) {
    for (int64_t ng = b; ng < e; ++ng) {
      int64_t n = ng / g.groups, grp = ng % g.groups;
      T* dxg = dx + (n * g.c + grp * cg) * hw;
      std::fill(dxg, dxg + cg * hw, T(0));
      for (int64_t o = grp * og; o < (grp + 1) * og; ++o) {
        const T* dyo = dy + (n * g.o + o) * ohw;
        const T* fo = f + o * cg * ksize;
        for (int64_t oh = 0; oh < w.out[0]; ++oh)
          for (int64_t ow = 0; ow < w.out[1]; ++ow) {
            T d = dyo[oh * w.out[1] + ow];
            ForEachTap(w, oh, ow, [&](int64_t ih, int64_t iw, int64_t kh, int64_t kw) {
              for (int64_t c = 0; c < cg; ++c)
                dxg[c * hw + ih * w.in[1] + iw] += d * fo[(c * w.kernel[0] + kh) * w.kernel[1] + kw];
            });
          }
      }
    }
  });
}

template <class T>
void DirectBackwardWeights(const ConvGeometry& g, const T* x, const T* dy, T* df) {
  const Window2d& w = g.w;
  const int64_t cg = g.c_per_group(), og = g.o_per_group(), hw = w.in[0] * w.in[1], ohw = w.out[0] * w.out[1];
  const int64_t ksize = w.kernel[0] * w.kernel[1];
  ParallelFor(g.o, 1, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      int64_t grp = o / og;
      T* dfo = df + o * cg * ksize;
      std::fill(dfo, dfo + cg * ksize, T(0));
      for (int64_t n = 0; n < g.n; ++n) {
        const T* xg = x + (n * g.c + grp * cg) * hw;
        const T* dyo = dy + (n * g.o + o) * ohw;
        for (int64_t oh = 0; oh < w.out[0]; ++oh)
          for (int64_t ow = 0; ow < w.out[1]; ++ow) {
            T d = dyo[oh * w.out[1] + ow];
            ForEachTap(w, oh, ow, [&](int64_t ih, int64_t iw, int64_t kh, int64_t kw) {
              for (int64_t c = 0; c < cg; ++c)
                dfo[(c * w.kernel[0] + kh) * w.kernel[1] + kw] += d * xg[c * hw + ih * w.in[1] + iw];
            });
          }
      }
    }
  });
}

// ---- Kernels --------------------------------------------------------------------------------

/// Sizes of the op's tensors (validated by shape inference before the kernel runs).
ConvGeometry RunGeometry(const KernelContext& ctx, const ConvAttrs& attrs) {
  ConvGeometry g;
  Status st = nn::ConvGeometryOf(ctx.In(kInput).dims(), ctx.In(kFilter).dims(), attrs, g);
  (void)st;  // shape inference already reported any error
  return g;
}

/// The layout conv2d's blocked_input / blocked_output attribute names for an activation.
nn::ActivationLayout Layout(bool blocked) { return {blocked ? nn::ActivationBlockChannels() : 0}; }

/// An error unless `a`'s blocked activations can be: float32 (the float64 kernels compute NCHW
/// only) and whole channel blocks. The layout pass sets the attributes only then; a program written
/// with them otherwise would have the kernels read past the tensors.
template <class T>
Status CheckLayout(const ConvGeometry& g, const ConvAttrs& a) {
  if (!a.blocked_input && !a.blocked_output) return Status::OK();
  if (!std::is_same_v<T, float>)
    return MakeError(ErrorCode::kUnimplemented,
                     "blocked_input and blocked_output (oneDNN's blocked layout) need float32, not float64");
  return nn::CheckBlockedChannels(g, a.blocked_input, a.blocked_output);
}

void ZeroFill(Tensor* t) {
  if (t != nullptr && t->nbytes() > 0) std::memset(t->raw_data(), 0, t->nbytes());
}

/// The raw parameters a convolution last transformed (and, fused, folded and reordered), kept to
/// tell whether they changed: inference runs the same weights step after step, and redoing that
/// work costs far more than checking. The check compares the buffers' content stamps
/// (runtime::Buffer::Stamp), nothing else, when every part has one; memory paddlec does not own
/// (stamp 0, a NumPy array fed without a copy) is compared value by value with a copy kept of it,
/// one read of each.
template <class T>
class ParamSnapshot {
 public:
  /// Whether `parts` (nullptr for an absent one) hold exactly what the last call saw; remembers them
  /// when they do not.
  bool Same(std::initializer_list<const Tensor*> parts) {
    const bool seen = valid_;
    const bool same = Compare(parts);
    changed_ = changed_ || (seen && !same);
    return same;
  }
  /// Whether a call has seen other parts than the call before it: parameters that change between
  /// runs, as a training step's do.
  bool changed() const { return changed_; }

 private:
  bool Compare(std::initializer_list<const Tensor*> parts) {
    now_.clear();
    bool stamped = true;
    for (const Tensor* t : parts) {
      now_.push_back(t ? Seen{t->data<T>(), t->numel(), t->stamp()} : Seen{});
      stamped = stamped && (t == nullptr || now_.back().stamp != 0);
    }
    const bool same_parts = valid_ && now_ == parts_;
    std::swap(parts_, now_);  // both keep their capacity: no allocation after the first call
    valid_ = true;
    if (stamped) {
      values_.clear();
      has_values_ = false;
      return same_parts;
    }
    int64_t total = 0;
    for (const Seen& p : parts_) total += p.n;
    bool same = has_values_ && static_cast<int64_t>(values_.size()) == total;
    for (int64_t at = 0; const Seen& p : parts_) {
      if (p.data == nullptr) continue;
      same = same && std::memcmp(values_.data() + at, p.data, p.n * sizeof(T)) == 0;
      at += p.n;
    }
    has_values_ = true;
    if (same) return true;
    values_.resize(total);
    for (int64_t at = 0; const Seen& p : parts_) {
      if (p.data == nullptr) continue;
      std::memcpy(values_.data() + at, p.data, p.n * sizeof(T));
      at += p.n;
    }
    return false;
  }

  struct Seen {
    const T* data = nullptr;
    int64_t n = 0;
    uint64_t stamp = 0;
    friend bool operator==(const Seen&, const Seen&) = default;
  };
  std::vector<Seen> parts_, now_;
  bool valid_ = false, changed_ = false;
  std::vector<T> values_;  // without stamps: the values themselves
  bool has_values_ = false;
};

template <class T>
class ConvKernel final : public OpKernel {
 public:
  explicit ConvKernel(const KernelInit& init) : attrs_(ConvAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    ConvGeometry g = RunGeometry(ctx, attrs_);
    const T* x = ctx.In(kInput).data<T>();
    const T* f = ctx.In(kFilter).data<T>();
    Tensor& out = ctx.Out(kOutput);
    if (g.empty()) {
      ZeroFill(&out);
      return Status::OK();
    }
    PC_RETURN_IF_ERROR(CheckLayout<T>(g, attrs_));
    if constexpr (std::is_same_v<T, float>) {
      const nn::ActivationLayout in_layout = Layout(attrs_.blocked_input), out_layout = Layout(attrs_.blocked_output);
      if (!filter_.Same({&ctx.In(kFilter)})) wino_ready_ = small_ready_ = false;
      // A filter that changes between calls (training) is transformed at every call, where that
      // pays (nn::WinogradTrainingPaysOff).
      if (nn::WinogradEnabled() && nn::WinogradPaysOff(g, in_layout) &&
          (!filter_.changed() || nn::WinogradTrainingPaysOff())) {
        if (!wino_ready_) wino_.SetFilter(g, f, 0, /*per_call=*/filter_.changed());
        wino_ready_ = true;
        wino_.Forward(g, x, in_layout, out.data<float>(), out_layout, {}, nn::ConvThreads(g));
        return Status::OK();
      }
      if (nn::WinogradEnabled() && nn::SmallConvFits(g) && !attrs_.blocked_input) {
        if (!small_ready_) small_.SetFilter(g, f);
        small_ready_ = true;
        small_.Forward(g, x, out.data<float>(), out_layout, {}, nn::ConvThreads(g));
        return Status::OK();
      }
      return conv_.Forward(ctx.device_as<runtime::CpuContext>().onednn(), g, x, f, out.data<float>(), nullptr, false,
                           nullptr, {.blocked_src = attrs_.blocked_input, .blocked_dst = attrs_.blocked_output});
    } else {
      DirectForward(g, x, f, out.data<T>());
      return Status::OK();
    }
  }

 private:
  ConvAttrs attrs_;
  nn::OneDnnConv conv_;
  nn::WinogradConv wino_;
  nn::SmallChannelConv small_;
  // The filter last seen, and whether each own kernel holds its transform (cleared together when
  // it changes, as in FusedConvKernel).
  ParamSnapshot<T> filter_;
  bool wino_ready_ = false, small_ready_ = false;
};

template <class T>
class ConvGradKernel final : public OpKernel {
 public:
  explicit ConvGradKernel(const KernelInit& init) : attrs_(ConvAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    ConvGeometry g = RunGeometry(ctx, attrs_);
    const T* x = ctx.In(kInput).data<T>();
    const T* f = ctx.In(kFilter).data<T>();
    const T* dy = ctx.In(kDOutput).data<T>();
    Tensor* dx = ctx.OutOpt(kDInput);
    Tensor* df = ctx.OutOpt(kDFilter);
    if (g.empty()) {
      ZeroFill(dx);
      ZeroFill(df);
      return Status::OK();
    }
    PC_RETURN_IF_ERROR(CheckLayout<T>(g, attrs_));
    if constexpr (std::is_same_v<T, float>) {
      runtime::OneDnnHandles& h = ctx.device_as<runtime::CpuContext>().onednn();
      const nn::ActivationLayout x_layout = Layout(attrs_.blocked_input), y_layout = Layout(attrs_.blocked_output);
      const bool winograd = nn::WinogradEnabled() && nn::WinogradBackwardPaysOff(g);
      const bool wino_dx = dx != nullptr && winograd;
      const bool wino_df = df != nullptr && winograd && nn::WinogradFilterGradientPaysOff(g);
      if (wino_dx) {
        wino_.SetFilterForBackwardData(g, f);
        wino_.BackwardData(g, dy, y_layout, dx->data<float>(), x_layout, nn::ConvThreads(g));
      }
      // An image's first layer (few input channels): its filter gradient on conv_direct.h's kernel.
      const bool small_df =
          df != nullptr && !winograd && nn::WinogradEnabled() && nn::SmallConvFits(g) && !attrs_.blocked_input;
      if (wino_df) nn::WinogradBackwardWeights(g, x, x_layout, dy, y_layout, df->data<float>(), nn::ConvThreads(g));
      if (small_df) nn::SmallConvBackwardWeights(g, x, dy, y_layout, df->data<float>(), nn::ConvThreads(g));
      return conv_.Backward(h, g, x, f, dy, dx != nullptr && !wino_dx ? dx->data<float>() : nullptr,
                            df != nullptr && !wino_df && !small_df ? df->data<float>() : nullptr,
                            {.blocked_src = attrs_.blocked_input, .blocked_dst = attrs_.blocked_output});
    } else {
      if (dx) DirectBackwardData(g, f, dy, dx->data<T>());
      if (df) DirectBackwardWeights(g, x, dy, df->data<T>());
    }
    return Status::OK();
  }

 private:
  ConvAttrs attrs_;
  nn::OneDnnConv conv_;
  nn::WinogradConv wino_;
};

// ---- conv2d_transpose ----------------------------------------------------------------------
//
// A transposed convolution is the backward-data pass of the convolution it transposes (g, whose input
// is our output): Output = conv_backward_data(Filter, Input), Input@GRAD = conv(Output@GRAD, Filter) and
// Filter@GRAD = conv_backward_weights(src = Output@GRAD, diff_dst = Input). PaddlePaddle's transposed
// filter [C, O / groups, KH, KW] is, byte for byte, that convolution's filter [O' = C, C' / groups = O /
// groups, KH, KW], so the same oneDNN primitives (and direct loops) serve without copies.

Status CheckNoTransposeBias(const InferShapeContext& ctx, InSlot bias) {
  if (ctx.HasInput(bias) && !ctx.InputName(bias).empty())
    return MakeError(ErrorCode::kUnimplemented,
                     "input Bias (bound to '{}') is PaddlePaddle's oneDNN-only fused bias, which paddlec does not "
                     "implement; add the bias with a following elementwise_add",
                     ctx.InputName(bias));
  return Status::OK();
}

Status InferConvTranspose(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(CheckNoFusion(ctx.attrs()));
  PC_RETURN_IF_ERROR(CheckNoTransposeBias(ctx, kTBias));
  if (ctx.InputDType(kInput) != ctx.InputDType(kFilter))
    return ctx.Fail("Input is {} but Filter is {}: conv2d_transpose needs both of one dtype",
                    DTypeName(ctx.InputDType(kInput)), DTypeName(ctx.InputDType(kFilter)));
  ConvGeometry g;
  PC_RETURN_IF_ERROR(
      nn::ConvTransposeGeometryOf(ctx.InputDims(kInput), ctx.InputDims(kFilter), ConvAttrs::Decode(ctx.attrs()), g));
  ctx.SetOutput(kOutput, Dims{g.n, g.c, g.w.in[0], g.w.in[1]}, ctx.InputDType(kInput));
  return Status::OK();
}

Status InferConvTransposeGrad(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(CheckNoTransposeBias(ctx, kTGBias));
  Dims x = ctx.InputDims(kInput), f = ctx.InputDims(kFilter), dy = ctx.InputDims(kDOutput);
  ConvGeometry g;
  PC_RETURN_IF_ERROR(nn::ConvTransposeGeometryOf(x, f, ConvAttrs::Decode(ctx.attrs()), g));
  Dims expected{g.n, g.c, g.w.in[0], g.w.in[1]};
  if (!DimsMatch(dy, expected))
    return ctx.Fail("Output@GRAD has shape {} but conv2d_transpose of Input {} and Filter {} produces {}",
                    dy.ToString(), x.ToString(), f.ToString(), expected.ToString());
  ctx.ShareDims(kInput, kDInput);
  ctx.ShareDims(kFilter, kDFilter);
  return Status::OK();
}

ConvGeometry RunTransposeGeometry(const KernelContext& ctx, const ConvAttrs& attrs) {
  ConvGeometry g;
  Status st = nn::ConvTransposeGeometryOf(ctx.In(kInput).dims(), ctx.In(kFilter).dims(), attrs, g);
  (void)st;  // shape inference already reported any error
  return g;
}

template <class T>
class ConvTransposeKernel final : public OpKernel {
 public:
  explicit ConvTransposeKernel(const KernelInit& init) : attrs_(ConvAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    ConvGeometry g = RunTransposeGeometry(ctx, attrs_);
    const T* x = ctx.In(kInput).data<T>();
    const T* f = ctx.In(kFilter).data<T>();
    Tensor& out = ctx.Out(kOutput);
    if (g.empty()) {
      ZeroFill(&out);
      return Status::OK();
    }
    if constexpr (std::is_same_v<T, float>) {
      return conv_.BackwardData(ctx.device_as<runtime::CpuContext>().onednn(), g, f, x, out.data<float>());
    } else {
      DirectBackwardData(g, f, x, out.data<T>());
      return Status::OK();
    }
  }

 private:
  ConvAttrs attrs_;
  nn::OneDnnConv conv_;
};

template <class T>
class ConvTransposeGradKernel final : public OpKernel {
 public:
  explicit ConvTransposeGradKernel(const KernelInit& init) : attrs_(ConvAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    ConvGeometry g = RunTransposeGeometry(ctx, attrs_);
    const T* x = ctx.In(kInput).data<T>();
    const T* f = ctx.In(kFilter).data<T>();
    const T* dy = ctx.In(kDOutput).data<T>();
    Tensor* dx = ctx.OutOpt(kDInput);
    Tensor* df = ctx.OutOpt(kDFilter);
    if (g.empty()) {
      ZeroFill(dx);
      ZeroFill(df);
      return Status::OK();
    }
    if constexpr (std::is_same_v<T, float>) {
      runtime::OneDnnHandles& h = ctx.device_as<runtime::CpuContext>().onednn();
      if (dx) PC_RETURN_IF_ERROR(conv_.Forward(h, g, dy, f, dx->data<float>()));
      if (df) PC_RETURN_IF_ERROR(conv_.BackwardWeights(h, g, dy, x, df->data<float>()));
    } else {
      if (dx) DirectForward(g, dy, f, dx->data<T>());
      if (df) DirectBackwardWeights(g, dy, x, df->data<T>());
    }
    return Status::OK();
  }

 private:
  ConvAttrs attrs_;
  nn::OneDnnConv conv_;
};

// ---- fused_conv2d_bn_act (inference) -------------------------------------------------------

Status InferFusedConv(InferShapeContext& ctx) {
  Dims x = ctx.InputDims(kInput), f = ctx.InputDims(kFilter);
  ConvGeometry g;
  PC_RETURN_IF_ERROR(nn::ConvGeometryOf(x, f, ConvAttrs::Decode(ctx.attrs()), g));
  const FusedPoolAttrs pool = FusedPoolAttrs::Decode(ctx.attrs());
  const bool bn = ctx.HasInput(kFScale) || ctx.HasInput(kFMean) || ctx.HasInput(kFVariance);
  if (bn && !(ctx.HasInput(kFScale) && ctx.HasInput(kFBias) && ctx.HasInput(kFMean) && ctx.HasInput(kFVariance)))
    return ctx.Fail("Scale, Mean and Variance come together with Bias (a batch norm) or not at all (a plain bias)");
  for (InSlot s : {kFScale, kFBias, kFMean, kFVariance}) {
    if (!ctx.HasInput(s)) continue;
    Dims d = ctx.InputDims(s);
    if (d.rank() != 1 || !DimMatch(d[0], g.o))
      return ctx.Fail("{} has shape {} but the convolution has {} output channels", s.name, d.ToString(), g.o);
  }
  if (!pool.type.empty()) {
    PC_ASSIGN_OR_RETURN(nn::ConvPool p, pool.Window(g));
    ctx.SetOutput(kOutput, Dims{g.n, g.o, p.w.out[0], p.w.out[1]}, ctx.InputDType(kInput));
    return Status::OK();
  }
  ctx.SetOutput(kOutput, Dims{g.n, g.o, g.w.out[0], g.w.out[1]}, ctx.InputDType(kInput));
  return Status::OK();
}

/// Pools `y` (the convolution's output, of `g`'s sizes) into `out` with plain loops (float64).
template <class T>
void PoolLoops(const ConvGeometry& g, const nn::ConvPool& p, const T* y, T* out) {
  const nn::Window2d& w = p.w;
  for (int64_t plane = 0; plane < g.n * g.o; ++plane) {
    const T* yp = y + plane * w.in[0] * w.in[1];
    T* op = out + plane * w.out[0] * w.out[1];
    for (int64_t oh = 0; oh < w.out[0]; ++oh)
      for (int64_t ow = 0; ow < w.out[1]; ++ow) {
        const int64_t h0 = oh * w.stride[0] - w.pad_before(0), w0 = ow * w.stride[1] - w.pad_before(1);
        T acc = p.max ? -std::numeric_limits<T>::infinity() : T(0);
        int64_t count = 0;
        for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h0 + w.kernel[0], w.in[0]); ++h)
          for (int64_t c = std::max<int64_t>(w0, 0); c < std::min(w0 + w.kernel[1], w.in[1]); ++c, ++count)
            acc = p.max ? std::max(acc, yp[h * w.in[1] + c]) : acc + yp[h * w.in[1] + c];
        if (!p.max) acc /= static_cast<T>(p.exclusive ? std::max<int64_t>(count, 1) : w.kernel[0] * w.kernel[1]);
        op[oh * w.out[1] + ow] = count > 0 ? acc : T(0);
      }
  }
}

/// conv2d followed by an inference-mode batch_norm (and relu), as one convolution: the batch-norm
/// affine map is folded into the filter and a bias (O * C * KH * KW multiplies, nothing next to the
/// convolution, and redone only when a parameter changed), and the relu runs as oneDNN's post-op, so
/// the activations are written once instead of three times. With the layout pass's attributes the
/// input and output stay in oneDNN's blocked layout between two fused convolutions (conv_onednn.h).
template <class T>
class FusedConvKernel final : public OpKernel {
 public:
  explicit FusedConvKernel(const KernelInit& init)
      : attrs_(ConvAttrs::Decode(init.attrs)),
        epsilon_(init.attrs.Get<float>("epsilon")),
        relu_(init.attrs.Get<std::string>("activation") == "relu"),
        pool_attrs_(FusedPoolAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    ConvGeometry g = RunGeometry(ctx, attrs_);
    Tensor& out = ctx.Out(kOutput);
    if (g.empty()) {
      ZeroFill(&out);
      return Status::OK();
    }
    PC_RETURN_IF_ERROR(CheckLayout<T>(g, attrs_));
    const T* x = ctx.In(kInput).data<T>();
    const T* f = ctx.In(kFilter).data<T>();
    const T* bias = ctx.InOpt(kFBias) ? ctx.In(kFBias).data<T>() : nullptr;
    const bool bn = ctx.InOpt(kFScale) != nullptr;
    const int64_t nf = ctx.In(kFilter).numel();
    auto param = [&](InSlot s) { return bn ? ctx.In(s).data<T>() : nullptr; };
    auto part = [&](InSlot s) { return bn ? &ctx.In(s) : nullptr; };
    const bool unchanged =
        params_.Same({&ctx.In(kFilter), ctx.InOpt(kFBias), part(kFScale), part(kFMean), part(kFVariance)});
    // Without batch-norm statistics (conv + bias + act), the filter and the bias are used as they are.
    const T* filter = f;
    if (bn) {
      if (!unchanged) {
        const T* scale = param(kFScale);
        const T* mean = param(kFMean);
        const T* var = param(kFVariance);
        const int64_t per_out = nf / g.o;
        filter_.resize(nf);
        bias_.resize(g.o);
        for (int64_t o = 0; o < g.o; ++o) {
          T a = scale[o] / std::sqrt(var[o] + static_cast<T>(epsilon_));
          bias_[o] = bias[o] - mean[o] * a;
          for (int64_t k = 0; k < per_out; ++k) filter_[o * per_out + k] = f[o * per_out + k] * a;
        }
      }
      filter = filter_.data();
      bias = bias_.data();
    }
    std::optional<nn::ConvPool> pool;
    if (!pool_attrs_.type.empty()) {
      PC_ASSIGN_OR_RETURN(pool, pool_attrs_.Window(g));
    }
    T* y = out.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      const nn::ActivationLayout in_layout = Layout(attrs_.blocked_input), out_layout = Layout(attrs_.blocked_output);
      const nn::WinogradEpilogue epilogue{.bias = bias, .relu = relu_, .pool = pool ? &*pool : nullptr};
      if (!unchanged) wino_ready_ = small_ready_ = false;
      if (nn::WinogradEnabled() && nn::WinogradPaysOff(g, in_layout) && (!pool || nn::WinogradPoolFits(g, *pool)) &&
          (!params_.changed() || nn::WinogradTrainingPaysOff())) {
        if (!wino_ready_) wino_.SetFilter(g, filter, 0, /*per_call=*/params_.changed());
        wino_ready_ = true;
        wino_.Forward(g, x, in_layout, y, out_layout, epilogue, nn::ConvThreads(g));
        return Status::OK();
      }
      if (nn::WinogradEnabled() && nn::SmallConvFits(g) && !attrs_.blocked_input &&
          (!pool || nn::WinogradPoolFits(g, *pool))) {
        if (!small_ready_) small_.SetFilter(g, filter);
        small_ready_ = true;
        small_.Forward(g, x, y, out_layout, epilogue, nn::ConvThreads(g));
        return Status::OK();
      }
      return conv_.Forward(
          ctx.device_as<runtime::CpuContext>().onednn(), g, x, filter, y, bias, relu_, pool ? &*pool : nullptr,
          {.blocked_src = attrs_.blocked_input, .blocked_dst = attrs_.blocked_output, .weights_unchanged = unchanged});
    }
    if (pool) {
      unpooled_.resize(g.n * g.o * g.w.out[0] * g.w.out[1]);
      y = unpooled_.data();
    }
    DirectForward(g, x, filter, y);
    const int64_t plane = g.w.out[0] * g.w.out[1];
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t o = 0; o < g.o; ++o) {
        T* p = y + (n * g.o + o) * plane;
        const T b = bias != nullptr ? bias[o] : T(0);
        for (int64_t i = 0; i < plane; ++i) p[i] = relu_ ? std::max(p[i] + b, T(0)) : p[i] + b;
      }
    if (pool) PoolLoops(g, *pool, y, out.data<T>());
    return Status::OK();
  }

 private:
  ConvAttrs attrs_;
  float epsilon_;
  bool relu_;
  FusedPoolAttrs pool_attrs_;
  ParamSnapshot<T> params_;
  std::vector<T> filter_, bias_;  // folded parameters, sized once
  std::vector<T> unpooled_;       // float64 with a pooling: the convolution's output
  nn::OneDnnConv conv_;
  nn::WinogradConv wino_;
  nn::SmallChannelConv small_;
  // Whether they hold the transform of the current (folded) filter: a change of parameters clears
  // both, even when this call runs on oneDNN, so that a later call on them transforms it again.
  bool wino_ready_ = false, small_ready_ = false;
};

}  // namespace

namespace nn {

Status ConvGeometryOf(const Dims& x, const Dims& f, const conv::ConvAttrs& a, ConvGeometry& g) {
  if (a.data_format == "NHWC")
    return MakeError(ErrorCode::kUnimplemented,
                     "data_format 'NHWC' is not supported: {} takes NCHW input (set data_format to \"NCHW\" and "
                     "transpose the input)",
                     a.op);
  if (x.rank() != 4)
    return MakeError(ErrorCode::kShape, "Input has shape {} (rank {}) but {} needs a 4-D NCHW input", x.ToString(),
                     x.rank(), a.op);
  if (f.rank() != 4)
    return MakeError(ErrorCode::kShape,
                     "Filter has shape {} (rank {}) but {} needs a 4-D filter [out_channels, in_channels / groups, "
                     "kernel_h, kernel_w]",
                     f.ToString(), f.rank(), a.op);
  const nn::WindowAttrs& wa = a.window;
  if (wa.strides.size() != 2)
    return MakeError(ErrorCode::kShape, "attribute 'strides' has {} values but {} needs 2 (height, width)",
                     wa.strides.size(), a.op);
  if (wa.dilations.size() != 2)
    return MakeError(ErrorCode::kShape, "attribute 'dilations' has {} values but {} needs 2 (height, width)",
                     wa.dilations.size(), a.op);
  if (wa.paddings.size() != 2 && wa.paddings.size() != 4)
    return MakeError(ErrorCode::kShape,
                     "attribute 'paddings' has {} values but {} needs 2 (height, width) or 4 (top, bottom, left, "
                     "right)",
                     wa.paddings.size(), a.op);
  g.groups = a.groups;
  g.n = x[0];
  g.c = x[1];
  g.o = f[0];
  if (!DimMatch(g.c, DimMul(f[1], g.groups)))
    return MakeError(ErrorCode::kShape,
                     "Input has shape {} ({} channels) but Filter has shape {}: Input channels must equal "
                     "Filter.dims[1] * groups = {} * {} = {}",
                     x.ToString(), g.c, f.ToString(), f[1], g.groups, f[1] * g.groups);
  if (g.o >= 0 && g.o % g.groups != 0)
    return MakeError(ErrorCode::kShape, "Filter has shape {}: its {} output channels are not divisible by groups = {}",
                     f.ToString(), g.o, g.groups);
  if (g.c < 0) g.c = DimMul(f[1], g.groups);
  Window2d& w = g.w;
  for (int ax = 0; ax < 2; ++ax) {
    w.in[ax] = x[2 + ax];
    w.kernel[ax] = f[2 + ax];
    w.stride[ax] = wa.strides[ax];
    w.dilation[ax] = wa.dilations[ax];
  }
  nn::ResolvePadding(wa.paddings, wa.algorithm, w);
  nn::ComputeOutputSize(w, /*ceil_mode=*/false);
  for (int ax = 0; ax < 2; ++ax) {
    if (w.kernel[ax] < 0) w.out[ax] = kUnknownDim;
    if (w.out[ax] != -2) continue;
    return MakeError(ErrorCode::kShape,
                     "Input has shape {} but Filter has shape {}: the filter {} {} (dilation {}, spanning {}) does not "
                     "fit the input {} {} padded by {} and {}",
                     x.ToString(), f.ToString(), nn::AxisName(ax), w.kernel[ax], w.dilation[ax], w.span(ax),
                     nn::AxisName(ax), w.in[ax], w.pad_before(ax), w.pad_after(ax));
  }
  return Status::OK();
}

Status ConvTransposeGeometryOf(const Dims& x, const Dims& f, const conv::ConvAttrs& a, ConvGeometry& g) {
  if (a.data_format == "NHWC")
    return MakeError(ErrorCode::kUnimplemented,
                     "data_format 'NHWC' is not supported: conv2d_transpose takes NCHW input (set data_format to "
                     "\"NCHW\" and transpose the input)");
  if (x.rank() != 4)
    return MakeError(ErrorCode::kShape, "Input has shape {} (rank {}) but conv2d_transpose needs a 4-D NCHW input",
                     x.ToString(), x.rank());
  if (f.rank() != 4)
    return MakeError(ErrorCode::kShape,
                     "Filter has shape {} (rank {}) but conv2d_transpose needs a 4-D filter [in_channels, "
                     "out_channels / groups, kernel_h, kernel_w]",
                     f.ToString(), f.rank());
  const WindowAttrs& wa = a.window;
  for (auto [name, size] : {std::pair{"strides", wa.strides.size()}, std::pair{"dilations", wa.dilations.size()}})
    if (size != 2)
      return MakeError(ErrorCode::kShape, "attribute '{}' has {} values but conv2d_transpose needs 2 (height, width)",
                       name, size);
  if (wa.paddings.size() != 2 && wa.paddings.size() != 4)
    return MakeError(ErrorCode::kShape,
                     "attribute 'paddings' has {} values but conv2d_transpose needs 2 (height, width) or 4 (top, "
                     "bottom, left, right)",
                     wa.paddings.size());
  for (auto [name, v] : {std::pair{"output_padding", &a.output_padding}, std::pair{"output_size", &a.output_size}})
    if (!v->empty() && v->size() != 2)
      return MakeError(ErrorCode::kShape,
                       "attribute '{}' has {} values but conv2d_transpose needs none or 2 (height, width)", name,
                       v->size());
  if (!DimMatch(x[1], f[0]))
    return MakeError(ErrorCode::kShape,
                     "Input has shape {} ({} channels) but Filter has shape {}: Input channels must equal "
                     "Filter.dims[0]",
                     x.ToString(), x[1], f.ToString());
  if (x[1] >= 0 && x[1] % a.groups != 0)
    return MakeError(ErrorCode::kShape, "Input has shape {}: its {} channels are not divisible by groups = {}",
                     x.ToString(), x[1], a.groups);
  g.groups = a.groups;
  g.n = x[0];
  g.o = DimMerge(x[1], f[0]);
  g.c = DimMul(f[1], a.groups);
  Window2d& w = g.w;
  // Padding is resolved against the transposed op's input, as PaddlePaddle's UpdatePaddingAndDilation does.
  for (int ax = 0; ax < 2; ++ax) {
    w.in[ax] = x[2 + ax];
    w.kernel[ax] = f[2 + ax];
    w.stride[ax] = wa.strides[ax];
    w.dilation[ax] = wa.dilations[ax];
  }
  ResolvePadding(wa.paddings, wa.algorithm, w);
  for (int ax = 0; ax < 2; ++ax) {
    const int64_t in = x[2 + ax], stride = w.stride[ax];
    int64_t full = kUnknownDim;  // the size every input pixel's window reaches
    if (in >= 0 && w.kernel[ax] >= 0) {
      full = (in - 1) * stride - w.pad_before(ax) - w.pad_after(ax) + w.span(ax);
      if (full <= 0)
        return MakeError(ErrorCode::kShape,
                         "Input has shape {} but Filter has shape {}: the {} output size (input {} - 1) * stride {} - "
                         "paddings {} and {} + filter span {} = {} is not positive",
                         x.ToString(), f.ToString(), AxisName(ax), in, stride, w.pad_before(ax), w.pad_after(ax),
                         w.span(ax), full);
    }
    int64_t out = full, extra = 0;
    if (!a.output_size.empty()) {
      out = a.output_size[ax];
      extra = full >= 0 ? out - full : 0;
      if (full >= 0 && (extra < 0 || extra >= stride))
        return MakeError(ErrorCode::kShape,
                         "attribute 'output_size' asks for {} {} but Input {} and Filter {} give {} {} (or up to {} "
                         "with an output padding below the stride {})",
                         AxisName(ax), out, x.ToString(), f.ToString(), AxisName(ax), full, full + stride - 1, stride);
    } else if (!a.output_padding.empty()) {
      extra = a.output_padding[ax];
      if (extra < 0 || extra >= std::max(stride, w.dilation[ax]))
        return MakeError(ErrorCode::kShape,
                         "attribute 'output_padding' has {} {} but it must be in [0, max(stride {}, dilation {}))",
                         AxisName(ax), extra, stride, w.dilation[ax]);
      out = DimAdd(full, extra);
    }
    if (extra >= stride)
      return MakeError(ErrorCode::kUnimplemented,
                       "attribute 'output_padding' has {} {}, not below the stride {}: paddlec computes a transposed "
                       "convolution only when the output padding is smaller than the stride",
                       AxisName(ax), extra, stride);
    w.out[ax] = in;
    w.in[ax] = out;
  }
  return Status::OK();
}

}  // namespace nn

namespace {

/// conv2d and depthwise_conv2d: one proto (PaddlePaddle's, attribute for attribute), one kernel.
void AddConvOp(OpRegistry& r, const std::string& type, const std::string& doc) {
  r.Add(type)
      .Doc(doc)
      .Input(kInput, "Input batch [N, C, H, W].")
      .Input(kFilter, "Filter [O, C / groups, KH, KW]; O must be divisible by groups.")
      .Output(kOutput, "Output batch [N, O, OH, OW].")
      .Attr("strides", std::vector<int>{1, 1}, "Strides (height, width).")
      .Min(1)
      .Attr("paddings", std::vector<int>{0, 0},
            "Zero padding: 2 values (height, width; both sides) or 4 (top, bottom, left, right). Used when "
            "padding_algorithm is EXPLICIT.")
      .Min(0)
      .Attr("padding_algorithm", "EXPLICIT",
            "EXPLICIT uses `paddings`; SAME pads so that OH = ceil(H / stride_h) (extra pixel at the bottom/right) "
            "and ignores dilations; VALID pads nothing.")
      .AllowedValues({"EXPLICIT", "SAME", "VALID"})
      .Attr("dilations", std::vector<int>{1, 1}, "Dilations (height, width): the step between filter taps.")
      .Min(1)
      .Attr("groups", 1, "Number of channel groups; input channel group g only meets output channel group g.")
      .Min(1)
      .Attr("data_format", "NCHW", "Layout of Input and Output. Only NCHW (and AnyLayout, read as NCHW) is supported.")
      .AllowedValues({"NCHW", "NHWC", "AnyLayout"})
      // PaddlePaddle's "extra" attributes, present in saved programs; the fusion ones must stay off.
      .Attr("is_test", false, "PaddlePaddle hint: inference only; ignored.")
      .ExtraAttr()
      .Attr("fuse_relu_before_depthwise_conv", false, "oneDNN fusion request; must be false.")
      .ExtraAttr()
      .Attr("fuse_relu", false, "oneDNN fusion request; must be false.")
      .ExtraAttr()
      .Attr("fuse_activation", "", "oneDNN fusion request; must be empty.")
      .ExtraAttr()
      .Attr("fuse_alpha", 0.0f, "Parameter of fuse_activation; ignored.")
      .ExtraAttr()
      .Attr("fuse_beta", 0.0f, "Parameter of fuse_activation; ignored.")
      .ExtraAttr()
      .Attr("use_addto", false, "Accumulate into the output (cuDNN); must be false.")
      .ExtraAttr()
      .Attr("fuse_residual_connection", false, "oneDNN fusion request; must be false.")
      .ExtraAttr()
      .Attr("Scale_in", 1.0f, "int8 quantization scale; ignored.")
      .ExtraAttr()
      .Attr("Scale_out", 1.0f, "int8 quantization scale; ignored.")
      .ExtraAttr()
      .Attr("Scale_in_eltwise", 1.0f, "int8 quantization scale; ignored.")
      .ExtraAttr()
      .Attr("Scale_weights", std::vector<float>{1.0f}, "int8 quantization scales; ignored.")
      .ExtraAttr()
      .Attr("force_fp32_output", false, "int8 quantization hint; ignored.")
      .ExtraAttr()
      .Attr("workspace_size_MB", 512, "cuDNN workspace limit in MB (GPU kernels); ignored on the CPU.")
      .ExtraAttr()
      .Attr("exhaustive_search", false, "Time cuDNN's algorithms instead of trusting its heuristics (GPU kernels).")
      .ExtraAttr()
      .Attr("blocked_input", false,
            "paddlec: Input (and in the gradient op Input@GRAD) is in oneDNN's channel-blocked layout (nChw16c, or "
            "nChw8c without AVX-512), set by the layout pass; the float32 CPU kernels honour it, the GPU kernels keep "
            "NCHW throughout.")
      .Attr("blocked_output", false,
            "paddlec: Output (and in the gradient op Output@GRAD) is in oneDNN's channel-blocked layout, as "
            "blocked_input.")
      .InferShape(InferConv)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<ConvKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<ConvKernel<double>>());

  r.Add(type + "_grad")
      .GradOf(type)
      .Doc("Gradient of " + type + ": Input@GRAD (backward data) and Filter@GRAD (backward weights) from Output@GRAD.")
      .Input(kInput, "The forward Input.")
      .Input(kFilter, "The forward Filter.")
      .Input(kDOutput, "Gradient of the loss with respect to Output.")
      .Output(kDInput, "Gradient of the loss with respect to Input.")
      .Output(kDFilter, "Gradient of the loss with respect to Filter.")
      .InferShape(InferConvGrad)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<ConvGradKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<ConvGradKernel<double>>());
}

}  // namespace

void RegisterConvOps(OpRegistry& r) {
  AddConvOp(r, "conv2d",
            "2-D convolution of an NCHW batch: Output[n, o, y, x] = sum over the channels c of o's group and the "
            "taps (i, j) of Input[n, c, y * stride_h - pad_top + i * dilation_h, x * stride_w - pad_left + j * "
            "dilation_w] * Filter[o, c, i, j], with zeros outside the input. A bias is a following elementwise_add.");
  AddConvOp(r, "depthwise_conv2d",
            "Depthwise 2-D convolution, PaddlePaddle's name for a conv2d whose groups equal the input channels "
            "(Filter [C * multiplier, 1, KH, KW]): Output[n, o, y, x] = sum over the taps (i, j) of Input[n, o / "
            "multiplier, y * stride_h - pad_top + i * dilation_h, x * stride_w - pad_left + j * dilation_w] * "
            "Filter[o, 0, i, j]. Any groups value computes conv2d's grouped convolution.");

  r.Add("conv2d_transpose")
      .Doc(
          "2-D transposed convolution (the gradient of conv2d with respect to its input) of an NCHW batch: every "
          "Input pixel (y, x) of channel c adds Input[n, c, y, x] * Filter[c, o, i, j] to Output[n, o, y * stride_h "
          "- pad_top + i * dilation_h, x * stride_w - pad_left + j * dilation_w] (o within c's group). The output "
          "size is (H - 1) * stride_h - pad_top - pad_bottom + dilation_h * (KH - 1) + 1, plus output_padding, or "
          "output_size. A bias is a following elementwise_add.")
      .Input(kInput, "Input batch [N, C, H, W].")
      .Input(kFilter, "Filter [C, O / groups, KH, KW]; C must be divisible by groups.")
      .Input(kTBias, "PaddlePaddle's oneDNN-only fused bias; must be left unbound.", kDispensable | kExtra)
      .Output(kOutput, "Output batch [N, O, OH, OW].")
      .Attr("strides", std::vector<int>{1, 1}, "Strides (height, width).")
      .Min(1)
      .Attr("paddings", std::vector<int>{0, 0},
            "Padding removed from the output: 2 values (height, width; both sides) or 4 (top, bottom, left, right). "
            "Used when padding_algorithm is EXPLICIT.")
      .Min(0)
      .Attr("output_padding", std::vector<int>{},
            "Extra rows and columns (height, width) at the bottom and right of the output, each below the stride; "
            "empty for none.")
      .Attr("output_size", std::vector<int>{},
            "The output size (height, width), which must lie in [size, size + stride) of the computed one; empty "
            "for the computed size.")
      .Attr("padding_algorithm", "EXPLICIT",
            "EXPLICIT uses `paddings`; SAME computes conv2d's SAME padding from the input size (and ignores "
            "dilations); VALID pads nothing.")
      .AllowedValues({"EXPLICIT", "SAME", "VALID"})
      .Attr("groups", 1, "Number of channel groups; input channel group g only meets output channel group g.")
      .Min(1)
      .Attr("dilations", std::vector<int>{1, 1}, "Dilations (height, width): the step between filter taps.")
      .Min(1)
      .Attr("data_format", "NCHW", "Layout of Input and Output. Only NCHW (and AnyLayout, read as NCHW) is supported.")
      .AllowedValues({"NCHW", "NHWC", "AnyLayout"})
      // PaddlePaddle's "extra" attributes of conv2d_transpose, present in saved programs.
      .Attr("is_test", false, "PaddlePaddle hint: inference only; ignored.")
      .ExtraAttr()
      .Attr("fuse_relu", false, "oneDNN fusion request; must be false.")
      .ExtraAttr()
      .Attr("fuse_activation", "", "oneDNN fusion request; must be empty.")
      .ExtraAttr()
      .Attr("fuse_alpha", 0.0f, "Parameter of fuse_activation; ignored.")
      .ExtraAttr()
      .Attr("fuse_beta", 0.0f, "Parameter of fuse_activation; ignored.")
      .ExtraAttr()
      .Attr("force_fp32_output", false, "int8 quantization hint; ignored.")
      .ExtraAttr()
      .Attr("workspace_size_MB", 512, "cuDNN workspace limit in MB (GPU kernels); ignored on the CPU.")
      .ExtraAttr()
      .InferShape(InferConvTranspose)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<ConvTransposeKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<ConvTransposeKernel<double>>());

  r.Add("conv2d_transpose_grad")
      .GradOf("conv2d_transpose")
      .Doc(
          "Gradient of conv2d_transpose: Input@GRAD = conv2d(Output@GRAD, Filter) and Filter@GRAD from Output@GRAD "
          "and Input.")
      .Input(kInput, "The forward Input.")
      .Input(kFilter, "The forward Filter.")
      .Input(kDOutput, "Gradient of the loss with respect to Output.")
      .Input(kTGBias, "The forward Bias slot, as PaddlePaddle lists it; must be left unbound.", kDispensable | kExtra)
      .Output(kDInput, "Gradient of the loss with respect to Input.")
      .Output(kDFilter, "Gradient of the loss with respect to Filter.")
      .InferShape(InferConvTransposeGrad)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<ConvTransposeGradKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<ConvTransposeGradKernel<double>>());

  r.Add("fused_conv2d_bn_act")
      .Doc(
          "paddlec's fusion of conv2d, an inference-mode batch_norm or a bias, and an optional relu (written by the "
          "fuse-conv-bn-act and fuse-conv-bias-act passes): Output = act(conv2d(Input, Filter) * s + (Bias - Mean * "
          "s)) with s = Scale / sqrt(Variance + epsilon), per output channel; without Scale, Mean and Variance, "
          "Output = act(conv2d(Input, Filter) + Bias).")
      .Input(kInput, "Input batch [N, C, H, W].")
      .Input(kFilter, "Filter [O, C / groups, KH, KW].")
      .Input(kFScale, "batch_norm's Scale [O]; absent for a plain bias.", kDispensable)
      .Input(kFBias, "batch_norm's Bias, or the convolution's bias [O].", kDispensable)
      .Input(kFMean, "batch_norm's running mean [O]; absent for a plain bias.", kDispensable)
      .Input(kFVariance, "batch_norm's running variance [O]; absent for a plain bias.", kDispensable)
      .Output(kOutput, "Output batch [N, O, OH, OW].")
      .Attr("strides", std::vector<int>{1, 1}, "As conv2d's.")
      .Min(1)
      .Attr("paddings", std::vector<int>{0, 0}, "As conv2d's.")
      .Min(0)
      .Attr("padding_algorithm", "EXPLICIT", "As conv2d's.")
      .AllowedValues({"EXPLICIT", "SAME", "VALID"})
      .Attr("dilations", std::vector<int>{1, 1}, "As conv2d's.")
      .Min(1)
      .Attr("groups", 1, "As conv2d's.")
      .Min(1)
      .Attr("data_format", "NCHW", "As conv2d's (NCHW only).")
      .AllowedValues({"NCHW", "NHWC", "AnyLayout"})
      .Attr("epsilon", 1e-5f, "batch_norm's epsilon.")
      .Min(0)
      .Attr("activation", "", "The activation after the normalization: none or relu.")
      .AllowedValues({"", "relu"})
      .Attr("pooling_type", "",
            "A pooling after the activation (written by fuse-conv-pool): none, max or avg. It runs on oneDNN's "
            "blocked layout of the convolution's result, so only the pooled result is reordered to NCHW.")
      .AllowedValues({"", "max", "avg"})
      .Attr("pool_ksize", std::vector<int>{2, 2}, "The pooling window (height, width).")
      .Min(1)
      .Attr("pool_strides", std::vector<int>{2, 2}, "The pooling strides (height, width).")
      .Min(1)
      .Attr("pool_paddings", std::vector<int>{0, 0}, "The pooling's zero padding: 2 or 4 values, as pool2d's.")
      .Min(0)
      .Attr("pool_exclusive", true, "Average pooling over the window's input elements only, as pool2d's.")
      .Attr("blocked_input", false,
            "Input is in oneDNN's channel-blocked layout (nChw16c, or nChw8c without AVX-512), written so by "
            "another fused convolution (set by the layout pass; the float32 CPU kernel honours it, the GPU kernel "
            "keeps NCHW at both ends).")
      .Attr("blocked_output", false,
            "Write Output in oneDNN's channel-blocked layout for a fused convolution that reads it so (set by the "
            "layout pass; ignored on the GPU, as blocked_input is).")
      .InferShape(InferFusedConv)
      .NoGradient()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<FusedConvKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<FusedConvKernel<double>>());
}

}  // namespace paddlec::ops
