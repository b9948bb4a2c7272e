// Broadcasting copies: expand_v2 and tile, and their gradients (sums over the broadcast axes).
//
// Both walk Out once with a coalesced StridedLoop (math/broadcast.h) over the views of
// expand_slots.h: an innermost run that reads X contiguously is one memcpy, one that reads a
// broadcast element is a fill; elements move as unsigned integers of their size, so every dtype
// shares one kernel. The gradients are reduce_sum's loop with X@GRAD broadcast along the same axes
// (ReduceSpans: parallel and deterministic).
#include <cstring>

#include "common/data_dtypes.h"
#include "math/broadcast.h"
#include "math/expand_slots.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using namespace expand;  // NOLINT: the concept's shared slots and views

/// Tensor-valued shape attributes, which paddlec does not take yet; OK when the slot is unbound.
Status RejectTensorAttr(InferShapeContext& ctx, InSlot slot, std::string_view attr) {
  if (!ctx.HasInput(slot)) return Status::OK();
  return ctx.Fail("input {} (bound to '{}') is not supported yet: give `{}` as an attribute instead", slot.name,
                  ctx.InputName(slot), attr);
}

template <bool kTile>
Status InferBroadcast(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(RejectTensorAttr(ctx, kTile ? kRepeatTimes : kShape, kTile ? "repeat_times" : "shape"));
  PC_RETURN_IF_ERROR(
      RejectTensorAttr(ctx, kTile ? kRepeatTimesTensor : kExpandShapesTensor, kTile ? "repeat_times" : "shape"));
  auto v = ViewOf(ctx.InputDims(kX), AttrsOf<kTile>::Decode(ctx.attrs()));
  if (!v.ok()) return ctx.Fail("{}", v.error().message());
  ctx.SetOutput(kOut, v->out, ctx.InputDType(kX));
  return Status::OK();
}

template <bool kTile>
Status InferBroadcastGrad(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(RejectTensorAttr(ctx, kTile ? kGradRepeatTimes : kGradShape, kTile ? "repeat_times" : "shape"));
  PC_RETURN_IF_ERROR(RejectTensorAttr(ctx, kTile ? kGradRepeatTimesTensor : kGradExpandShapesTensor,
                                      kTile ? "repeat_times" : "shape"));
  const Dims x = ctx.InputDims(kGradX), dout = ctx.InputDims(kGradDOut);
  auto v = ViewOf(x, AttrsOf<kTile>::Decode(ctx.attrs()));
  if (!v.ok()) return ctx.Fail("{}", v.error().message());
  if (!DimsMatch(dout, v->out))  // the kernels read Out@GRAD through Out's view
    return ctx.Fail("Out@GRAD has shape {} but Out has shape {}: they must match", dout.ToString(), v->out.ToString());
  if (ctx.HasOutput(kDX)) ctx.SetOutput(kDX, x, ctx.InputDType(kGradDOut));
  return Status::OK();
}

/// Out = X broadcast over the view, for elements stored as E (the dtype's size).
template <class E>
void BroadcastCopy(const math::StridedLoop<2>& loop, const E* x, E* out) {
  const bool contiguous = loop.inner_stride(1) != 0;
  math::ParallelSpans(loop, [&](const int64_t* off, int64_t len) {
    if (contiguous)
      std::memcpy(out + off[0], x + off[1], static_cast<size_t>(len) * sizeof(E));
    else
      std::fill(out + off[0], out + off[0] + len, x[off[1]]);
  });
}

template <bool kTile>
class BroadcastKernel final : public OpKernel {
 public:
  explicit BroadcastKernel(const KernelInit& init) : attrs_(AttrsOf<kTile>::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    Tensor& out = ctx.Out(kOut);
    if (!(x.dims() == x_dims_)) {
      PC_ASSIGN_OR_RETURN(BroadcastView v, ViewOf(x.dims(), attrs_));
      loop_ = math::MakeLoop<2>(v.out_view, {v.out_view, v.x_view});
      x_dims_ = x.dims();
    }
    if (out.numel() == 0) return Status::OK();
    switch (SizeOf(x.dtype())) {
      case 1:
        BroadcastCopy(loop_, x.data<uint8_t>(), out.data<uint8_t>());
        break;
      case 2:
        BroadcastCopy(loop_, x.data<uint16_t>(), out.data<uint16_t>());
        break;
      case 4:
        BroadcastCopy(loop_, x.data<uint32_t>(), out.data<uint32_t>());
        break;
      default:
        BroadcastCopy(loop_, x.data<uint64_t>(), out.data<uint64_t>());
        break;
    }
    return Status::OK();
  }

