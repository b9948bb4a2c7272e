// oneDNN convolution primitives with cached primitive descriptors, reorders and scratch memory.
#include "nn/conv_onednn.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "paddlec/runtime/threads.h"

namespace paddlec::ops::nn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

/// The oneDNN descriptions of a convolution on plain layouts.
struct ConvDescs {
  memory::desc src, weights, dst;
  memory::dims strides, dilates, pad_l, pad_r;
};

ConvDescs MakeDescs(const ConvGeometry& g) {
  const Window2d& w = g.w;
  ConvDescs d;
  d.src = memory::desc({g.n, g.c, w.in[0], w.in[1]}, kF32, Tag::nchw);
  d.dst = memory::desc({g.n, g.o, w.out[0], w.out[1]}, kF32, Tag::nchw);
  // Grouped filters [O, C/G, KH, KW] are, byte for byte, oneDNN's goihw [G, O/G, C/G, KH, KW].
  d.weights = g.groups == 1 ? memory::desc({g.o, g.c, w.kernel[0], w.kernel[1]}, kF32, Tag::oihw)
                            : memory::desc({g.groups, g.o_per_group(), g.c_per_group(), w.kernel[0], w.kernel[1]}, kF32,
                                           Tag::goihw);
  d.strides = {w.stride[0], w.stride[1]};
  d.dilates = {w.dilation[0] - 1, w.dilation[1] - 1};  // oneDNN counts the gaps, PaddlePaddle the step
  d.pad_l = {w.pad[0], w.pad[2]};
  d.pad_r = {w.pad[1], w.pad[3]};
  return d;
}

/// The caller's layout of an activation: plain NCHW, or ActivationBlockTag()'s when `blocked`.
memory::desc UserDesc(const memory::desc& plain, bool blocked) {
  return blocked ? memory::desc(plain.dims(), kF32, ActivationBlockTag(plain.dims()[1])) : plain;
}

memory::desc Any(const memory::desc& plain) { return memory::desc(plain.dims(), kF32, Tag::any); }
memory::desc Pick(ConvLayout layout, const memory::desc& plain) {
  return layout == ConvLayout::kPlain ? plain : Any(plain);
}

/// A primitive's tensor argument: the caller's plain buffer and, when the primitive wants another
/// layout, an internal buffer (allocated once) with the reorder between the two.
struct Operand {
  memory user;
  memory inner;
  dnnl::reorder reorder;
  bool reordered = false;

  void Init(const dnnl::engine& eng, const memory::desc& plain, const memory::desc& wanted, bool input) {
    user = memory(plain, eng, DNNL_MEMORY_NONE);
    reordered = wanted != plain;
    if (!reordered) {
      inner = user;
      return;
    }
    inner = memory(wanted, eng);
    reorder = input ? dnnl::reorder(user, inner) : dnnl::reorder(inner, user);
  }
  /// Points at the caller's buffer and brings it into the primitive's layout.
  void In(dnnl::stream& s, const float* data) {
    user.set_data_handle(const_cast<float*>(data));
    if (reordered) reorder.execute(s, user, inner);
  }
  void BindOut(float* data) { user.set_data_handle(data); }
  /// Brings the primitive's result back to the caller's buffer.
  void Out(dnnl::stream& s) {
    if (reordered) reorder.execute(s, inner, user);
  }
};

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

bool IsReference(const std::string& impl) { return std::string_view(impl).starts_with("ref"); }

/// Runs oneDNN calls, turning its exceptions into a Status.
template <class F>
Status Guarded(const char* what, F&& f) {
  try {
    f();
  } catch (const dnnl::error& e) {
    return MakeError(ErrorCode::kInternal, "oneDNN convolution {} failed: {} (status {})", what, e.what(),
                     static_cast<int>(e.status));
  }
  return Status::OK();
}

