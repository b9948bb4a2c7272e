// The sequence ops (PaddlePaddle's sequence_ops) on the CPU, with their gradients: pooling, softmax,
// expansion, padding and unpadding, reversal within sequences, and length masks. Every op reads the
// sequences from the last LoD level of its input (sequence_slots.h) and sets its outputs' LoD itself
// (OpBuilder::LoDFromKernel), since the row count of its outputs depends on the offsets.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/cpu_kernels.h"
#include "sequence/sequence_slots.h"

namespace paddlec::ops {
namespace {

using namespace sequence;  // NOLINT: the family's shared slots and geometry

// ---- shape functions: compile-time dims (rows known only at run time) -------------------------

Status InferPool(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(pool::kX);
  if (x.rank() < 1) return ctx.Fail("X has shape {} but sequence_pool needs rows (rank >= 1)", x.ToString());
  ctx.SetOutput(pool::kOut, WithRows(x, -1), ctx.InputDType(pool::kX));
  ctx.SetOutput(pool::kMaxIndex, WithRows(x, -1), DType::kInt32);
  return Status::OK();
}

Status InferPoolGrad(InferShapeContext& ctx) {
  ctx.SetOutput(pool::kDX, ctx.InputDims(pool::kX), ctx.InputDType(pool::kGradDOut));
  return Status::OK();
}

Status InferSoftmax(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(softmax::kX);
  if (x.rank() < 1 || (x.rank() == 2 && x[1] != 1 && x[1] >= 0) || x.rank() > 2)
    return ctx.Fail("X has shape {} but sequence_softmax needs [N] or [N, 1]", x.ToString());
  ctx.ShareDims(softmax::kX, softmax::kOut);
  return Status::OK();
}

Status InferSoftmaxGrad(InferShapeContext& ctx) {
  ctx.SetOutput(softmax::kDX, ctx.InputDims(softmax::kGradX), ctx.InputDType(softmax::kGradDOut));
  return Status::OK();
}

Status InferExpand(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(expand::kX);
  if (x.rank() < 1) return ctx.Fail("X has shape {} but sequence_expand needs rows (rank >= 1)", x.ToString());
  ctx.SetOutput(expand::kOut, WithRows(x, -1), ctx.InputDType(expand::kX));
  return Status::OK();
}

Status InferExpandGrad(InferShapeContext& ctx) {
  ctx.SetOutput(expand::kDX, ctx.InputDims(expand::kX), ctx.InputDType(expand::kGradDOut));
  return Status::OK();
}

Status InferPad(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(pad::kX);
  if (x.rank() < 1) return ctx.Fail("X has shape {} but sequence_pad needs rows (rank >= 1)", x.ToString());
  const PadAttrs a = PadAttrs::Decode(ctx.attrs());
  Dims out{-1, a.padded_length > 0 ? a.padded_length : -1};
  for (int d = 1; d < x.rank(); ++d) out.push_back(x[d]);
  ctx.SetOutput(pad::kOut, out, ctx.InputDType(pad::kX));
  ctx.SetOutput(pad::kLength, Dims{-1}, DType::kInt64);
  return Status::OK();
}

Status InferPadGrad(InferShapeContext& ctx) {
  ctx.SetOutput(pad::kDX, ctx.InputDims(pad::kX), ctx.InputDType(pad::kGradDOut));
  return Status::OK();
}

Status InferUnpad(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(unpad::kX);
  if (x.rank() < 2)
    return ctx.Fail("X has shape {} but sequence_unpad needs [batch, max_length, ...] (rank >= 2)", x.ToString());
  Dims out{-1};
  for (int d = 2; d < x.rank(); ++d) out.push_back(x[d]);
  if (x.rank() == 2) out.push_back(1);
  ctx.SetOutput(unpad::kOut, out, ctx.InputDType(unpad::kX));
  return Status::OK();
}

Status InferUnpadGrad(InferShapeContext& ctx) {
  ctx.SetOutput(unpad::kDX, ctx.InputDims(unpad::kX), ctx.InputDType(unpad::kGradDOut));
  return Status::OK();
}

Status InferReverse(InferShapeContext& ctx) {
  ctx.ShareDims(reverse::kX, reverse::kY);
  return Status::OK();
}

Status InferReverseGrad(InferShapeContext& ctx) {
  ctx.SetOutput(reverse::kDX, ctx.InputDims(reverse::kX), ctx.InputDType(reverse::kGradDY));
  return Status::OK();
}

Status InferMask(InferShapeContext& ctx) {
  const MaskAttrs a = MaskAttrs::Decode(ctx.attrs());
  const DType t = ctx.InputDType(mask::kX);
  if (t != DType::kInt32 && t != DType::kInt64)
    return ctx.Fail("X is {} but sequence_mask needs int32 or int64 lengths", DTypeName(t));
  auto out = DTypeFromProto(a.out_dtype);
  if (!out.ok()) return ctx.Fail("out_dtype {} is not a tensor element type", a.out_dtype);
  Dims y = ctx.InputDims(mask::kX);
  if (y.rank() >= kMaxRank) return ctx.Fail("X has rank {}: Y would exceed the maximum rank", y.rank());
  y.push_back(a.maxlen > 0 && !ctx.HasInput(mask::kMaxLenTensor) ? a.maxlen : -1);
  ctx.SetOutput(mask::kY, y, *out);
  return Status::OK();
}

// ---- kernels ---------------------------------------------------------------------------------

template <class T>
Status PoolCpu(KernelContext& ctx, const PoolAttrs& a) {
  const Tensor& x = ctx.In(pool::kX);
  PC_ASSIGN_OR_RETURN(const PoolPlan plan, PlanPool(ctx));
  const auto* seq = plan.seq;
  const int64_t n = plan.sequences, w = plan.width;
  Tensor* index = plan.index;
  const T* xs = x.data<T>();
  T* out = ctx.Out(pool::kOut).data<T>();
  int32_t* idx = index ? index->data<int32_t>() : nullptr;
  ParallelFor(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s) {
      const int64_t lo = static_cast<int64_t>((*seq)[s]), hi = static_cast<int64_t>((*seq)[s + 1]);
      for (int64_t j = 0; j < w; ++j) {
        T v = static_cast<T>(a.pad_value);
        int32_t at = -1;
        if (hi > lo) {
          switch (a.type) {
            case PoolType::kFirst:
              v = xs[lo * w + j], at = static_cast<int32_t>(lo);
              break;
            case PoolType::kLast:
              v = xs[(hi - 1) * w + j], at = static_cast<int32_t>(hi - 1);
              break;
            case PoolType::kMax:
              v = xs[lo * w + j], at = static_cast<int32_t>(lo);
              for (int64_t r = lo + 1; r < hi; ++r)
                if (xs[r * w + j] > v) v = xs[r * w + j], at = static_cast<int32_t>(r);
              break;
            default: {
              T sum = 0;
              for (int64_t r = lo; r < hi; ++r) sum += xs[r * w + j];
              v = static_cast<T>(sum * a.Scale(hi - lo));
            }
          }
        }
        out[s * w + j] = v;
        if (idx) idx[s * w + j] = at;
      }
    }
  });
  ctx.Out(pool::kOut).mutable_lod() = OuterLoD(x.lod());
  return Status::OK();
}