 private:
  AttrsOf<kTile> attrs_;
  Dims x_dims_{-2};  // the dims loop_ was built for (-2: none yet)
  math::StridedLoop<2> loop_;
};

/// X@GRAD = Out@GRAD summed over the broadcast axes of the view.
template <class T, bool kTile>
class BroadcastGradKernel final : public OpKernel {
 public:
  explicit BroadcastGradKernel(const KernelInit& init) : attrs_(AttrsOf<kTile>::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    if (!(dx->dims() == x_dims_)) {
      PC_ASSIGN_OR_RETURN(BroadcastView v, ViewOf(dx->dims(), attrs_));
      loop_ = math::MakeLoop<2>(v.out_view, {v.out_view, v.x_view});
      x_dims_ = dx->dims();
    }
    const T* d = ctx.In(kGradDOut).data<T>();
    T* g = dx->data<T>();
    const bool contiguous = loop_.inner_stride(1) != 0;
    math::ReduceSpans(loop_, 1, g, dx->numel(), scratch_, [&](const int64_t* off, int64_t len, T* base) {
      const T* a = d + off[0];
      T* t = base + off[1];
      if (contiguous) {
        for (int64_t j = 0; j < len; ++j) t[j] += a[j];
      } else {
        t[0] += math::SumRun<T>(len, [&](int64_t j) { return a[j]; });
      }
    });
    return Status::OK();
  }

 private:
  AttrsOf<kTile> attrs_;
  Dims x_dims_{-2};
  math::StridedLoop<2> loop_;
  std::vector<T> scratch_;  // per-thread partial sums
};

template <bool kTile>
void RegisterBroadcast(OpRegistry& r) {
  const char* type = kTile ? "tile" : "expand_v2";
  OpBuilder op = r.Add(type);
  op.Doc(kTile ? "Repeats X along each axis: Out's dim i is X's dim i times repeat_times[i] (the shorter of the two "
                 "lists is padded with leading 1s)."
               : "Broadcasts X to `shape`: X aligns with the trailing entries; -1 keeps X's dimension, and X's size-1 "
                 "dimensions repeat.")
      .Input(kX, "The tensor to broadcast.");
  if (kTile)
    op.Input(kRepeatTimes, "A 1-D int tensor overriding `repeat_times` (not supported yet).", kDispensable)
        .Input(kRepeatTimesTensor, "1-element int tensors overriding `repeat_times` (not supported yet).",
               kDuplicable | kDispensable)
        .Output(kOut, "The tiled tensor.")
        .Attr("repeat_times", std::vector<int>{}, "How often to repeat X along each axis (each >= 1).")
        .NoGradInput(kRepeatTimes)
        .NoGradInput(kRepeatTimesTensor);
  else
    op.Input(kShape, "A 1-D int tensor overriding `shape` (not supported yet).", kDispensable)
        .Input(kExpandShapesTensor, "1-element int tensors overriding `shape` (not supported yet).",
               kDuplicable | kDispensable)
        .Output(kOut, "The broadcast tensor.")
        .Attr("shape", std::vector<int>{}, "The target shape; -1 keeps X's dimension.")
        .NoGradInput(kShape)
        .NoGradInput(kExpandShapesTensor);
  op.InferShape(InferBroadcast<kTile>).Grad();

  OpBuilder g = r.Add(std::string(type) + "_grad");
  g.GradOf(type)
      .Doc(fmt::format("Gradient of {}: Out@GRAD summed over the repeated entries onto X's shape.", type))
      .Input(kGradX, "The forward X (its shape only).")
      .Input(kGradDOut, "Gradient of the loss with respect to Out.");
  if (kTile)
    g.Input(kGradRepeatTimes, "The forward RepeatTimes (not supported yet).", kDispensable)
        .Input(kGradRepeatTimesTensor, "The forward repeat_times_tensor (not supported yet).",
               kDuplicable | kDispensable);
  else
    g.Input(kGradShape, "The forward Shape (not supported yet).", kDispensable)
        .Input(kGradExpandShapesTensor, "The forward expand_shapes_tensor (not supported yet).",
               kDuplicable | kDispensable);
  g.Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferBroadcastGrad<kTile>)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<BroadcastGradKernel<float, kTile>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<BroadcastGradKernel<double, kTile>>());
  ForEachDType(
      [&]<class T>() { op.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernelClass<BroadcastKernel<kTile>>()); });
}

}  // namespace

void RegisterExpandOps(OpRegistry& r) {
  RegisterBroadcast<false>(r);
  RegisterBroadcast<true>(r);
}

}  // namespace paddlec::ops