/// The forward primitive descriptor for `layout`; a blocked request that only a reference
/// implementation serves falls back to the plain layouts.
dnnl::convolution_forward::primitive_desc ForwardPd(const dnnl::engine& eng, const ConvDescs& d, ConvLayout layout,
                                                    const dnnl::primitive_attr& attr, bool bias) {
  auto desc = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                     dnnl::algorithm::convolution_direct, Pick(layout, d.src),
                                                     Pick(layout, d.weights), memory::desc({d.dst.dims()[1]}, kF32, Tag::x),
                                                     Pick(layout, d.dst), d.strides, d.dilates, d.pad_l, d.pad_r)
                   : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                     dnnl::algorithm::convolution_direct, Pick(layout, d.src),
                                                     Pick(layout, d.weights), Pick(layout, d.dst), d.strides, d.dilates,
                                                     d.pad_l, d.pad_r);
  dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
  if (layout == ConvLayout::kBlocked && IsReference(pd.impl_info_str()))
    return ForwardPd(eng, d, ConvLayout::kPlain, attr, bias);
  return pd;
}

}  // namespace

Status CheckBlockedChannels(const ConvGeometry& g, bool blocked_src, bool blocked_dst) {
  if ((blocked_src && ActivationBlockTag(g.c) == Tag::undef) || (blocked_dst && ActivationBlockTag(g.o) == Tag::undef))
    return MakeError(ErrorCode::kInvalidArgument,
                     "a blocked (nChw{}c) convolution input or output needs a multiple of {} channels, but it has {} "
                     "input and {} output channels",
                     ActivationBlockChannels(), ActivationBlockChannels(), g.c, g.o);
  return Status::OK();
}

int ConvThreads(const ConvGeometry& g) {
  return runtime::OneDnnThreads(2.0 * g.n * g.o * g.w.out[0] * g.w.out[1] * g.c_per_group() * g.w.kernel[0] *
                                g.w.kernel[1]);
}

int ActivationBlockChannels() {
  static const int block = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core ? 16 : 8;
  return block;
}

memory::format_tag ActivationBlockTag(int64_t channels) {
  const int block = ActivationBlockChannels();
  if (channels <= 0 || channels % block != 0) return Tag::undef;
  return block == 16 ? Tag::nChw16c : Tag::nChw8c;
}

ConvLayouts DefaultConvLayouts(const ConvGeometry& g) {
  ConvLayouts l;
  const bool depthwise = g.groups > 1 && g.c_per_group() == 1 && g.o_per_group() == 1;
  if (g.c_per_group() < 4 && !depthwise) l.backward_data = ConvLayout::kPlain;
  return l;
}

struct OneDnnConv::Forward_ {
  ConvGeometry g;
  int threads = 0;
  bool bias = false, relu = false;
  bool blocked_src = false, blocked_dst = false;
  bool weights_ready = false;  // weights.inner holds the last call's reordered filter
  std::optional<ConvPool> pool;
  dnnl::pooling_forward pool_prim;
  memory conv_dst, pool_scratch;  // the convolution's result in its own layout; the pooling's scratch
  Operand pooled;
  memory bias_mem;
  std::unordered_map<int, memory> args;  // built once: execute() takes a map, rebuilding it allocates
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  Operand src, weights, dst;
  memory scratch;
};

struct OneDnnConv::BackwardData_ {
  ConvGeometry g;
  int threads = 0;
  ConvBackwardIo io;
  dnnl::convolution_backward_data::primitive_desc pd;
  dnnl::convolution_backward_data prim;
  Operand diff_dst, weights, diff_src;
  memory scratch;
};

struct OneDnnConv::BackwardWeights_ {
  ConvGeometry g;
  int threads = 0;
  ConvBackwardIo io;
  dnnl::convolution_backward_weights::primitive_desc pd;
  dnnl::convolution_backward_weights prim;
  Operand diff_dst, src, diff_weights;
  memory scratch;
};

OneDnnConv::OneDnnConv(std::optional<ConvLayouts> forced) : forced_(forced) {}
OneDnnConv::~OneDnnConv() = default;

