// concat and split (each other's gradient), plus concat_grad; stack and stack_grad.
//
// All of them view every tensor as [outer, dim(axis) * inner] rows of bytes: one output row is the
// concatenation of the inputs' rows, so the kernels are row-wise memcpys, split across the CPU pool
// by rows (or, with a single row, by bytes within each copy). Element types do not matter.
#include "tensor/tensor_internal.h"

namespace paddlec::ops {
namespace {

using tensor_internal::CopyBytes;
using tensor_internal::ForEachDType;
using tensor_internal::kCopyGrainBytes;

constexpr InSlot kX{0, "X"};
constexpr InSlot kAxisTensor{1, "AxisTensor"};
constexpr InSlot kSectionsTensorList{2, "SectionsTensorList"};  // split only
constexpr OutSlot kOut{0, "Out"};
// concat_grad: (X, Out@GRAD) -> X@GRAD.
constexpr InSlot kXIn{0, "X"};
constexpr InSlot kDOut{1, "Out@GRAD"};
constexpr OutSlot kDX{0, "X@GRAD"};
// stack: X -> Y; stack_grad: (X, Y@GRAD) -> X@GRAD.
constexpr OutSlot kY{0, "Y"};
constexpr InSlot kDY{1, "Y@GRAD"};

std::string IntsToString(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// ---- Kernels --------------------------------------------------------------------------------

/// The [outer, rows] byte view of tensors of shape `whole` around `axis`: `inner_bytes` per unit of axis.
struct RowView {
  int64_t outer, inner_bytes;
};
RowView ViewAt(const Dims& whole, int axis, DType t) {
  return {whole.Product(0, axis), whole.Product(axis + 1, whole.rank()) * static_cast<int64_t>(SizeOf(t))};
}

/// Concatenates (gather = true: parts -> whole) or splits (whole -> parts) along `axis`. `part(i)`
/// returns the i-th part's tensor or nullptr when it is skipped (an @EMPTY@ gradient); `part_len(i)`
/// its length along the axis (taken from the forward tensors when the part itself is skipped).
template <bool kGather, class PartFn, class LenFn>
void MoveRows(char* whole, const RowView& v, int64_t whole_len, int nparts, PartFn part, LenFn part_len) {
  const int64_t whole_row = whole_len * v.inner_bytes;
  auto move = [&](char* w, char* p, int64_t bytes) {
    if constexpr (kGather)
      std::memcpy(w, p, static_cast<size_t>(bytes));
    else
      std::memcpy(p, w, static_cast<size_t>(bytes));
  };
  if (v.outer == 1) {
    int64_t off = 0;
    for (int i = 0; i < nparts; ++i) {
      int64_t bytes = part_len(i) * v.inner_bytes;
      if (Tensor* t = part(i)) {
        char* p = static_cast<char*>(t->raw_data());
        if constexpr (kGather)
          CopyBytes(whole + off, p, static_cast<size_t>(bytes));
        else
          CopyBytes(p, whole + off, static_cast<size_t>(bytes));
      }
      off += bytes;
    }
    return;
  }
  ParallelFor(v.outer, std::max<int64_t>(1, kCopyGrainBytes / std::max<int64_t>(whole_row, 1)),
              [&](int64_t b, int64_t e) {
                int64_t off = 0;
                for (int i = 0; i < nparts; ++i) {
                  int64_t row = part_len(i) * v.inner_bytes;
                  if (Tensor* t = part(i)) {
                    char* p = static_cast<char*>(t->raw_data());
                    for (int64_t o = b; o < e; ++o) move(whole + o * whole_row + off, p + o * row, row);
                  }
                  off += row;
                }
              });
}

struct AxisAttrs {
  int axis;
  static AxisAttrs Decode(const AttrReader& a) { return {a.Get<int>("axis")}; }
};

Status ConcatCpu(KernelContext& ctx, const AxisAttrs& a) {
  Tensor& out = ctx.Out(kOut);
  int axis = NormalizeAxis(a.axis, out.dims().rank());
  RowView v = ViewAt(out.dims(), axis, out.dtype());
  MoveRows<true>(
      static_cast<char*>(out.raw_data()), v, out.dims()[axis], ctx.NumIn(kX),
      [&](int i) { return const_cast<Tensor*>(&ctx.In(kX, i)); }, [&](int i) { return ctx.In(kX, i).dims()[axis]; });
  return Status::OK();
}

/// X@GRAD[i] = the slice of Out@GRAD that X[i] filled; skipped (@EMPTY@) gradients still take their place.
Status ConcatGradCpu(KernelContext& ctx, const AxisAttrs& a) {
  const Tensor& dout = ctx.In(kDOut);
  int axis = NormalizeAxis(a.axis, dout.dims().rank());
  RowView v = ViewAt(dout.dims(), axis, dout.dtype());
  MoveRows<false>(
      static_cast<char*>(const_cast<void*>(dout.raw_data())), v, dout.dims()[axis], ctx.NumIn(kXIn),
      [&](int i) { return ctx.OutOpt(kDX, i); }, [&](int i) { return ctx.In(kXIn, i).dims()[axis]; });
  return Status::OK();
}

struct SplitAttrs {
  int axis, num;
  std::vector<int> sections;
  static SplitAttrs Decode(const AttrReader& a) {
    return {a.Get<int>("axis"), a.Get<int>("num"), a.Get<std::vector<int>>("sections")};
  }
};

Status SplitCpu(KernelContext& ctx, const SplitAttrs& a) {
  const Tensor& x = ctx.In(kX);
  int axis = NormalizeAxis(a.axis, x.dims().rank());
  RowView v = ViewAt(x.dims(), axis, x.dtype());
  const int64_t dim = x.dims()[axis];
  // Part lengths come from the attributes, so an @EMPTY@ output still keeps its place.
  int64_t rest = dim;
  for (int s : a.sections) rest -= s == -1 ? 0 : s;
  MoveRows<false>(
      static_cast<char*>(const_cast<void*>(x.raw_data())), v, dim, ctx.NumOut(kOut),
      [&](int i) { return ctx.OutOpt(kOut, i); },
      [&](int i) -> int64_t {
        if (a.num > 0) return dim / a.num;
        return a.sections[i] == -1 ? rest : a.sections[i];
      });
  return Status::OK();
}

/// stack is a concat along a new axis: in the [outer, n * inner] view of Y around `axis`, X[i]
/// fills part i, each part one unit long.
Status StackCpu(KernelContext& ctx, const AxisAttrs& a) {
  Tensor& y = ctx.Out(kY);
  const int axis = NormalizeAxis(a.axis, y.dims().rank());
  const RowView v = ViewAt(y.dims(), axis, y.dtype());
  MoveRows<true>(
      static_cast<char*>(y.raw_data()), v, y.dims()[axis], ctx.NumIn(kX),
      [&](int i) { return const_cast<Tensor*>(&ctx.In(kX, i)); }, [](int) { return int64_t{1}; });
  return Status::OK();
}

/// X@GRAD[i] = the slice of Y@GRAD at position i of the stacked axis; @EMPTY@ gradients are skipped.
Status StackGradCpu(KernelContext& ctx, const AxisAttrs& a) {
  const Tensor& dy = ctx.In(kDY);
  const int axis = NormalizeAxis(a.axis, dy.dims().rank());
  const RowView v = ViewAt(dy.dims(), axis, dy.dtype());
  MoveRows<false>(
      static_cast<char*>(const_cast<void*>(dy.raw_data())), v, dy.dims()[axis], ctx.NumOut(kDX),
      [&](int i) { return ctx.OutOpt(kDX, i); }, [](int) { return int64_t{1}; });
  return Status::OK();
}

// ---- Shape functions ------------------------------------------------------------------------

Status InferConcat(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kAxisTensor, "axis"));
  int n = ctx.NumInputs(kX);
  Dims x0 = ctx.InputDims(kX, 0);
  DType t0 = ctx.InputDType(kX, 0);
  int axis_attr = ctx.Attr<int>("axis");
  if (x0.rank() == 0) return ctx.Fail("concat needs inputs of rank >= 1, but X[0] has shape []");
  int axis = NormalizeAxis(axis_attr, x0.rank());
  if (axis < 0)
    return ctx.Fail("axis {} is out of range for X[0] of shape {} (rank {})", axis_attr, x0.ToString(), x0.rank());
  Dims out = x0;
  for (int i = 1; i < n; ++i) {
    Dims xi = ctx.InputDims(kX, i);
    if (ctx.InputDType(kX, i) != t0)
      return ctx.Fail("X[{}] has dtype {} but X[0] has dtype {}", i, DTypeName(ctx.InputDType(kX, i)), DTypeName(t0));
    if (xi.rank() != x0.rank())
      return ctx.Fail("X[{}] has shape {} but X[0] has shape {}: all inputs must have the same rank", i, xi.ToString(),
                      x0.ToString());
    for (int d = 0; d < xi.rank(); ++d) {
      if (d == axis) {
        out[d] = DimAdd(out[d], xi[d]);
      } else if (!DimMatch(out[d], xi[d])) {
        return ctx.Fail("X[{}] has shape {} but X[0] has shape {}: inputs must match in every dimension except axis {}",
                        i, xi.ToString(), x0.ToString(), axis);
      } else {
        out[d] = DimMerge(out[d], xi[d]);
      }
    }
  }
  ctx.SetOutput(kOut, out, t0);
  return Status::OK();
}

Status InferSplit(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kAxisTensor, "axis"));
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kSectionsTensorList, "sections"));
  Dims x = ctx.InputDims(kX);
  int axis_attr = ctx.Attr<int>("axis"), num = ctx.Attr<int>("num");
  auto sections = ctx.Attr<std::vector<int>>("sections");
  int nout = ctx.NumOutputs(kOut);
  if (x.rank() == 0) return ctx.Fail("split needs X of rank >= 1, but X has shape []");
  int axis = NormalizeAxis(axis_attr, x.rank());
  if (axis < 0)
    return ctx.Fail("axis {} is out of range for X of shape {} (rank {})", axis_attr, x.ToString(), x.rank());
  if (num > 0 && !sections.empty())
    return ctx.Fail("num = {} and sections = {} are both set: give exactly one", num, IntsToString(sections));
  if (num == 0 && sections.empty()) return ctx.Fail("neither num nor sections is set: give exactly one");
  const int64_t dim = x[axis];
  std::vector<int64_t> sizes;
  if (num > 0) {
    if (nout != num) return ctx.Fail("num = {} but Out has {} variable{}", num, nout, nout == 1 ? "" : "s");
    if (dim >= 0 && dim % num != 0)
      return ctx.Fail("X has shape {}: dimension {} ({}) is not divisible by num = {}", x.ToString(), axis, dim, num);
    sizes.assign(num, dim < 0 ? kUnknownDim : dim / num);
  } else {
    if (static_cast<int>(sections.size()) != nout)
      return ctx.Fail("sections {} has {} entries but Out has {} variable{}", IntsToString(sections), sections.size(),
                      nout, nout == 1 ? "" : "s");
    int infer = -1;
    int64_t sum = 0;
    for (int i = 0; i < static_cast<int>(sections.size()); ++i) {
      if (sections[i] < -1)
        return ctx.Fail("sections {} has invalid entry {} at index {}: entries must be >= 0, or -1 (infer)",
                        IntsToString(sections), sections[i], i);
      if (sections[i] == -1) {
        if (infer >= 0) return ctx.Fail("sections {} has more than one -1", IntsToString(sections));
        infer = i;
      } else {
        sum += sections[i];
      }
      sizes.push_back(sections[i]);
    }
    if (dim >= 0) {
      if (infer >= 0 && sum > dim)
        return ctx.Fail("sections {} sum to {}, more than dimension {} ({}) of X of shape {}", IntsToString(sections),
                        sum, axis, dim, x.ToString());
      if (infer < 0 && sum != dim)
        return ctx.Fail("sections {} sum to {} but dimension {} of X of shape {} is {}", IntsToString(sections), sum,
                        axis, x.ToString(), dim);
      if (infer >= 0) sizes[infer] = dim - sum;
    } else if (infer >= 0) {
      sizes[infer] = kUnknownDim;
    }
  }
  for (int i = 0; i < nout; ++i) {
    Dims o = x;
    o[axis] = sizes[i];
    ctx.SetOutput(kOut, i, o, ctx.InputDType(kX));
  }
  return Status::OK();
}