template <class T>
Status PoolGradCpu(KernelContext& ctx, const PoolAttrs& a) {
  Tensor* dx = ctx.OutOpt(pool::kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(pool::kX);
  PC_ASSIGN_OR_RETURN(const auto* seq, Sequences(x, "sequence_pool_grad", "X"));
  const int64_t n = static_cast<int64_t>(seq->size()) - 1, w = RowWidth(x.dims());
  const T* dout = ctx.In(pool::kGradDOut).data<T>();
  const Tensor* index = ctx.InOpt(pool::kGradMaxIndex);
  if (a.type == PoolType::kMax && index == nullptr)
    return MakeError(ErrorCode::kRuntime, "sequence_pool_grad with pooltype MAX needs MaxIndex");
  T* g = dx->data<T>();
  std::fill(g, g + dx->numel(), T(0));
  for (int64_t s = 0; s < n; ++s) {
    const int64_t lo = static_cast<int64_t>((*seq)[s]), hi = static_cast<int64_t>((*seq)[s + 1]);
    if (hi == lo) continue;
    for (int64_t j = 0; j < w; ++j) {
      const T d = dout[s * w + j];
      switch (a.type) {
        case PoolType::kFirst:
          g[lo * w + j] += d;
          break;
        case PoolType::kLast:
          g[(hi - 1) * w + j] += d;
          break;
        case PoolType::kMax:
          g[static_cast<int64_t>(index->data<int32_t>()[s * w + j]) * w + j] += d;
          break;
        default: {
          const T scaled = static_cast<T>(d * a.Scale(hi - lo));
          for (int64_t r = lo; r < hi; ++r) g[r * w + j] += scaled;
        }
      }
    }
  }
  return Status::OK();
}

template <class T>
Status SoftmaxCpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(softmax::kX);
  PC_ASSIGN_OR_RETURN(const auto* seq, Sequences(x, "sequence_softmax", "X"));
  const T* xs = x.data<T>();
  T* y = ctx.Out(softmax::kOut).data<T>();
  for (size_t s = 0; s + 1 < seq->size(); ++s) {
    const uint64_t lo = (*seq)[s], hi = (*seq)[s + 1];
    if (hi == lo) continue;
    T m = *std::max_element(xs + lo, xs + hi), sum = 0;
    for (uint64_t r = lo; r < hi; ++r) sum += (y[r] = std::exp(xs[r] - m));
    for (uint64_t r = lo; r < hi; ++r) y[r] /= sum;
  }
  return Status::OK();
}