Status OneDnnConv::Forward(runtime::OneDnnHandles& h, const ConvGeometry& g, const float* x, const float* w, float* y,
                           const float* bias, bool relu, const ConvPool* pool, ConvForwardIo io) {
  const int threads = ConvThreads(g);
  runtime::ScopedMaxThreads cap(threads);
  PC_RETURN_IF_ERROR(CheckBlockedChannels(g, io.blocked_src, io.blocked_dst));
  return Guarded("forward", [&] {
    bool has_bias = bias != nullptr;
    const std::optional<ConvPool> want_pool = pool ? std::optional<ConvPool>(*pool) : std::nullopt;
    if (!fwd_ || !(fwd_->g == g) || fwd_->bias != has_bias || fwd_->relu != relu || fwd_->threads != threads ||
        !(fwd_->pool == want_pool) || fwd_->blocked_src != io.blocked_src || fwd_->blocked_dst != io.blocked_dst) {
      auto f = std::make_unique<Forward_>();
      f->g = g;
      f->threads = threads;
      f->pool = want_pool;
      f->bias = has_bias;
      f->relu = relu;
      f->blocked_src = io.blocked_src;
      f->blocked_dst = io.blocked_dst;
      ConvDescs d = MakeDescs(g);
      ConvLayouts layouts = forced_ ? *forced_ : DefaultConvLayouts(g);
      dnnl::primitive_attr attr = UserScratchpad();
      if (relu) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
        attr.set_post_ops(ops);
      }
      f->pd = ForwardPd(h.engine, d, layouts.forward, attr, has_bias);
      if (has_bias) f->bias_mem = memory(memory::desc({g.o}, kF32, Tag::x), h.engine, DNNL_MEMORY_NONE);
      f->prim = dnnl::convolution_forward(f->pd);
      // A blocked neighbour's layout is the caller's layout here; when the primitive wants the same one,
      // Operand::Init finds nothing to reorder.
      f->src.Init(h.engine, UserDesc(d.src, io.blocked_src), f->pd.src_desc(), true);
      f->weights.Init(h.engine, d.weights, f->pd.weights_desc(), true);
      f->scratch = memory(f->pd.scratchpad_desc(), h.engine);
      if (f->pool) {
        // The convolution writes its own layout into a buffer of ours; the pooling reads it there and
        // writes the same layout, which alone is reordered to NCHW.
        const Window2d& pw = f->pool->w;
        f->conv_dst = memory(f->pd.dst_desc(), h.engine);
        memory::dims pad_r(2);
        for (int ax = 0; ax < 2; ++ax)
          pad_r[ax] = std::max(pw.pad_after(ax),
                               (pw.out[ax] - 1) * pw.stride[ax] + pw.kernel[ax] - pw.in[ax] - pw.pad_before(ax));
        const auto alg = f->pool->max         ? dnnl::algorithm::pooling_max
                         : f->pool->exclusive ? dnnl::algorithm::pooling_avg_exclude_padding
                                              : dnnl::algorithm::pooling_avg_include_padding;
        const memory::desc pooled_plain =
            UserDesc(memory::desc({g.n, g.o, pw.out[0], pw.out[1]}, kF32, Tag::nchw), io.blocked_dst);
        dnnl::pooling_forward::desc pdesc(dnnl::prop_kind::forward_inference, alg, f->pd.dst_desc(), Any(pooled_plain),
                                          {pw.stride[0], pw.stride[1]}, {pw.kernel[0], pw.kernel[1]},
                                          {pw.pad_before(0), pw.pad_before(1)}, pad_r);
        dnnl::pooling_forward::primitive_desc ppd(pdesc, UserScratchpad(), h.engine);
        f->pool_prim = dnnl::pooling_forward(ppd);
        f->pool_scratch = memory(ppd.scratchpad_desc(), h.engine);
        f->pooled.Init(h.engine, pooled_plain, ppd.dst_desc(), false);
      } else {
        f->dst.Init(h.engine, UserDesc(d.dst, io.blocked_dst), f->pd.dst_desc(), false);
      }
      fwd_ = std::move(f);
    }
    Forward_& f = *fwd_;
    f.src.In(h.stream, x);
    // A reordered filter lives in weights.inner; unchanged since the last call, it is still right there.
    if (!(io.weights_unchanged && f.weights_ready && f.weights.reordered)) f.weights.In(h.stream, w);
    f.weights_ready = true;
    if (f.pool)
      f.pooled.BindOut(y);
    else
      f.dst.BindOut(y);
    if (f.args.empty()) {
      f.args = {{DNNL_ARG_SRC, f.src.inner},
                {DNNL_ARG_WEIGHTS, f.weights.inner},
                {DNNL_ARG_DST, f.pool ? f.conv_dst : f.dst.inner},
                {DNNL_ARG_SCRATCHPAD, f.scratch}};
      if (f.bias) f.args[DNNL_ARG_BIAS] = f.bias_mem;
    }
    if (f.bias) f.bias_mem.set_data_handle(const_cast<float*>(bias));
    f.prim.execute(h.stream, f.args);
    if (f.pool) {
      f.pool_prim.execute(
          h.stream,
          {{DNNL_ARG_SRC, f.conv_dst}, {DNNL_ARG_DST, f.pooled.inner}, {DNNL_ARG_SCRATCHPAD, f.pool_scratch}});
      f.pooled.Out(h.stream);
    } else {
      f.dst.Out(h.stream);
    }
    h.stream.wait();
  });
}