Status InferStack(InferShapeContext& ctx) {
  const int n = ctx.NumInputs(kX);
  const Dims x0 = ctx.InputDims(kX, 0);
  const DType t0 = ctx.InputDType(kX, 0);
  const int axis_attr = ctx.Attr<int>("axis");
  const int axis = axis_attr < 0 ? axis_attr + x0.rank() + 1 : axis_attr;
  if (axis < 0 || axis > x0.rank())
    return ctx.Fail("axis {} is out of range for stacking X[0] of shape {}: it must be in [{}, {}]", axis_attr,
                    x0.ToString(), -x0.rank() - 1, x0.rank());
  if (x0.rank() + 1 > kMaxRank)
    return ctx.Fail("stacking X[0] of shape {} gives rank {}, more than the maximum of {}", x0.ToString(),
                    x0.rank() + 1, kMaxRank);
  Dims common = x0;
  for (int i = 1; i < n; ++i) {
    const Dims xi = ctx.InputDims(kX, i);
    if (ctx.InputDType(kX, i) != t0)
      return ctx.Fail("X[{}] has dtype {} but X[0] has dtype {}", i, DTypeName(ctx.InputDType(kX, i)), DTypeName(t0));
    if (!DimsMatch(common, xi))
      return ctx.Fail("X[{}] has shape {} but X[0] has shape {}: stack needs inputs of one shape", i, xi.ToString(),
                      x0.ToString());
    for (int d = 0; d < xi.rank(); ++d) common[d] = DimMerge(common[d], xi[d]);
  }
  Dims out = common;
  out.insert(axis, n);
  ctx.SetOutput(kY, out, t0);
  return Status::OK();
}

