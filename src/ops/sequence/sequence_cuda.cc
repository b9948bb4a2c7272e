// The sequence ops on the GPU: sequence_slots.h's geometry around sequence.cu's kernels. The LoD is
// host metadata, so every run turns it into device offsets or a row map (one small upload) and the
// kernels are not replayed from CUDA graphs. sequence_unpad and sequence_mask read lengths that live
// on the device: they copy them to the host and wait (their output shapes depend on them).
// Built into libpaddlec_cuda.so only.
#include "sequence/sequence_cuda.h"

#include <algorithm>
#include <array>
#include <memory>

#include "common/cuda_host.h"
#include "sequence/sequence_slots.h"

namespace paddlec::ops {
namespace {

using namespace sequence;  // NOLINT: the family's shared slots and geometry

/// Device copies of host index arrays, kept between runs (reused while they fit).
class Uploads {
 public:
  StatusOr<const int64_t*> Put(KernelContext& ctx, int slot, const std::vector<int64_t>& values) {
    auto& b = buffers_.at(slot);
    const size_t bytes = std::max<size_t>(values.size(), 1) * sizeof(int64_t);
    if (b == nullptr || b->size() < bytes) {
      b.reset();
      PC_ASSIGN_OR_RETURN(b, runtime::AllocateBuffer(ctx.device().allocator(), bytes));
    }
    // From pageable memory: returns once the values are staged, so `values` may go right after.
    if (!values.empty())
      PC_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b->data(), values.data(), values.size() * sizeof(int64_t),
                                              cudaMemcpyHostToDevice, cuda::Stream(ctx)));
    return static_cast<const int64_t*>(b->data());
  }

 private:
  std::array<std::shared_ptr<runtime::Buffer>, 2> buffers_;
};

struct NoAttrs {
  static NoAttrs Decode(const AttrReader&) { return {}; }
};

template <class Attrs>
class LoDKernel final : public OpKernel {
 public:
  using Fn = Status (*)(KernelContext&, const Attrs&, Uploads&);
  LoDKernel(Fn fn, Attrs attrs) : fn_(fn), attrs_(std::move(attrs)) {}
  // The LoD is read on the host every run.
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override { return fn_(ctx, attrs_, uploads_); }

 private:
  Fn fn_;
  Attrs attrs_;
  Uploads uploads_;
};

template <class Attrs>
KernelFactory Make(typename LoDKernel<Attrs>::Fn fn) {
  return [fn](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new LoDKernel<Attrs>(fn, Attrs::Decode(init.attrs)));
  };
}

std::vector<int64_t> Signed(const std::vector<uint64_t>& v) { return {v.begin(), v.end()}; }

/// The row map of a reversal within sequences: row r comes from row lo + hi - 1 - r.
std::vector<int64_t> ReverseMap(const std::vector<uint64_t>& seq) {
  std::vector<int64_t> map(seq.back());
  for (size_t s = 0; s + 1 < seq.size(); ++s)
    for (uint64_t r = seq[s]; r < seq[s + 1]; ++r) map[r] = static_cast<int64_t>(seq[s] + seq[s + 1] - 1 - r);
  return map;
}

template <class T>
Status PoolCuda(KernelContext& ctx, const PoolAttrs& a, Uploads& up) {
  const Tensor& x = ctx.In(pool::kX);
  PC_ASSIGN_OR_RETURN(const PoolPlan plan, PlanPool(ctx));
  const auto* seq = plan.seq;
  const int64_t n = plan.sequences, w = plan.width;
  Tensor* index = plan.index;
  PC_ASSIGN_OR_RETURN(const int64_t* off, up.Put(ctx, 0, Signed(*seq)));
  ctx.Out(pool::kOut).mutable_lod() = OuterLoD(x.lod());
  return cuda::Launched(
      cuda::SequencePool<T>(x.data<T>(), off, n, w, static_cast<int>(a.type), static_cast<T>(a.pad_value),
                            ctx.Out(pool::kOut).data<T>(), index ? index->data<int32_t>() : nullptr, cuda::Stream(ctx)),
      "sequence_pool");
}