template <class T>
Status SoftmaxGradCpu(KernelContext& ctx) {
  Tensor* dx = ctx.OutOpt(softmax::kDX);
  if (dx == nullptr) return Status::OK();
  PC_ASSIGN_OR_RETURN(const auto* seq, Sequences(ctx.In(softmax::kGradX), "sequence_softmax_grad", "X"));
  const T* y = ctx.In(softmax::kGradOut).data<T>();
  const T* dy = ctx.In(softmax::kGradDOut).data<T>();
  T* g = dx->data<T>();
  for (size_t s = 0; s + 1 < seq->size(); ++s) {
    const uint64_t lo = (*seq)[s], hi = (*seq)[s + 1];
    T dot = 0;
    for (uint64_t r = lo; r < hi; ++r) dot += y[r] * dy[r];
    for (uint64_t r = lo; r < hi; ++r) g[r] = y[r] * (dy[r] - dot);
  }
  return Status::OK();
}

template <class T>
Status ExpandCpu(KernelContext& ctx, const ExpandAttrs& a) {
  const Tensor& x = ctx.In(expand::kX);
  PC_ASSIGN_OR_RETURN(ExpandPlan p, PlanExpand(x, ctx.In(expand::kY), a));
  PC_RETURN_IF_ERROR(ctx.ResizeOut(expand::kOut, WithRows(x.dims(), p.out_rows), x.dtype()));
  const int64_t w = RowWidth(x.dims());
  Tensor& out = ctx.Out(expand::kOut);
  for (size_t c = 0; c < p.source.size(); ++c) {
    const uint64_t from = p.x_offsets[p.source[c]], len = p.out_offsets[c + 1] - p.out_offsets[c];
    if (len) std::memcpy(out.data<T>() + p.out_offsets[c] * w, x.data<T>() + from * w, len * w * sizeof(T));
  }
  out.mutable_lod() = p.out_lod;
  return Status::OK();
}

