// Value-producing and copying ops: fill_constant, fill_zeros_like, assign, cast.
//
// All are memory-bound: fills and conversions are plain loops the compiler vectorizes, split across
// the CPU pool in chunks; copies are parallel memcpy. Every element type is served.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/host_values.h"
#include "tensor/fill_slots.h"
#include "tensor/tensor_internal.h"

namespace paddlec::ops {
namespace {

using tensor_internal::CopyBytes;
using tensor_internal::DTypeAttrName;
using tensor_internal::ForEachDType;

constexpr InSlot kX{0, "X"};
constexpr OutSlot kOut{0, "Out"};

// ---- fill_constant --------------------------------------------------------------------------

using fill::kShapeTensor;
using fill::kShapeTensorList;
using fill::kValueTensor;

/// The fill value, kept both as a double and, when the text was an integer, as an exact int64 so that
/// int64 values beyond 2^53 survive (PaddlePaddle passes those through `str_value`).
struct FillValue {
  double d = 0;
  int64_t i = 0;
  bool exact_int = false;

  template <class T>
  T As() const {
    if constexpr (std::is_same_v<T, bool>)
      return exact_int ? i != 0 : d != 0;
    else
      return exact_int ? static_cast<T>(i) : static_cast<T>(d);
  }
};

/// `value`, or `str_value` when non-empty (the whole string must be a number, "inf" and "nan" included).
StatusOr<FillValue> ParseFillValue(const AttrReader& a) {
  std::string s = a.Get<std::string>("str_value");
  FillValue v;
  if (s.empty()) {
    v.d = a.Get<float>("value");
    return v;
  }
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v.i);
  if (ec == std::errc() && p == end) {
    v.exact_int = true;
    v.d = static_cast<double>(v.i);
    return v;
  }
  char* stop = nullptr;
  v.d = std::strtod(s.c_str(), &stop);
  if (stop != end || s.front() == ' ') return MakeError(ErrorCode::kShape, "str_value '{}' is not a number", s);
  return v;
}

/// True when `v` converts to T without undefined behaviour (NaN or out of range for integers).
template <class T>
bool FitsIn(const FillValue& v) {
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, bool>) {
    return true;
  } else {
    if (v.exact_int) return v.i >= std::numeric_limits<T>::min() && v.i <= std::numeric_limits<T>::max();
    // max + 1 is a power of two, exact in double; conversion truncates toward zero.
    return std::isfinite(v.d) && v.d >= static_cast<double>(std::numeric_limits<T>::min()) &&
           v.d < static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
  }
}

/// A shape input is int32 or int64 (ValuesAs would convert a float one, which Paddle rejects).
Status CheckShapeDType(const InferShapeContext& ctx, InSlot slot, int i) {
  DType t = ctx.InputDType(slot, i);
  if (t != DType::kInt32 && t != DType::kInt64 && t != DType::kUndefined)
    return ctx.Fail("{} '{}' has dtype {}; a shape tensor is int32 or int64", slot.name, ctx.InputName(slot, i),
                    DTypeName(t));
  return Status::OK();
}