template <class T>
Status PoolGradCuda(KernelContext& ctx, const PoolAttrs& a, Uploads& up) {
  Tensor* dx = ctx.OutOpt(pool::kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(pool::kX);
  PC_ASSIGN_OR_RETURN(const auto* seq, Sequences(x, "sequence_pool_grad", "X"));
  const Tensor* index = ctx.InOpt(pool::kGradMaxIndex);
  if (a.type == PoolType::kMax && index == nullptr)
    return MakeError(ErrorCode::kRuntime, "sequence_pool_grad with pooltype MAX needs MaxIndex");
  PC_ASSIGN_OR_RETURN(const int64_t* off, up.Put(ctx, 0, Signed(*seq)));
  const int64_t n = static_cast<int64_t>(seq->size()) - 1, w = RowWidth(x.dims());
  return cuda::Launched(
      cuda::SequencePoolGrad<T>(ctx.In(pool::kGradDOut).data<T>(), index ? index->data<int32_t>() : nullptr, off, n,
                                x.dims()[0], w, static_cast<int>(a.type), dx->data<T>(), cuda::Stream(ctx)),
      "sequence_pool_grad");
}

template <class T>
Status SoftmaxCuda(KernelContext& ctx, const NoAttrs&, Uploads& up) {
  const Tensor& x = ctx.In(softmax::kX);
  PC_ASSIGN_OR_RETURN(const auto* seq, Sequences(x, "sequence_softmax", "X"));
  PC_ASSIGN_OR_RETURN(const int64_t* off, up.Put(ctx, 0, Signed(*seq)));
  return cuda::Launched(cuda::SequenceSoftmax<T>(x.data<T>(), off, static_cast<int64_t>(seq->size()) - 1,
                                                 ctx.Out(softmax::kOut).data<T>(), cuda::Stream(ctx)),
                        "sequence_softmax");
}

template <class T>
Status SoftmaxGradCuda(KernelContext& ctx, const NoAttrs&, Uploads& up) {
  Tensor* dx = ctx.OutOpt(softmax::kDX);
  if (dx == nullptr) return Status::OK();
  PC_ASSIGN_OR_RETURN(const auto* seq, Sequences(ctx.In(softmax::kGradX), "sequence_softmax_grad", "X"));
  PC_ASSIGN_OR_RETURN(const int64_t* off, up.Put(ctx, 0, Signed(*seq)));
  return cuda::Launched(
      cuda::SequenceSoftmaxGrad<T>(ctx.In(softmax::kGradOut).data<T>(), ctx.In(softmax::kGradDOut).data<T>(), off,
                                   static_cast<int64_t>(seq->size()) - 1, dx->data<T>(), cuda::Stream(ctx)),
      "sequence_softmax_grad");
}

/// Out row -> X row of sequence_expand.
std::vector<int64_t> ExpandMap(const ExpandPlan& p) {
  std::vector<int64_t> map(p.out_rows);
  for (size_t c = 0; c < p.source.size(); ++c)
    for (uint64_t k = 0; k < p.out_offsets[c + 1] - p.out_offsets[c]; ++k)
      map[p.out_offsets[c] + k] = static_cast<int64_t>(p.x_offsets[p.source[c]] + k);
  return map;
}

template <class T>
Status ExpandCuda(KernelContext& ctx, const ExpandAttrs& a, Uploads& up) {
  const Tensor& x = ctx.In(expand::kX);
  PC_ASSIGN_OR_RETURN(ExpandPlan p, PlanExpand(x, ctx.In(expand::kY), a));
  PC_RETURN_IF_ERROR(ctx.ResizeOut(expand::kOut, WithRows(x.dims(), p.out_rows), x.dtype()));
  PC_ASSIGN_OR_RETURN(const int64_t* map, up.Put(ctx, 0, ExpandMap(p)));
  Tensor& out = ctx.Out(expand::kOut);
  out.mutable_lod() = p.out_lod;
  return cuda::Launched(cuda::GatherRows<T>(x.data<T>(), map, p.out_rows, RowWidth(x.dims()), nullptr, 0, out.data<T>(),
                                            cuda::Stream(ctx)),
                        "sequence_expand");
}

template <class T>
Status ExpandGradCuda(KernelContext& ctx, const ExpandAttrs& a, Uploads& up) {
  Tensor* dx = ctx.OutOpt(expand::kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(expand::kX);
  PC_ASSIGN_OR_RETURN(ExpandPlan p, PlanExpand(x, ctx.In(expand::kY), a));
  PC_ASSIGN_OR_RETURN(const int64_t* map, up.Put(ctx, 0, ExpandMap(p)));
  return cuda::Launched(cuda::ScatterAddRows<T>(ctx.In(expand::kGradDOut).data<T>(), map, p.out_rows,
                                                RowWidth(x.dims()), x.dims()[0], dx->data<T>(), cuda::Stream(ctx)),
                        "sequence_expand_grad");
}

template <class T>
Status PadCuda(KernelContext& ctx, const PadAttrs& a, Uploads& up) {
  const Tensor& x = ctx.In(pad::kX);
  const Tensor& pv = ctx.In(pad::kPadValue);
  PC_ASSIGN_OR_RETURN(PadPlan p, PlanPad(x, pv, a));
  const auto* seq = p.seq;
  const int64_t n = p.sequences, w = p.width, len = p.length;
  PC_RETURN_IF_ERROR(ctx.ResizeOut(pad::kOut, p.out, x.dtype()));
  std::vector<int64_t> map(n * len, -1), lengths(n);
  for (int64_t s = 0; s < n; ++s) {
    lengths[s] = static_cast<int64_t>((*seq)[s + 1] - (*seq)[s]);
    for (int64_t k = 0; k < lengths[s]; ++k) map[s * len + k] = static_cast<int64_t>((*seq)[s]) + k;
  }
  PC_ASSIGN_OR_RETURN(const int64_t* dmap, up.Put(ctx, 0, map));
  if (ctx.OutOpt(pad::kLength)) {
    PC_RETURN_IF_ERROR(ctx.ResizeOut(pad::kLength, Dims{n}, DType::kInt64));
    PC_ASSIGN_OR_RETURN(const int64_t* dlen, up.Put(ctx, 1, lengths));
    PC_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(ctx.Out(pad::kLength).data<int64_t>(), dlen, n * sizeof(int64_t),
                                            cudaMemcpyDeviceToDevice, cuda::Stream(ctx)));
  }
  return cuda::Launched(cuda::GatherRows<T>(x.data<T>(), dmap, n * len, w, pv.data<T>(), pv.numel(),
                                            ctx.Out(pad::kOut).data<T>(), cuda::Stream(ctx)),
                        "sequence_pad");
}

template <class T>
Status PadGradCuda(KernelContext& ctx, const PadAttrs&, Uploads& up) {
  Tensor* dx = ctx.OutOpt(pad::kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(pad::kX);
  PC_ASSIGN_OR_RETURN(const auto* seq, Sequences(x, "sequence_pad_grad", "X"));
  const Tensor& dout = ctx.In(pad::kGradDOut);
  const int64_t len = dout.dims().rank() > 1 ? dout.dims()[1] : 0;
  std::vector<int64_t> map(seq->back());
  for (size_t s = 0; s + 1 < seq->size(); ++s)
    for (uint64_t r = (*seq)[s]; r < (*seq)[s + 1]; ++r) map[r] = static_cast<int64_t>(s * len + (r - (*seq)[s]));
  PC_ASSIGN_OR_RETURN(const int64_t* dmap, up.Put(ctx, 0, map));
  return cuda::Launched(cuda::GatherRows<T>(dout.data<T>(), dmap, x.dims()[0], RowWidth(x.dims()), nullptr, 0,
                                            dx->data<T>(), cuda::Stream(ctx)),
                        "sequence_pad_grad");
}

/// sequence_unpad's lengths, copied from the device, checked against X's [batch, max_length].
StatusOr<std::vector<int64_t>> UnpadLengths(KernelContext& ctx, const Tensor& x, const Tensor& length) {
  PC_ASSIGN_OR_RETURN(auto lens, cuda::DeviceValues<int64_t>(cuda::Cuda(ctx), length, "Length"));
  if (static_cast<int64_t>(lens.size()) != x.dims()[0])
    return MakeError(ErrorCode::kRuntime, "sequence_unpad: Length has {} entries but X has {} sequences", lens.size(),
                     x.dims()[0]);
  for (size_t i = 0; i < lens.size(); ++i)
    if (lens[i] < 0 || lens[i] > x.dims()[1])
      return MakeError(ErrorCode::kRuntime, "sequence_unpad: Length[{}] = {} is outside [0, {}] (X's padded length)", i,
                       lens[i], x.dims()[1]);
  return lens;
}

template <class T>
Status UnpadCuda(KernelContext& ctx, const NoAttrs&, Uploads& up) {
  const Tensor& x = ctx.In(unpad::kX);
  PC_ASSIGN_OR_RETURN(auto lens, UnpadLengths(ctx, x, ctx.In(unpad::kLength)));
  const int64_t max_len = x.dims()[1], w = x.dims().rank() > 2 ? x.dims().Product(2, x.dims().rank()) : 1;
  runtime::LoD lod{{0}};
  std::vector<int64_t> map;
  for (size_t s = 0; s < lens.size(); ++s) {
    lod[0].push_back(lod[0].back() + static_cast<uint64_t>(lens[s]));
    for (int64_t k = 0; k < lens[s]; ++k) map.push_back(static_cast<int64_t>(s) * max_len + k);
  }
  Dims od{static_cast<int64_t>(map.size())};
  for (int d = 2; d < x.dims().rank(); ++d) od.push_back(x.dims()[d]);
  if (x.dims().rank() == 2) od.push_back(1);
  PC_RETURN_IF_ERROR(ctx.ResizeOut(unpad::kOut, od, x.dtype()));
  PC_ASSIGN_OR_RETURN(const int64_t* dmap, up.Put(ctx, 0, map));
  Tensor& out = ctx.Out(unpad::kOut);
  out.mutable_lod() = std::move(lod);
  return cuda::Launched(cuda::GatherRows<T>(x.data<T>(), dmap, static_cast<int64_t>(map.size()), w, nullptr, 0,
                                            out.data<T>(), cuda::Stream(ctx)),
                        "sequence_unpad");
}

template <class T>
Status UnpadGradCuda(KernelContext& ctx, const NoAttrs&, Uploads& up) {
  Tensor* dx = ctx.OutOpt(unpad::kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(unpad::kX);
  PC_ASSIGN_OR_RETURN(auto lens, UnpadLengths(ctx, x, ctx.In(unpad::kLength)));
  const int64_t max_len = x.dims()[1], w = x.dims().rank() > 2 ? x.dims().Product(2, x.dims().rank()) : 1;
  std::vector<int64_t> map(lens.size() * max_len, -1);
  int64_t at = 0;
  for (size_t s = 0; s < lens.size(); ++s)
    for (int64_t k = 0; k < lens[s]; ++k) map[s * max_len + k] = at++;
  PC_ASSIGN_OR_RETURN(const int64_t* dmap, up.Put(ctx, 0, map));
  return cuda::Launched(cuda::GatherRows<T>(ctx.In(unpad::kGradDOut).data<T>(), dmap, static_cast<int64_t>(map.size()),
                                            w, nullptr, 0, dx->data<T>(), cuda::Stream(ctx)),
                        "sequence_unpad_grad");
}

template <class T>
Status Reverse(KernelContext& ctx, Uploads& up, const Tensor& x, const T* in, T* out, std::string_view op) {
  PC_ASSIGN_OR_RETURN(const auto* seq, Sequences(x, op, "X"));
  PC_ASSIGN_OR_RETURN(const int64_t* dmap, up.Put(ctx, 0, ReverseMap(*seq)));
  return cuda::Launched(
      cuda::GatherRows<T>(in, dmap, x.dims()[0], RowWidth(x.dims()), nullptr, 0, out, cuda::Stream(ctx)),
      "sequence_reverse");
}

template <class T>
Status ReverseCuda(KernelContext& ctx, const NoAttrs&, Uploads& up) {
  const Tensor& x = ctx.In(reverse::kX);
  return Reverse<T>(ctx, up, x, x.data<T>(), ctx.Out(reverse::kY).data<T>(), "sequence_reverse");
}

template <class T>
Status ReverseGradCuda(KernelContext& ctx, const NoAttrs&, Uploads& up) {
  Tensor* dx = ctx.OutOpt(reverse::kDX);
  if (dx == nullptr) return Status::OK();
  return Reverse<T>(ctx, up, ctx.In(reverse::kX), ctx.In(reverse::kGradDY).data<T>(), dx->data<T>(),
                    "sequence_reverse_grad");
}

/// The mask is built on the host from the lengths (which decide its shape) and uploaded.
Status MaskCuda(KernelContext& ctx, const MaskAttrs& a, Uploads&) {
  const Tensor& x = ctx.In(mask::kX);
  PC_ASSIGN_OR_RETURN(auto lens, cuda::DeviceValues<int64_t>(cuda::Cuda(ctx), x, "X"));
  int64_t maxlen = a.maxlen;
  if (const Tensor* m = ctx.InOpt(mask::kMaxLenTensor)) {
    PC_ASSIGN_OR_RETURN(auto v, cuda::DeviceValues<int64_t>(cuda::Cuda(ctx), *m, "MaxLenTensor"));
    if (v.size() != 1) return MakeError(ErrorCode::kRuntime, "sequence_mask: MaxLenTensor must hold one value");
    maxlen = v[0];
  }
  if (maxlen < 0) maxlen = lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end());
  PC_ASSIGN_OR_RETURN(DType out, DTypeFromProto(a.out_dtype));
  Dims yd = x.dims();
  yd.push_back(maxlen);
  PC_RETURN_IF_ERROR(ctx.ResizeOut(mask::kY, yd, out));
  Tensor& y = ctx.Out(mask::kY);
  std::vector<std::byte> host(y.nbytes());
  PC_RETURN_IF_ERROR(VisitDType(out, [&]<class T>() {
    T* p = reinterpret_cast<T*>(host.data());
    for (size_t i = 0; i < lens.size(); ++i)
      for (int64_t j = 0; j < maxlen; ++j) p[i * maxlen + j] = static_cast<T>(j < lens[i] ? 1 : 0);
  }));
  if (!host.empty())
    PC_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(y.raw_data(), host.data(), host.size(), cudaMemcpyHostToDevice, cuda::Stream(ctx)));
  return Status::OK();
}

template <class Attrs, template <class> class F>
Status AddFloat(OpRegistry& r, const char* op) {
  PC_RETURN_IF_ERROR(r.AddKernel(op, DeviceType::kCUDA, DType::kFloat32, Make<Attrs>(F<float>::fn)));
  return r.AddKernel(op, DeviceType::kCUDA, DType::kFloat64, Make<Attrs>(F<double>::fn));
}

#define PC_SEQ_FN(Name, Fn)           \
  template <class T>                  \
  struct Name {                       \
    static constexpr auto fn = Fn<T>; \
  };
PC_SEQ_FN(PoolFn, PoolCuda)
PC_SEQ_FN(PoolGradFn, PoolGradCuda)
PC_SEQ_FN(SoftmaxFn, SoftmaxCuda)
PC_SEQ_FN(SoftmaxGradFn, SoftmaxGradCuda)
PC_SEQ_FN(ExpandFn, ExpandCuda)
PC_SEQ_FN(ExpandGradFn, ExpandGradCuda)
PC_SEQ_FN(PadFn, PadCuda)
PC_SEQ_FN(PadGradFn, PadGradCuda)
PC_SEQ_FN(UnpadFn, UnpadCuda)
PC_SEQ_FN(UnpadGradFn, UnpadGradCuda)
PC_SEQ_FN(ReverseFn, ReverseCuda)
PC_SEQ_FN(ReverseGradFn, ReverseGradCuda)
#undef PC_SEQ_FN

}  // namespace