Status OneDnnConv::BackwardData(runtime::OneDnnHandles& h, const ConvGeometry& g, const float* w, const float* dy,
                                float* dx, ConvBackwardIo io) {
  const int threads = ConvThreads(g);
  runtime::ScopedMaxThreads cap(threads);
  PC_RETURN_IF_ERROR(CheckBlockedChannels(g, io.blocked_src, io.blocked_dst));
  return Guarded("backward-data", [&] {
    if (!bwd_data_ || !(bwd_data_->g == g) || bwd_data_->threads != threads || !(bwd_data_->io == io)) {
      auto b = std::make_unique<BackwardData_>();
      b->g = g;
      b->threads = threads;
      b->io = io;
      ConvDescs d = MakeDescs(g);
      ConvLayouts layouts = forced_ ? *forced_ : DefaultConvLayouts(g);
      ConvLayout l = layouts.backward_data;
      auto hint = ForwardPd(h.engine, d, l, dnnl::primitive_attr(), false);
      dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, Pick(l, d.src),
                                                 Pick(l, d.weights), Pick(l, d.dst), d.strides, d.dilates, d.pad_l,
                                                 d.pad_r);
      b->pd = dnnl::convolution_backward_data::primitive_desc(desc, UserScratchpad(), h.engine, hint);
      if (l == ConvLayout::kBlocked && IsReference(b->pd.impl_info_str())) {
        dnnl::convolution_backward_data::desc plain(dnnl::algorithm::convolution_direct, d.src, d.weights, d.dst,
                                                    d.strides, d.dilates, d.pad_l, d.pad_r);
        b->pd = dnnl::convolution_backward_data::primitive_desc(plain, UserScratchpad(), h.engine, hint);
      }
      b->prim = dnnl::convolution_backward_data(b->pd);
      b->diff_dst.Init(h.engine, UserDesc(d.dst, io.blocked_dst), b->pd.diff_dst_desc(), true);
      b->weights.Init(h.engine, d.weights, b->pd.weights_desc(), true);
      b->diff_src.Init(h.engine, UserDesc(d.src, io.blocked_src), b->pd.diff_src_desc(), false);
      b->scratch = memory(b->pd.scratchpad_desc(), h.engine);
      bwd_data_ = std::move(b);
    }
    BackwardData_& b = *bwd_data_;
    b.diff_dst.In(h.stream, dy);
    b.weights.In(h.stream, w);
    b.diff_src.BindOut(dx);
    b.prim.execute(h.stream, {{DNNL_ARG_DIFF_DST, b.diff_dst.inner},
                              {DNNL_ARG_WEIGHTS, b.weights.inner},
                              {DNNL_ARG_DIFF_SRC, b.diff_src.inner},
                              {DNNL_ARG_SCRATCHPAD, b.scratch}});
    b.diff_src.Out(h.stream);
    h.stream.wait();
  });
}

Status OneDnnConv::BackwardWeights(runtime::OneDnnHandles& h, const ConvGeometry& g, const float* x, const float* dy,
                                   float* dw, ConvBackwardIo io) {
  return BackwardWeightsImpl(h, g, x, dy, dw, io, false);
}

Status OneDnnConv::Backward(runtime::OneDnnHandles& h, const ConvGeometry& g, const float* x, const float* w,
                            const float* dy, float* dx, float* dw, ConvBackwardIo io) {
  if (dx != nullptr) PC_RETURN_IF_ERROR(BackwardData(h, g, w, dy, dx, io));
  if (dw != nullptr) PC_RETURN_IF_ERROR(BackwardWeightsImpl(h, g, x, dy, dw, io, dx != nullptr));
  return Status::OK();
}

