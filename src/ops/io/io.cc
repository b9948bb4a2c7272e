// Feed and fetch: the plumbing ops PaddlePaddle's save_inference_model puts around a program.
//
// A feed op copies tensor `col` of the FEED_MINIBATCH holder into its output; a fetch op copies its
// input into slot `col` of the FETCH_LIST holder. paddlec's drivers usually write fed tensors
// straight into the feed op's output variable, so feed falls back to whatever its output already
// holds. Neither op has a shape function on purpose: the plan treats the outputs of ops without one
// as external inputs, watching their shapes so that a new batch size triggers re-inference.
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

constexpr InSlot kX{0, "X"};
constexpr OutSlot kOut{0, "Out"};

struct ColAttrs {
  int col;
  static ColAttrs Decode(const AttrReader& a) { return {a.Get<int>("col")}; }
};

/// Shared by every dtype key: the copy moves bytes and carries the holder tensor's own dtype.
Status FeedCpu(KernelContext& ctx, const ColAttrs& attrs) {
  Tensor& out = ctx.Out(kOut);
  const Variable* holder = ctx.InVar(kX);
  if (holder != nullptr && attrs.col < static_cast<int>(holder->list().size())) {
    const Tensor& src = holder->list()[attrs.col];
    if (!src.initialized())
      return MakeError(ErrorCode::kRuntime, "feed holder entry at col {} holds no data (shape {}, {})", attrs.col,
                       src.dims().ToString(), DTypeName(src.dtype()));
    if (src.raw_data() == out.raw_data()) return Status::OK();
    return ctx.device().CopyFromHost(src, out);
  }
  if (out.initialized()) return Status::OK();  // the driver wrote the fed tensor into Out directly
  size_t have = holder != nullptr ? holder->list().size() : 0;
  return MakeError(ErrorCode::kRuntime, "feed target at col {} was not fed: the feed holder has {} tensor{}", attrs.col,
                   have, have == 1 ? "" : "s");
}

Status FetchCpu(KernelContext& ctx, const ColAttrs& attrs) {
  Variable* holder = ctx.OutVar(kOut);
  if (holder == nullptr) return MakeError(ErrorCode::kRuntime, "fetch at col {} has no FETCH_LIST holder", attrs.col);
  std::vector<Tensor>& list = holder->list();
  if (static_cast<int>(list.size()) <= attrs.col) list.resize(attrs.col + 1);
  // CopyToHost reuses the entry's buffer unless the caller still holds the previous result.
  return ctx.device().CopyToHost(ctx.In(kX), list[attrs.col], ctx.device().allocator());
}

// Feed and fetch move bytes, so every element type is served by the same kernel; the key only has
// to exist. feed's plan key is float32 (its input is a holder, not a tensor) whatever it carries.
constexpr DType kCarriedDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32,
                                    DType::kInt16,   DType::kBool,    DType::kUInt8, DType::kInt8};

}  // namespace

void RegisterIoOps(OpRegistry& r) {
  OpBuilder feed = r.Add("feed");
  feed.Doc("Copies tensor `col` of the feed holder into Out; without one, keeps the tensor already written into Out.")
      // Dispensable in paddlec only: drivers that write Out directly leave the holder empty or absent, and
      // the plan requires every non-dispensable input to hold a value.
      .Input(kX, "The FEED_MINIBATCH holder variable (a list of tensors, not a tensor).", kDispensable)
      .Output(kOut, "The fed data variable.")
      .RequiredAttr<int>("col", "Index of the tensor in the feed holder.")
      .Min(0)
      .NoGradient();
  for (DType t : kCarriedDTypes) feed.Kernel(DeviceType::kCPU, t, MakeKernel(FeedCpu));

  OpBuilder fetch = r.Add("fetch");
  fetch.Doc("Copies X to host memory as entry `col` of the fetch holder.")
      .Input(kX, "The tensor to fetch.")
      .Output(kOut, "The FETCH_LIST holder variable (a list of tensors, not a tensor).")
      .RequiredAttr<int>("col", "Index of the entry in the fetch holder.")
      .Min(0)
      .NoGradient();
  for (DType t : kCarriedDTypes) fetch.Kernel(DeviceType::kCPU, t, MakeKernel(FetchCpu));
}

}  // namespace paddlec::ops