template <class T>
Status ExpandGradCpu(KernelContext& ctx, const ExpandAttrs& a) {
  Tensor* dx = ctx.OutOpt(expand::kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(expand::kX);
  PC_ASSIGN_OR_RETURN(ExpandPlan p, PlanExpand(x, ctx.In(expand::kY), a));
  const int64_t w = RowWidth(x.dims());
  const T* dout = ctx.In(expand::kGradDOut).data<T>();
  T* g = dx->data<T>();
  std::fill(g, g + dx->numel(), T(0));
  for (size_t c = 0; c < p.source.size(); ++c) {
    const uint64_t from = p.x_offsets[p.source[c]], len = p.out_offsets[c + 1] - p.out_offsets[c];
    for (uint64_t k = 0; k < len * w; ++k) g[from * w + k] += dout[p.out_offsets[c] * w + k];
  }
  return Status::OK();
}

template <class T>
Status PadCpu(KernelContext& ctx, const PadAttrs& a) {
  const Tensor& x = ctx.In(pad::kX);
  const Tensor& pv = ctx.In(pad::kPadValue);
  PC_ASSIGN_OR_RETURN(PadPlan p, PlanPad(x, pv, a));
  const auto* seq = p.seq;
  const int64_t n = p.sequences, w = p.width, len = p.length;
  PC_RETURN_IF_ERROR(ctx.ResizeOut(pad::kOut, p.out, x.dtype()));
  if (ctx.OutOpt(pad::kLength)) PC_RETURN_IF_ERROR(ctx.ResizeOut(pad::kLength, Dims{n}, DType::kInt64));
  T* out = ctx.Out(pad::kOut).data<T>();
  const T* xs = x.data<T>();
  for (int64_t s = 0; s < n; ++s) {
    const int64_t lo = static_cast<int64_t>((*seq)[s]), l = static_cast<int64_t>((*seq)[s + 1]) - lo;
    std::memcpy(out + s * len * w, xs + lo * w, l * w * sizeof(T));
    for (int64_t k = l * w; k < len * w; ++k) out[s * len * w + k] = pv.data<T>()[pv.numel() == 1 ? 0 : k % w];
    if (Tensor* lt = ctx.OutOpt(pad::kLength)) lt->data<int64_t>()[s] = l;
  }
  return Status::OK();
}

template <class T>
Status PadGradCpu(KernelContext& ctx, const PadAttrs& a) {
  Tensor* dx = ctx.OutOpt(pad::kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(pad::kX);
  PC_ASSIGN_OR_RETURN(const auto* seq, Sequences(x, "sequence_pad_grad", "X"));
  const Tensor& dout = ctx.In(pad::kGradDOut);
  const int64_t w = RowWidth(x.dims()), len = dout.dims().rank() > 1 ? dout.dims()[1] : 0;
  for (size_t s = 0; s + 1 < seq->size(); ++s) {
    const uint64_t lo = (*seq)[s], l = (*seq)[s + 1] - lo;
    std::memcpy(dx->data<T>() + lo * w, dout.data<T>() + s * len * w, l * w * sizeof(T));
  }
  return Status::OK();
}

/// The lengths of sequence_unpad (host values), checked against X's [batch, max_length].
StatusOr<std::vector<int64_t>> UnpadLengths(const Tensor& x, const Tensor& length) {
  // A fed Length of another dtype would otherwise be read as int64 past its end (ASan, test_errors.py).
  if (length.dtype() != DType::kInt32 && length.dtype() != DType::kInt64)
    return MakeError(ErrorCode::kRuntime, "sequence_unpad: Length must be int32 or int64, got {}",
                     DTypeName(length.dtype()));
  std::vector<int64_t> lens(length.numel());
  for (int64_t i = 0; i < length.numel(); ++i)
    lens[i] = length.dtype() == DType::kInt32 ? length.data<int32_t>()[i] : length.data<int64_t>()[i];
  const int64_t batch = x.dims()[0], max_len = x.dims()[1];
  if (static_cast<int64_t>(lens.size()) != batch)
    return MakeError(ErrorCode::kRuntime, "sequence_unpad: Length has {} entries but X has {} sequences", lens.size(),
                     batch);
  for (size_t i = 0; i < lens.size(); ++i)
    if (lens[i] < 0 || lens[i] > max_len)
      return MakeError(ErrorCode::kRuntime, "sequence_unpad: Length[{}] = {} is outside [0, {}] (X's padded length)", i,
                       lens[i], max_len);
  return lens;
}

template <class T>
Status UnpadCpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(unpad::kX);
  PC_ASSIGN_OR_RETURN(auto lens, UnpadLengths(x, ctx.In(unpad::kLength)));
  const int64_t max_len = x.dims()[1], w = x.dims().rank() > 2 ? x.dims().Product(2, x.dims().rank()) : 1;
  runtime::LoD lod{{0}};
  for (int64_t l : lens) lod[0].push_back(lod[0].back() + static_cast<uint64_t>(l));
  Dims od{static_cast<int64_t>(lod[0].back())};
  for (int d = 2; d < x.dims().rank(); ++d) od.push_back(x.dims()[d]);
  if (x.dims().rank() == 2) od.push_back(1);
  PC_RETURN_IF_ERROR(ctx.ResizeOut(unpad::kOut, od, x.dtype()));
  Tensor& out = ctx.Out(unpad::kOut);
  for (size_t s = 0; s < lens.size(); ++s)
    std::memcpy(out.data<T>() + lod[0][s] * w, x.data<T>() + s * max_len * w, lens[s] * w * sizeof(T));
  out.mutable_lod() = std::move(lod);
  return Status::OK();
}

template <class T>
Status UnpadGradCpu(KernelContext& ctx) {
  Tensor* dx = ctx.OutOpt(unpad::kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& x = ctx.In(unpad::kX);
  PC_ASSIGN_OR_RETURN(auto lens, UnpadLengths(x, ctx.In(unpad::kLength)));
  const int64_t max_len = x.dims()[1], w = x.dims().rank() > 2 ? x.dims().Product(2, x.dims().rank()) : 1;
  const T* dout = ctx.In(unpad::kGradDOut).data<T>();
  std::fill(dx->data<T>(), dx->data<T>() + dx->numel(), T(0));
  int64_t at = 0;
  for (size_t s = 0; s < lens.size(); ++s, at += lens[s - 1])
    std::memcpy(dx->data<T>() + s * max_len * w, dout + at * w, lens[s] * w * sizeof(T));
  return Status::OK();
}

/// y = x with the rows of every sequence in reverse order.
template <class T>
Status ReverseRows(const Tensor& x, const T* in, T* out, std::string_view op) {
  PC_ASSIGN_OR_RETURN(const auto* seq, Sequences(x, op, "X"));
  const int64_t w = RowWidth(x.dims());
  for (size_t s = 0; s + 1 < seq->size(); ++s) {
    const uint64_t lo = (*seq)[s], hi = (*seq)[s + 1];
    for (uint64_t r = lo; r < hi; ++r) std::memcpy(out + (lo + hi - 1 - r) * w, in + r * w, w * sizeof(T));
  }
  return Status::OK();
}

template <class T>
Status ReverseCpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(reverse::kX);
  return ReverseRows<T>(x, x.data<T>(), ctx.Out(reverse::kY).data<T>(), "sequence_reverse");
}

template <class T>
Status ReverseGradCpu(KernelContext& ctx) {
  Tensor* dx = ctx.OutOpt(reverse::kDX);
  if (dx == nullptr) return Status::OK();
  return ReverseRows<T>(ctx.In(reverse::kX), ctx.In(reverse::kGradDY).data<T>(), dx->data<T>(),
                        "sequence_reverse_grad");
}

/// Y[..., j] = j < X[...]: the lengths as 0/1 rows of maxlen (the longest length when maxlen is -1).
Status MaskCpu(KernelContext& ctx, const MaskAttrs& a) {
  const Tensor& x = ctx.In(mask::kX);
  std::vector<int64_t> lens(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i)
    lens[i] = x.dtype() == DType::kInt32 ? x.data<int32_t>()[i] : x.data<int64_t>()[i];
  int64_t maxlen = a.maxlen;
  if (const Tensor* m = ctx.InOpt(mask::kMaxLenTensor)) {
    if (m->numel() != 1) return MakeError(ErrorCode::kRuntime, "sequence_mask: MaxLenTensor must hold one value");
    maxlen = m->dtype() == DType::kInt32 ? m->data<int32_t>()[0] : m->data<int64_t>()[0];
  }
  if (maxlen < 0) maxlen = lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end());
  PC_ASSIGN_OR_RETURN(DType out, DTypeFromProto(a.out_dtype));
  Dims yd = x.dims();
  yd.push_back(maxlen);
  PC_RETURN_IF_ERROR(ctx.ResizeOut(mask::kY, yd, out));
  Tensor& y = ctx.Out(mask::kY);
  return VisitDType(out, [&]<class T>() {
    for (size_t i = 0; i < lens.size(); ++i)
      for (int64_t j = 0; j < maxlen; ++j) y.data<T>()[i * maxlen + j] = static_cast<T>(j < lens[i] ? 1 : 0);
  });
}