/// X@GRAD[i] is Y@GRAD without the stacked axis.
Status InferStackGrad(InferShapeContext& ctx) {
  Dims dy = ctx.InputDims(kDY);
  const int axis_attr = ctx.Attr<int>("axis");
  const int axis = NormalizeAxis(axis_attr, dy.rank());
  if (axis < 0) return ctx.Fail("axis {} is out of range for Y@GRAD of shape {}", axis_attr, dy.ToString());
  if (ctx.NumOutputs(kDX) > 0 && dy[axis] >= 0 && dy[axis] != ctx.NumOutputs(kDX))
    return ctx.Fail("Y@GRAD has shape {} with {} entries along axis {}, but X@GRAD has {} variables", dy.ToString(),
                    dy[axis], axis, ctx.NumOutputs(kDX));
  dy.erase(axis);
  for (int i = 0; i < ctx.NumOutputs(kDX); ++i) ctx.SetOutput(kDX, i, dy, ctx.InputDType(kDY));
  return Status::OK();
}

/// X@GRAD[i] takes X[i]'s shape; Out@GRAD must be the concat of X's shapes, since the kernel cuts
/// it into X's slices.
Status InferConcatGrad(InferShapeContext& ctx) {
  const int n = ctx.NumInputs(kXIn);
  const Dims dout = ctx.InputDims(kDOut);
  const int axis_attr = ctx.Attr<int>("axis");
  const int axis = NormalizeAxis(axis_attr, dout.rank());
  if (axis < 0)
    return ctx.Fail("axis {} is out of range for Out@GRAD of shape {} (rank {})", axis_attr, dout.ToString(),
                    dout.rank());
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    const Dims xi = ctx.InputDims(kXIn, i);
    bool fits = xi.rank() == dout.rank();
    for (int d = 0; fits && d < xi.rank(); ++d) fits = d == axis || DimMatch(xi[d], dout[d]);
    if (!fits)
      return ctx.Fail("Out@GRAD has shape {} but X[{}] has shape {}: they must match except along axis {}",
                      dout.ToString(), i, xi.ToString(), axis);
    total = DimAdd(total, xi[axis]);
    ctx.SetOutput(kDX, i, xi, ctx.InputDType(kDOut));
  }
  if (total >= 0 && dout[axis] >= 0 && total != dout[axis])
    return ctx.Fail("Out@GRAD has shape {} with {} entries along axis {}, but the X hold {}", dout.ToString(),
                    dout[axis], axis, total);
  return Status::OK();
}