Status RegisterSequenceCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR((AddFloat<PoolAttrs, PoolFn>(r, "sequence_pool")));
  PC_RETURN_IF_ERROR((AddFloat<PoolAttrs, PoolGradFn>(r, "sequence_pool_grad")));
  PC_RETURN_IF_ERROR((AddFloat<NoAttrs, SoftmaxFn>(r, "sequence_softmax")));
  PC_RETURN_IF_ERROR((AddFloat<NoAttrs, SoftmaxGradFn>(r, "sequence_softmax_grad")));
  PC_RETURN_IF_ERROR((AddFloat<ExpandAttrs, ExpandFn>(r, "sequence_expand")));
  PC_RETURN_IF_ERROR((AddFloat<ExpandAttrs, ExpandGradFn>(r, "sequence_expand_grad")));
  PC_RETURN_IF_ERROR((AddFloat<PadAttrs, PadFn>(r, "sequence_pad")));
  PC_RETURN_IF_ERROR((AddFloat<PadAttrs, PadGradFn>(r, "sequence_pad_grad")));
  PC_RETURN_IF_ERROR((AddFloat<NoAttrs, UnpadFn>(r, "sequence_unpad")));
  PC_RETURN_IF_ERROR((AddFloat<NoAttrs, UnpadGradFn>(r, "sequence_unpad_grad")));
  PC_RETURN_IF_ERROR((AddFloat<NoAttrs, ReverseFn>(r, "sequence_reverse")));
  PC_RETURN_IF_ERROR((AddFloat<NoAttrs, ReverseGradFn>(r, "sequence_reverse_grad")));
  return r.AddKernel("sequence_mask", DeviceType::kCUDA, DType::kFloat32, Make<MaskAttrs>(MaskCuda));
}

}  // namespace paddlec::ops