/// The compile-time dims when shape tensors are bound: their values are known at run time only, so
/// the sizes are the attribute's where it gives one (PaddlePaddle writes -1 for the others).
StatusOr<Dims> ValuedFillDims(const InferShapeContext& ctx, const std::vector<int64_t>& shape) {
  // ShapeTensor takes precedence over ShapeTensorList, as in PaddlePaddle (and in ShapeValues).
  int rank = -1;
  if (ctx.HasInput(kShapeTensor)) {
    PC_RETURN_IF_ERROR(CheckShapeDType(ctx, kShapeTensor, 0));
    Dims d = ctx.InputDims(kShapeTensor);
    if (d.rank() != 1) return ctx.Fail("ShapeTensor has shape {} but must be 1-D", d.ToString());
    rank = d[0] >= 0 ? static_cast<int>(d[0]) : static_cast<int>(shape.size());
    if (d[0] < 0 && shape.empty())
      return ctx.Fail("ShapeTensor has shape {}: the rank of Out is unknown (give `shape` with -1 sizes)",
                      d.ToString());
  } else {
    rank = ctx.NumInputs(kShapeTensorList);
    for (int i = 0; i < rank; ++i) {
      PC_RETURN_IF_ERROR(CheckShapeDType(ctx, kShapeTensorList, i));
      // One size per tensor: PaddlePaddle writes them 0-D (a slice of a shape) or [1].
      Dims d = ctx.InputDims(kShapeTensorList, i);
      if (!(d.rank() == 0 || (d.rank() == 1 && (d[0] == 1 || d[0] < 0))))
        return ctx.Fail("ShapeTensorList '{}' has shape {}; expected one element ([] or [1])",
                        ctx.InputName(kShapeTensorList, i), d.ToString());
    }
  }
  if (rank > kMaxRank) return ctx.Fail("the shape tensors give {} dimensions, above the maximum {}", rank, kMaxRank);
  Dims dims = Dims::Filled(rank, kUnknownDim);
  if (static_cast<int>(shape.size()) == rank)
    for (int i = 0; i < rank; ++i) dims[i] = shape[i] >= 0 ? shape[i] : kUnknownDim;
  return dims;
}

Status InferFillConstant(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kValueTensor, "value"));
  auto shape = ctx.Attr<std::vector<int64_t>>("shape");
  Dims dims;
  if (ctx.HasInput(kShapeTensor) || ctx.HasInput(kShapeTensorList)) {
    PC_ASSIGN_OR_RETURN(dims, ValuedFillDims(ctx, shape));
  } else {
    PC_ASSIGN_OR_RETURN(dims, Dims::FromRange(shape.begin(), shape.end()));
    for (int i = 0; i < dims.rank(); ++i)
      if (dims[i] < 0)
        return ctx.Fail("shape {} has negative dimension {} at index {}: fill_constant needs a fully known shape",
                        dims.ToString(), dims[i], i);
  }
  int dtype_attr = ctx.Attr<int>("dtype");
  PC_ASSIGN_OR_RETURN(DType dtype, DTypeFromProto(dtype_attr));
  PC_ASSIGN_OR_RETURN(FillValue v, ParseFillValue(ctx.attrs()));
  bool fits = true;
  PC_RETURN_IF_ERROR(VisitDType(dtype, [&]<class T>() { fits = FitsIn<T>(v); }));
  if (!fits)
    return ctx.Fail("value {} does not fit in dtype {}", v.exact_int ? fmt::format("{}", v.i) : fmt::format("{}", v.d),
                    DTypeAttrName(dtype_attr));
  ctx.SetOutput(kOut, dims, dtype);
  return Status::OK();
}

struct FillConstantAttrs {
  FillValue value;
  static FillConstantAttrs Decode(const AttrReader& a) {
    auto v = ParseFillValue(a);  // validated by the shape function
    return {v.ok() ? *v : FillValue{}};
  }
};

/// The shape tensors' values: ShapeTensor's elements, or the one element of each ShapeTensorList
/// tensor; empty when neither is bound.
StatusOr<std::vector<int64_t>> ShapeValues(const KernelContext& ctx) {
  std::vector<int64_t> values;
  if (const Tensor* t = ctx.InOpt(kShapeTensor)) return HostValues<int64_t>(*t, "ShapeTensor");
  for (int i = 0; i < ctx.NumIn(kShapeTensorList); ++i) {
    PC_ASSIGN_OR_RETURN(std::vector<int64_t> one, HostValues<int64_t>(ctx.In(kShapeTensorList, i), "ShapeTensorList"));
    if (one.size() != 1)
      return MakeError(ErrorCode::kShape, "ShapeTensorList {} has {} values but must hold one", i, one.size());
    values.push_back(one[0]);
  }
  return values;
}