Status OneDnnConv::BackwardWeightsImpl(runtime::OneDnnHandles& h, const ConvGeometry& g, const float* x,
                                       const float* dy, float* dw, ConvBackwardIo io,
                                       bool dy_reordered_by_backward_data) {
  const int threads = ConvThreads(g);
  runtime::ScopedMaxThreads cap(threads);
  PC_RETURN_IF_ERROR(CheckBlockedChannels(g, io.blocked_src, io.blocked_dst));
  return Guarded("backward-weights", [&] {
    if (!bwd_weights_ || !(bwd_weights_->g == g) || bwd_weights_->threads != threads || !(bwd_weights_->io == io)) {
      auto b = std::make_unique<BackwardWeights_>();
      b->g = g;
      b->threads = threads;
      b->io = io;
      ConvDescs d = MakeDescs(g);
      ConvLayouts layouts = forced_ ? *forced_ : DefaultConvLayouts(g);
      ConvLayout l = layouts.backward_weights;
      auto hint = ForwardPd(h.engine, d, l, dnnl::primitive_attr(), false);
      dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, Pick(l, d.src),
                                                    Pick(l, d.weights), Pick(l, d.dst), d.strides, d.dilates, d.pad_l,
                                                    d.pad_r);
      b->pd = dnnl::convolution_backward_weights::primitive_desc(desc, UserScratchpad(), h.engine, hint);
      if (l == ConvLayout::kBlocked && IsReference(b->pd.impl_info_str())) {
        dnnl::convolution_backward_weights::desc plain(dnnl::algorithm::convolution_direct, d.src, d.weights, d.dst,
                                                       d.strides, d.dilates, d.pad_l, d.pad_r);
        b->pd = dnnl::convolution_backward_weights::primitive_desc(plain, UserScratchpad(), h.engine, hint);
      }
      b->prim = dnnl::convolution_backward_weights(b->pd);
      b->diff_dst.Init(h.engine, UserDesc(d.dst, io.blocked_dst), b->pd.diff_dst_desc(), true);
      b->src.Init(h.engine, UserDesc(d.src, io.blocked_src), b->pd.src_desc(), true);
      b->diff_weights.Init(h.engine, d.weights, b->pd.diff_weights_desc(), false);
      b->scratch = memory(b->pd.scratchpad_desc(), h.engine);
      bwd_weights_ = std::move(b);
    }
    BackwardWeights_& b = *bwd_weights_;
    // Backward-data has just brought dy into its layout; when it is ours too, skip the second reorder.
    const memory* diff_dst = &b.diff_dst.inner;
    if (dy_reordered_by_backward_data && bwd_data_ && bwd_data_->g == g && bwd_data_->io == io &&
        bwd_data_->diff_dst.reordered && b.diff_dst.reordered && bwd_data_->pd.diff_dst_desc() == b.pd.diff_dst_desc())
      diff_dst = &bwd_data_->diff_dst.inner;
    else
      b.diff_dst.In(h.stream, dy);
    b.src.In(h.stream, x);
    b.diff_weights.BindOut(dw);
    b.prim.execute(h.stream, {{DNNL_ARG_DIFF_DST, *diff_dst},
                              {DNNL_ARG_SRC, b.src.inner},
                              {DNNL_ARG_DIFF_WEIGHTS, b.diff_weights.inner},
                              {DNNL_ARG_SCRATCHPAD, b.scratch}});
    b.diff_weights.Out(h.stream);
    h.stream.wait();
  });
}

std::string OneDnnConv::ImplInfo() const {
  std::string s;
  auto add = [&](const char* name, const std::string& impl) {
    s += (s.empty() ? "" : " ") + std::string(name) + "=" + impl;
  };
  if (fwd_) add("fwd", fwd_->pd.impl_info_str());
  if (bwd_data_) add("bwd_data", bwd_data_->pd.impl_info_str());
  if (bwd_weights_) add("bwd_weights", bwd_weights_->pd.impl_info_str());
  return s;
}

}  // namespace paddlec::ops::nn
