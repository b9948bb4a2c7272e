// Indexing: slice (a box of the input, optionally dropping size-1 axes) and gather (rows along an
// axis picked by an index tensor), and their gradients.
//
// slice copies the box as contiguous runs: the axes after the innermost one it cuts are copied
// whole, so each run is a memcpy of (cut length) x (the whole inner axes), split across the CPU pool
// by runs. Its gradient zeroes Input@GRAD and writes Out@GRAD back into the box. gather copies whole
// rows ([outer, rows, inner] view); its gradient adds Out@GRAD's rows into zeros in index order
// (repeated indices accumulate), parallel over disjoint column blocks, so it is deterministic.
// Both move bytes: every dtype shares one kernel per op (the gradients are float-only).
#include <cstring>

#include "tensor/index_slots.h"
#include "tensor/tensor_internal.h"

namespace paddlec::ops {
namespace {

using namespace index;  // NOLINT: the concept's shared slots and geometry
using tensor_internal::ForEachDType;
using tensor_internal::kCopyGrainBytes;
using tensor_internal::RejectTensorInput;

// ---- slice ------------------------------------------------------------------------------------

Status InferSlice(InferShapeContext& ctx) {
  for (InSlot s : {kStartsTensor, kStartsTensorList}) PC_RETURN_IF_ERROR(RejectTensorInput(ctx, s, "starts"));
  for (InSlot s : {kEndsTensor, kEndsTensorList}) PC_RETURN_IF_ERROR(RejectTensorInput(ctx, s, "ends"));
  auto box = MakeSliceBox(ctx.InputDims(kInput), SliceAttrs::Decode(ctx.attrs()));
  if (!box.ok()) return ctx.Fail("{}", box.error().message());
  ctx.SetOutput(kOut, box->out, ctx.InputDType(kInput));
  return Status::OK();
}

/// Out@GRAD must have Out's shape: the kernels write it into the box element by element.
Status CheckDOut(InferShapeContext& ctx, InSlot dout_slot, const Dims& out) {
  const Dims dout = ctx.InputDims(dout_slot);
  if (!DimsMatch(dout, out))
    return ctx.Fail("Out@GRAD has shape {} but Out has shape {}: they must match", dout.ToString(), out.ToString());
  return Status::OK();
}

Status InferSliceGrad(InferShapeContext& ctx) {
  for (InSlot s : {kGradStartsTensor, kGradStartsTensorList}) PC_RETURN_IF_ERROR(RejectTensorInput(ctx, s, "starts"));
  for (InSlot s : {kGradEndsTensor, kGradEndsTensorList}) PC_RETURN_IF_ERROR(RejectTensorInput(ctx, s, "ends"));
  const Dims in = ctx.InputDims(kGradInput);
  auto box = MakeSliceBox(in, SliceAttrs::Decode(ctx.attrs()));
  if (!box.ok()) return ctx.Fail("{}", box.error().message());
  PC_RETURN_IF_ERROR(CheckDOut(ctx, kGradDOut, box->out));
  if (ctx.HasOutput(kDInput)) ctx.SetOutput(kDInput, in, ctx.InputDType(kGradDOut));
  return Status::OK();
}

/// Moves the box (start, len) of a tensor of dims `full` at `data` to (kScatter = false) or from
/// (true) the contiguous buffer `dense`, which holds the box in row-major order.
template <bool kScatter>
void MoveBox(char* data, const Dims& full, const Dims& start, const Dims& len, char* dense, size_t elem) {
  const int r = full.rank();
  if (len.Numel() == 0) return;
  // Axes after k are whole in the box: every run of the copy covers len[k] of them.
  int k = r - 1;
  int64_t inner = 1;
  while (k >= 0 && start[k] == 0 && len[k] == full[k]) {
    inner *= full[k];
    --k;
  }
  if (k < 0) {  // the box is the whole tensor
    if (kScatter)
      tensor_internal::CopyBytes(data, dense, static_cast<size_t>(full.Numel()) * elem);
    else
      tensor_internal::CopyBytes(dense, data, static_cast<size_t>(full.Numel()) * elem);
    return;
  }
  std::array<int64_t, kMaxRank> stride{};
  stride[r - 1] = 1;
  for (int d = r - 2; d >= 0; --d) stride[d] = stride[d + 1] * full[d + 1];
  int64_t base = 0;
  for (int d = 0; d < r; ++d) base += start[d] * stride[d];
  const size_t run = static_cast<size_t>(len[k] * inner) * elem;
  const int64_t rows = len.Product(0, k);
  ParallelFor(rows, std::max<int64_t>(1, kCopyGrainBytes / static_cast<int64_t>(std::max<size_t>(run, 1))),
              [&](int64_t b, int64_t e) {
                std::array<int64_t, kMaxRank> idx{};
                int64_t q = b, off = base;
                for (int d = k - 1; d >= 0; --d) {
                  idx[d] = q % len[d];
                  q /= len[d];
                  off += idx[d] * stride[d];
                }
                for (int64_t row = b; row < e; ++row) {
                  char* box_run = data + off * static_cast<int64_t>(elem);
                  char* dense_run = dense + row * static_cast<int64_t>(run);
                  if (kScatter)
                    std::memcpy(box_run, dense_run, run);
                  else
                    std::memcpy(dense_run, box_run, run);
                  for (int d = k - 1; d >= 0; --d) {  // odometer over the box's outer axes
                    off += stride[d];
                    if (++idx[d] < len[d]) break;
                    off -= idx[d] * stride[d];
                    idx[d] = 0;
                  }
                }
              });
}

Status SliceCpu(KernelContext& ctx, const SliceAttrs& a) {
  const Tensor& in = ctx.In(kInput);
  PC_ASSIGN_OR_RETURN(SliceBox box, MakeSliceBox(in.dims(), a));
  MoveBox<false>(static_cast<char*>(const_cast<void*>(in.raw_data())), in.dims(), box.start, box.len,
                 static_cast<char*>(ctx.Out(kOut).raw_data()), SizeOf(in.dtype()));
  return Status::OK();
}

/// Input@GRAD = zeros with Out@GRAD written into the sliced box.
Status SliceGradCpu(KernelContext& ctx, const SliceAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDInput);
  if (dx == nullptr) return Status::OK();
  PC_ASSIGN_OR_RETURN(SliceBox box, MakeSliceBox(dx->dims(), a));
  char* d = static_cast<char*>(dx->raw_data());
  ParallelFor(static_cast<int64_t>(dx->nbytes()), kCopyGrainBytes,
              [&](int64_t b, int64_t e) { std::memset(d + b, 0, static_cast<size_t>(e - b)); });
  MoveBox<true>(d, dx->dims(), box.start, box.len, static_cast<char*>(const_cast<void*>(ctx.In(kGradDOut).raw_data())),
                SizeOf(dx->dtype()));
  return Status::OK();
}

// ---- gather -----------------------------------------------------------------------------------

Status InferGather(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(RejectTensorInput(ctx, kAxis, "axis"));
  const Dims x = ctx.InputDims(kX), index = ctx.InputDims(kIndex);
  const DType it = ctx.InputDType(kIndex);
  if (it != DType::kInt32 && it != DType::kInt64)
    return ctx.Fail("Index has dtype {}: gather needs int32 or int64 indices", DTypeName(it));
  if (index.rank() > 2 || (index.rank() == 2 && index[1] != 1 && index[1] != kUnknownDim))
    return ctx.Fail("Index has shape {}: gather takes a 0-D or 1-D index (or [n, 1])", index.ToString());
  const int axis_attr = ctx.Attr<int>("axis");
  const int axis = NormalizeAxis(axis_attr, x.rank());
  if (x.rank() == 0 || axis < 0)
    return ctx.Fail("axis {} is out of range for X of shape {} (rank {})", axis_attr, x.ToString(), x.rank());
  Dims out = x;
  if (index.rank() == 0)
    out.erase(axis);  // a 0-D index drops the axis, as PaddlePaddle does
  else
    out[axis] = index[0];
  ctx.SetOutput(kGatherOut, out, ctx.InputDType(kX));
  return Status::OK();
}

Status InferGatherGrad(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(RejectTensorInput(ctx, kGradAxis, "axis"));
  const Dims x = ctx.InputDims(kGradX), index = ctx.InputDims(kGradIndex);
  const int axis_attr = ctx.Attr<int>("axis");
  const int axis = NormalizeAxis(axis_attr, x.rank());
  if (x.rank() == 0 || axis < 0 || index.rank() > 2)
    return ctx.Fail("axis {} and Index of shape {} do not fit X of shape {}", axis_attr, index.ToString(),
                    x.ToString());
  Dims out = x;
  if (index.rank() == 0)
    out.erase(axis);
  else
    out[axis] = index[0];
  PC_RETURN_IF_ERROR(CheckDOut(ctx, kGatherDOut, out));
  if (ctx.HasOutput(kDX)) ctx.SetOutput(kDX, x, ctx.InputDType(kGatherDOut));
  return Status::OK();
}

/// The first index outside [0, rows), as an error naming it; OK when all are in range.
template <class I>
Status CheckIndices(const I* idx, int64_t m, int64_t rows, int axis) {
  for (int64_t j = 0; j < m; ++j)
    if (idx[j] < 0 || idx[j] >= rows)
      return MakeError(ErrorCode::kRuntime, "Index[{}] = {} is out of range for X, which has {} entries along axis {}",
                       j, static_cast<int64_t>(idx[j]), rows, axis);
  return Status::OK();
}

template <class I>
Status GatherRows(const Tensor& x, const I* idx, int64_t m, int axis_attr, Tensor& out) {
  const GatherView v = GatherViewOf(x.dims(), axis_attr);
  PC_RETURN_IF_ERROR(CheckIndices(idx, m, v.rows, NormalizeAxis(axis_attr, x.dims().rank())));
  const int64_t row = v.inner * static_cast<int64_t>(SizeOf(x.dtype()));
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  ParallelFor(
      v.outer * m, std::max<int64_t>(1, kCopyGrainBytes / std::max<int64_t>(row, 1)), [&](int64_t b, int64_t e) {
        for (int64_t q = b; q < e; ++q) {
          const int64_t o = q / m, j = q % m;
          std::memcpy(dst + q * row, src + (o * v.rows + static_cast<int64_t>(idx[j])) * row, static_cast<size_t>(row));
        }
      });
  return Status::OK();
}

Status GatherCpu(KernelContext& ctx, const GatherAttrs& a) {
  const Tensor& index = ctx.In(kIndex);
  if (index.dtype() == DType::kInt32)
    return GatherRows(ctx.In(kX), index.data<int32_t>(), index.numel(), a.axis, ctx.Out(kGatherOut));
  return GatherRows(ctx.In(kX), index.data<int64_t>(), index.numel(), a.axis, ctx.Out(kGatherOut));
}

/// X@GRAD = zeros, then row Index[j] of each outer slice += row j of Out@GRAD, for j in order.
/// Jobs are (outer slice, block of columns): disjoint writes, each in index order.
template <class T, class I>
Status GatherGradRows(const I* idx, int64_t m, const T* dout, T* dx, const GatherView& v, int axis) {
  PC_RETURN_IF_ERROR(CheckIndices(idx, m, v.rows, axis));
  constexpr int64_t kColumns = 1024;
  const int64_t blocks = (v.inner + kColumns - 1) / kColumns;
  ParallelFor(v.outer * blocks, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(kColumns * m, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t job = b; job < e; ++job) {
                  const int64_t o = job / blocks, c0 = (job % blocks) * kColumns;
                  const int64_t len = std::min(kColumns, v.inner - c0);
                  T* slice = dx + o * v.rows * v.inner + c0;
                  for (int64_t r = 0; r < v.rows; ++r) std::fill(slice + r * v.inner, slice + r * v.inner + len, T(0));
                  const T* g = dout + o * m * v.inner + c0;
                  for (int64_t j = 0; j < m; ++j) {
                    T* dst = slice + static_cast<int64_t>(idx[j]) * v.inner;
                    const T* src = g + j * v.inner;
                    for (int64_t c = 0; c < len; ++c) dst[c] += src[c];
                  }
                }
              });
  return Status::OK();
}