template <class T>
Status FillConstantCpu(KernelContext& ctx, const FillConstantAttrs& a) {
  if (ctx.InOpt(kShapeTensor) != nullptr || ctx.NumIn(kShapeTensorList) > 0) {
    PC_ASSIGN_OR_RETURN(std::vector<int64_t> values, ShapeValues(ctx));
    PC_ASSIGN_OR_RETURN(Dims dims, fill::DimsFromShapeValues(values));
    PC_RETURN_IF_ERROR(ctx.ResizeOut(kOut, dims, DTypeOf<T>()));
  }
  Tensor& out = ctx.Out(kOut);
  T v = a.value.As<T>();
  T* p = out.data<T>();
  ParallelChunks(out.numel(), [&](int64_t b, int64_t n) { std::fill_n(p + b, n, v); });
  return Status::OK();
}

// ---- fill_zeros_like / assign ---------------------------------------------------------------

Status FillZerosCpu(KernelContext& ctx) {
  Tensor& out = ctx.Out(kOut);
  // All-zero bytes are zero for every element type, IEEE floats included.
  char* p = static_cast<char*>(out.raw_data());
  ParallelFor(static_cast<int64_t>(out.nbytes()), tensor_internal::kCopyGrainBytes,
              [&](int64_t b, int64_t e) { std::memset(p + b, 0, static_cast<size_t>(e - b)); });
  return Status::OK();
}

Status AssignCpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(kX);
  CopyBytes(ctx.Out(kOut).raw_data(), x.raw_data(), x.nbytes());
  return Status::OK();
}

/// assign's gradient is another assign: X@GRAD = Out@GRAD.
Status AssignGradMaker(GradMakerContext& ctx) {
  std::vector<std::string> dx = ctx.InputGrad("X");
  if (dx.empty() || dx[0] == ir::kEmptyVarName) return Status::OK();
  pb::OpDesc op = tensor_internal::NewOpWithKnownAttrs(ctx, "assign");
  AddInput(op, "X", ctx.OutputGrad("Out"));
  AddOutput(op, "Out", dx);
  ctx.Emit(std::move(op));
  return Status::OK();
}

// ---- cast -----------------------------------------------------------------------------------

Status InferCast(InferShapeContext& ctx) {
  int in_attr = ctx.Attr<int>("in_dtype"), out_attr = ctx.Attr<int>("out_dtype");
  PC_ASSIGN_OR_RETURN(DType out_dtype, DTypeFromProto(out_attr));
  DType x = ctx.InputDType(kX);
  // PaddlePaddle's kernel reads X's own dtype; a stale in_dtype would make the gradient's dtype wrong.
  if (x != DType::kUndefined && DTypeToProto(x) != in_attr)
    return ctx.Fail("X has dtype {} but in_dtype is {}", DTypeName(x), DTypeAttrName(in_attr));
  ctx.SetOutput(kOut, ctx.InputDims(kX), out_dtype);
  return Status::OK();
}

/// Out = static_cast<O>(X) element-wise; keyed by X's type, dispatching on Out's.
template <class In>
Status CastCpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(kX);
  Tensor& out = ctx.Out(kOut);
  if (out.dtype() == x.dtype()) {
    CopyBytes(out.raw_data(), x.raw_data(), x.nbytes());
    return Status::OK();
  }
  const In* xp = x.data<In>();
  return VisitDType(out.dtype(), [&]<class O>() {
    O* yp = out.data<O>();
    ParallelChunks(x.numel(), [&](int64_t b, int64_t n) {
      for (int64_t i = b; i < b + n; ++i) yp[i] = static_cast<O>(xp[i]);
    });
  });
}