/// split's gradient is the concat of the outputs' gradients along the same axis.
Status SplitGradMaker(GradMakerContext& ctx) {
  std::vector<std::string> dx = ctx.InputGrad("X");
  if (dx.empty() || dx[0] == ir::kEmptyVarName) return Status::OK();
  pb::OpDesc op = tensor_internal::NewOpWithKnownAttrs(ctx, "concat");  // keeps `axis`
  AddInput(op, "X", ctx.OutputGrad("Out"));
  AddOutput(op, "Out", dx);
  ctx.Emit(std::move(op));
  return Status::OK();
}

}  // namespace

void RegisterConcatSplitOps(OpRegistry& r) {
  OpBuilder concat = r.Add("concat");
  concat.Doc("Joins the X tensors along `axis`; they must match in every other dimension.")
      .Input(kX, "The tensors to join, all of the same rank and dtype.", kDuplicable)
      .Input(kAxisTensor, "A 1-element int tensor overriding `axis` (not supported yet).", kDispensable)
      .Output(kOut, "The joined tensor.")
      .Attr("axis", 0, "The axis to join along; negative counts from the end.")
      .InferShape(InferConcat)
      .NoGradInput(kAxisTensor)
      .Grad();
  OpBuilder concat_grad = r.Add("concat_grad");
  concat_grad.GradOf("concat")
      .Doc("Gradient of concat: slices Out@GRAD back into one gradient per X.")
      .Input(kXIn, "The forward inputs (their shapes place the slices; their data is not read).", kDuplicable)
      .Input(kDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradients of the loss with respect to each X; @EMPTY@ entries are skipped.", kDuplicable)
      .InferShape(InferConcatGrad);
  ForEachDType([&]<class T>() {
    concat.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(ConcatCpu));
    concat_grad.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(ConcatGradCpu));
  });

  OpBuilder split = r.Add("split");
  split.Doc("Splits X along `axis` into `num` equal parts or parts of the given `sections` sizes.")
      .Input(kX, "The tensor to split.")
      .Input(kAxisTensor, "A 1-element int tensor overriding `axis` (not supported yet).", kDispensable)
      .Input(kSectionsTensorList, "1-element int tensors overriding `sections` (not supported yet).",
             kDuplicable | kDispensable)
      .Output(kOut, "The parts, in order along the axis.", kDuplicable)
      .Attr("axis", 0, "The axis to split along; negative counts from the end.")
      .Attr("num", 0, "Number of equal parts (X's dimension must divide); 0 when `sections` is given.")
      .Min(0)
      .Attr("sections", std::vector<int>{}, "Size of each part along the axis; one entry may be -1 (the rest).")
      .InferShape(InferSplit)
      .NoGradInput(kAxisTensor)
      .NoGradInput(kSectionsTensorList)
      .Grad(SplitGradMaker);
  ForEachDType([&]<class T>() { split.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(SplitCpu)); });

  OpBuilder stack = r.Add("stack");
  stack.Doc("Stacks the X tensors, all of one shape, along a new axis `axis` of Y.")
      .Input(kX, "The tensors to stack, all of the same shape and dtype.", kDuplicable)
      .Output(kY, "The stacked tensor: X's shape with len(X) inserted at `axis`.")
      .Attr("axis", 0, "Where the new axis goes in Y; negative counts from the end of Y.")
      .InferShape(InferStack)
      .Grad();
  OpBuilder stack_grad = r.Add("stack_grad");
  stack_grad.GradOf("stack")
      .Doc("Gradient of stack: unstacks Y@GRAD into one gradient per X.")
      .Input(kXIn, "The forward inputs (PaddlePaddle 3.x binds them; their data is not read).",
             kDuplicable | kDispensable)
      .Input(kDY, "Gradient of the loss with respect to Y.")
      .Output(kDX, "Gradients of the loss with respect to each X; @EMPTY@ entries are skipped.", kDuplicable)
      .InferShape(InferStackGrad);
  ForEachDType([&]<class T>() {
    stack.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(StackCpu));
    stack_grad.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(StackGradCpu));
  });
}

}  // namespace paddlec::ops