/// Registers the float and double CPU kernels of `op`.
#define PC_SEQ_FLOAT_KERNELS(builder, Fn)                               \
  (builder)                                                             \
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(Fn<float>)) \
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(Fn<double>))

}  // namespace

void RegisterSequenceOps(OpRegistry& r) {
  PC_SEQ_FLOAT_KERNELS(
      r.Add("sequence_pool")
          .Doc("Pools each sequence of X (the last LoD level) into one row: SUM, AVERAGE, SQRT (sum / sqrt(length)), "
               "MAX, FIRST or LAST. Out keeps X's outer LoD levels; empty sequences give pad_value.")
          .Input(pool::kX, "The sequence batch [N, ...] with LoD.")
          .Output(pool::kOut, "One row per sequence [num_sequences, ...].")
          .Output(pool::kMaxIndex, "int32 row of each maximum (MAX only; -1 for empty sequences).",
                  kIntermediate | kDispensable)
          .Attr("is_test", false, "Inference mode (MaxIndex is not needed); ignored.")
          .Attr("pooltype", "AVERAGE", "How to pool a sequence.")
          .AllowedValues({"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"})
          .Attr("pad_value", 0.0f, "The value of the rows of empty sequences.")
          .InferShape(InferPool)
          .OutputDimsFromKernel()
          .LoDFromKernel(pool::kX, -1)
          .Grad(),
      PoolCpu);
  PC_SEQ_FLOAT_KERNELS(r.Add("sequence_pool_grad")
                           .GradOf("sequence_pool")
                           .Doc("Gradient of sequence_pool: each pooled row's gradient spread back over its sequence.")
                           .Input(pool::kX, "The forward input (its LoD and shape).")
                           .Input(pool::kGradMaxIndex, "The forward MaxIndex (MAX only).", kDispensable)
                           .Input(pool::kGradDOut, "Gradient of the loss with respect to Out.")
                           .Output(pool::kDX, "Gradient of the loss with respect to X.")
                           .InferShape(InferPoolGrad),
                       PoolGradCpu);

  PC_SEQ_FLOAT_KERNELS(r.Add("sequence_softmax")
                           .Doc("Softmax over the rows of each sequence of X ([N] or [N, 1], LoD).")
                           .Input(softmax::kX, "The sequence batch [N] or [N, 1] with LoD.")
                           .Output(softmax::kOut, "The per-sequence softmax, shaped like X with its LoD.")
                           .Attr("use_cudnn", false, "Backend hint; ignored.")
                           .ExtraAttr()
                           .Attr("data_format", "AnyLayout", "Layout hint; ignored.")
                           .ExtraAttr()
                           .InferShape(InferSoftmax)
                           .Grad(),
                       SoftmaxCpu);
  PC_SEQ_FLOAT_KERNELS(r.Add("sequence_softmax_grad")
                           .GradOf("sequence_softmax")
                           .Doc("Gradient of sequence_softmax: Out * (Out@GRAD - sum over the sequence of Out * "
                                "Out@GRAD).")
                           .Input(softmax::kGradOut, "The forward output.")
                           .Input(softmax::kGradDOut, "Gradient of the loss with respect to Out.")
                           .Input(softmax::kGradX, "The forward input (its LoD).")
                           .Output(softmax::kDX, "Gradient of the loss with respect to X.")
                           .InferShape(InferSoftmaxGrad)
                           .ShareLoD(softmax::kGradX),
                       SoftmaxGradCpu);

  PC_SEQ_FLOAT_KERNELS(
      r.Add("sequence_expand")
          .Doc("Repeats each sequence of X (each row when X has no LoD) as often as level ref_level of Y's LoD says "
               "(the length of the matching sequence of Y).")
          .Input(expand::kX, "The rows or sequences to repeat.")
          .Input(expand::kY, "The reference batch; only its LoD is read.")
          .Output(expand::kOut, "The repeated rows, with one LoD level.")
          .Attr("ref_level", -1, "The LoD level of Y to expand by; -1 for its last.")
          .InferShape(InferExpand)
          .OutputDimsFromKernel()
          .LoDFromKernel(expand::kY, 0)
          .NoGradInput(expand::kY)
          .Grad(),
      ExpandCpu);
  PC_SEQ_FLOAT_KERNELS(r.Add("sequence_expand_grad")
                           .GradOf("sequence_expand")
                           .Doc("Gradient of sequence_expand: the gradients of every copy of a sequence, summed.")
                           .Input(expand::kX, "The forward input.")
                           .Input(expand::kY, "The forward reference (its LoD).")
                           .Input(expand::kGradDOut, "Gradient of the loss with respect to Out.")
                           .Output(expand::kDX, "Gradient of the loss with respect to X.")
                           .InferShape(InferExpandGrad),
                       ExpandGradCpu);

  PC_SEQ_FLOAT_KERNELS(r.Add("sequence_pad")
                           .Doc("Pads every sequence of X to padded_length rows (the longest when -1) with "
                                "PadValue: Out [num_sequences, padded_length, ...] and the lengths.")
                           .Input(pad::kX, "The sequence batch [N, ...] with LoD.")
                           .Input(pad::kPadValue, "The padding: one value, or one row of X.")
                           .Output(pad::kOut, "The padded batch [num_sequences, padded_length, ...].")
                           .Output(pad::kLength, "int64 length of every sequence [num_sequences].")
                           .Attr("padded_length", -1, "Rows per sequence after padding; -1 for the longest.")
                           .InferShape(InferPad)
                           .OutputDimsFromKernel()
                           .NoLoD()
                           .NoGradInput(pad::kPadValue)
                           .Grad(),
                       PadCpu);
  PC_SEQ_FLOAT_KERNELS(r.Add("sequence_pad_grad")
                           .GradOf("sequence_pad")
                           .Doc("Gradient of sequence_pad: the rows of Out@GRAD that hold sequence rows.")
                           .Input(pad::kX, "The forward input (its LoD and shape).")
                           .Input(pad::kGradDOut, "Gradient of the loss with respect to Out.")
                           .Output(pad::kDX, "Gradient of the loss with respect to X.")
                           .InferShape(InferPadGrad),
                       PadGradCpu);

  PC_SEQ_FLOAT_KERNELS(r.Add("sequence_unpad")
                           .Doc("The inverse of sequence_pad: the first Length[i] rows of every X[i], concatenated "
                                "into a sequence batch with one LoD level.")
                           .Input(unpad::kX, "The padded batch [batch, max_length, ...].")
                           .Input(unpad::kLength, "int64 (or int32) length of every sequence [batch].")
                           .Output(unpad::kOut, "The sequence batch [sum(Length), ...] with LoD.")
                           .InferShape(InferUnpad)
                           .OutputDimsFromKernel()
                           .LoDFromKernel(unpad::kX, 1)
                           .NoGradInput(unpad::kLength)
                           .Grad(),
                       UnpadCpu);
  PC_SEQ_FLOAT_KERNELS(r.Add("sequence_unpad_grad")
                           .GradOf("sequence_unpad")
                           .Doc("Gradient of sequence_unpad: Out@GRAD's rows back in place, zeros in the padding.")
                           .Input(unpad::kX, "The forward input (its shape).")
                           .Input(unpad::kLength, "The forward lengths.")
                           .Input(unpad::kGradDOut, "Gradient of the loss with respect to Out.")
                           .Output(unpad::kDX, "Gradient of the loss with respect to X.")
                           .InferShape(InferUnpadGrad),
                       UnpadGradCpu);

  PC_SEQ_FLOAT_KERNELS(r.Add("sequence_reverse")
                           .Doc("Reverses the order of the rows within each sequence of X.")
                           .Input(reverse::kX, "The sequence batch [N, ...] with LoD.")
                           .Output(reverse::kY, "X with every sequence reversed, and X's LoD.")
                           .InferShape(InferReverse)
                           .Grad(),
                       ReverseCpu);
  PC_SEQ_FLOAT_KERNELS(r.Add("sequence_reverse_grad")
                           .GradOf("sequence_reverse")
                           .Doc("Gradient of sequence_reverse: Y@GRAD reversed within X's sequences.")
                           .Input(reverse::kX, "The forward input (its LoD).")
                           .Input(reverse::kGradDY, "Gradient of the loss with respect to Y.")
                           .Output(reverse::kDX, "Gradient of the loss with respect to X.")
                           .InferShape(InferReverseGrad),
                       ReverseGradCpu);

  r.Add("sequence_mask")
      .Doc("Y[..., j] = (j < X[...]): the lengths X as rows of maxlen 0/1 values (maxlen -1: the longest length).")
      .Input(mask::kX, "int32 or int64 lengths, any shape.")
      .Input(mask::kMaxLenTensor, "The row length as a tensor (overrides maxlen).", kDispensable)
      .Output(mask::kY, "The mask, X.dims + [maxlen], of out_dtype.")
      .Attr("maxlen", -1, "Row length of the mask; -1 for the longest length in X.")
      .Attr("out_dtype", 3, "VarType of Y (default INT64).")
      .InferShape(InferMask)
      .OutputDimsFromKernel()
      .NoLoD()
      .NoGradient()
      // One kernel for every length and mask dtype (it reads and writes them through VisitDType).
      .KernelDTypeFixed(DType::kFloat32)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(MaskCpu));
}

}  // namespace paddlec::ops