/// The gradient of a floating cast is the reverse cast of Out@GRAD; integer and bool casts pass none.
Status CastGradMaker(GradMakerContext& ctx) {
  AttrReader attrs(ctx.forward(), ctx.registry().Find("cast"));
  int in = attrs.Get<int>("in_dtype"), out = attrs.Get<int>("out_dtype");
  auto in_t = DTypeFromProto(in), out_t = DTypeFromProto(out);
  if (!in_t.ok() || !out_t.ok() || !IsFloating(*in_t) || !IsFloating(*out_t)) return Status::OK();
  std::vector<std::string> dx = ctx.InputGrad("X");
  if (dx.empty() || dx[0] == ir::kEmptyVarName) return Status::OK();
  pb::OpDesc op = tensor_internal::NewOpWithKnownAttrs(ctx, "cast");
  AddInput(op, "X", ctx.OutputGrad("Out"));
  AddOutput(op, "Out", dx);
  tensor_internal::SetAttr(op, "in_dtype", out);
  tensor_internal::SetAttr(op, "out_dtype", in);
  ctx.Emit(std::move(op));
  return Status::OK();
}

}  // namespace

void RegisterFillOps(OpRegistry& r) {
  OpBuilder fill = r.Add("fill_constant");
  fill.Doc("Creates a tensor of `shape` and `dtype` with every element equal to `value` (or `str_value`).")
      .Input(kValueTensor, "A 1-element tensor overriding `value` (not supported yet).", kDispensable)
      .Input(kShapeTensor, "A 1-D int32/int64 tensor whose values are Out's shape; overrides `shape`.", kDispensable)
      .Input(kShapeTensorList,
             "One-element int32/int64 tensors, one per dimension of Out; override `shape` (which may hold -1 "
             "for the dimensions known only at run time).",
             kDuplicable | kDispensable)
      .Output(kOut, "The filled tensor.")
      .Attr("dtype", 5, "Element type of Out as a VarType.Type number (5 = float32).")
      .AllowedInts(tensor_internal::SupportedDTypeNumbers())
      .Attr("shape", std::vector<int64_t>{}, "Shape of Out; [] makes a 0-D tensor. Without shape tensors, no -1.")
      .Attr("value", 0.0f, "The fill value.")
      .Attr("str_value", "", "The fill value as text; overrides `value` when non-empty (exact for int64).")
      .Attr("force_cpu", false, "Keep Out in host memory even when the program runs on a GPU.")
      .Attr("place_type", -1, "PaddlePaddle's place override; ignored.")
      .ExtraAttr()
      .InferShape(InferFillConstant)
      .OutputDimsFromKernel({kShapeTensor, kShapeTensorList})
      .KernelDTypeFromAttr("dtype")
      .NoGradient();
  ForEachDType([&]<class T>() { fill.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(FillConstantCpu<T>)); });

  OpBuilder zeros = r.Add("fill_zeros_like");
  zeros.Doc("Out = zeros shaped and typed like X (the backward pass uses it for gradients nobody produced).")
      .Input(kX, "The tensor whose shape and dtype Out takes.")
      .Output(kOut, "A tensor of zeros shaped like X.")
      .InferShape(InferSameAsX)
      .NoGradient();
  ForEachDType([&]<class T>() { zeros.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(FillZerosCpu)); });

  OpBuilder assign = r.Add("assign");
  assign.Doc("Out = X (a copy).")
      .Input(kX, "The tensor to copy.")
      .Output(kOut, "The copy, shaped like X.")
      .InferShape(InferSameAsX)
      .Grad(AssignGradMaker);
  ForEachDType([&]<class T>() { assign.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(AssignCpu)); });

  OpBuilder cast = r.Add("cast");
  cast.Doc("Out = X converted element-wise to `out_dtype` with C++ static_cast semantics: float to int truncates "
           "toward zero (NaN and out-of-range values give unspecified results, as in PaddlePaddle), nonzero is true.")
      .Input(kX, "The tensor to convert; its dtype must be `in_dtype`.")
      .Output(kOut, "The converted tensor, shaped like X.")
      .Attr("in_dtype", 5, "Element type of X as a VarType.Type number.")
      .AllowedInts(tensor_internal::SupportedDTypeNumbers())
      .Attr("out_dtype", 5, "Element type of Out as a VarType.Type number.")
      .AllowedInts(tensor_internal::SupportedDTypeNumbers())
      .InferShape(InferCast)
      .Grad(CastGradMaker);
  ForEachDType([&]<class T>() { cast.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(CastCpu<T>)); });
}

}  // namespace paddlec::ops