template <class T>
Status GatherGradCpu(KernelContext& ctx, const GatherAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& index = ctx.In(kGradIndex);
  const GatherView v = GatherViewOf(dx->dims(), a.axis);
  const int axis = NormalizeAxis(a.axis, dx->dims().rank());
  const T* dout = ctx.In(kGatherDOut).data<T>();
  if (index.dtype() == DType::kInt32)
    return GatherGradRows(index.data<int32_t>(), index.numel(), dout, dx->data<T>(), v, axis);
  return GatherGradRows(index.data<int64_t>(), index.numel(), dout, dx->data<T>(), v, axis);
}

}  // namespace

void RegisterIndexOps(OpRegistry& r) {
  OpBuilder slice = r.Add("slice");
  slice
      .Doc(
          "Out = Input[starts:ends] along `axes` (negative entries count from the end; clamped to each axis), "
          "with the axes in `decrease_axis` (sliced to length 1) removed.")
      .Input(kInput, "The tensor to slice.")
      .Input(kStartsTensor, "A 1-D int tensor overriding `starts` (not supported yet).", kDispensable)
      .Input(kEndsTensor, "A 1-D int tensor overriding `ends` (not supported yet).", kDispensable)
      .Input(kStartsTensorList, "1-element int tensors overriding `starts` (not supported yet).",
             kDuplicable | kDispensable)
      .Input(kEndsTensorList, "1-element int tensors overriding `ends` (not supported yet).",
             kDuplicable | kDispensable)
      .Output(kOut, "The slice.")
      // INTS, as PaddlePaddle declares them: its loader rejects a .pdmodel with LONGS here.
      .Attr("axes", std::vector<int>{}, "The axes to slice.")
      .Attr("starts", std::vector<int>{}, "First index per axis (inclusive).")
      .Attr("ends", std::vector<int>{}, "Last index per axis (exclusive); values past the end are clamped.")
      .Attr("infer_flags", std::vector<int>{},
            "PaddlePaddle's marks of starts/ends given as tensors (-1); ignored, as tensor inputs are rejected.")
      .Attr("decrease_axis", std::vector<int>{}, "Sliced axes (of length 1) to remove from Out.")
      .InferShape(InferSlice)
      .NoGradInput(kStartsTensor)
      .NoGradInput(kEndsTensor)
      .NoGradInput(kStartsTensorList)
      .NoGradInput(kEndsTensorList)
      .Grad();
  OpBuilder slice_grad = r.Add("slice_grad");
  slice_grad.GradOf("slice")
      .Doc("Gradient of slice: Out@GRAD written into the sliced box of zeros shaped like Input.")
      .Input(kGradInput, "The forward input (its shape only).")
      .Input(kGradDOut, "Gradient of the loss with respect to Out.")
      .Input(kGradStartsTensor, "The forward StartsTensor (not supported yet).", kDispensable)
      .Input(kGradEndsTensor, "The forward EndsTensor (not supported yet).", kDispensable)
      .Input(kGradStartsTensorList, "The forward StartsTensorList (not supported yet).", kDuplicable | kDispensable)
      .Input(kGradEndsTensorList, "The forward EndsTensorList (not supported yet).", kDuplicable | kDispensable)
      .Output(kDInput, "Gradient of the loss with respect to Input.")
      .InferShape(InferSliceGrad);
  ForEachDType([&]<class T>() { slice.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(SliceCpu)); });
  slice_grad.Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(SliceGradCpu))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(SliceGradCpu));

  OpBuilder gather = r.Add("gather");
  gather.Doc("Out = X's entries Index[0], Index[1], ... along `axis` (a 0-D Index drops the axis).")
      .Input(kX, "The tensor to gather from.")
      .Input(kIndex, "int32 or int64 indices into X's `axis`, 0-D or 1-D ([n, 1] is read as [n]).")
      .Input(kAxis, "A 1-element int tensor overriding `axis` (not supported yet).", kDispensable)
      .Output(kGatherOut, "X with `axis` replaced by Index's entries.")
      .Attr("axis", 0, "The axis to gather along; negative counts from the end.")
      .Attr("overwrite", true,
            "PaddlePaddle 2.x gradient mode for repeated indices; ignored: their gradients are always summed.")
      .ExtraAttr()
      .InferShape(InferGather)
      .NoGradInput(kIndex)
      .NoGradInput(kAxis)
      .Grad();
  OpBuilder gather_grad = r.Add("gather_grad");
  gather_grad.GradOf("gather")
      .Doc("Gradient of gather: Out@GRAD's rows added into zeros at Index (repeated indices accumulate).")
      .Input(kGradX, "The forward X (its shape only).")
      .Input(kGradIndex, "The forward indices.")
      .Input(kGradAxis, "The forward Axis tensor (not supported yet).", kDispensable)
      .Input(kGatherDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferGatherGrad)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(GatherGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(GatherGradCpu<double>));
  ForEachDType([&]<class T>() { gather.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(GatherCpu)); });
}

}  // namespace paddlec::ops
