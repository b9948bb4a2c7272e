// The tensor family's CUDA kernels as paddlec kernels: fill_constant, fill_zeros_like, assign, cast,
// reshape2 / flatten_contiguous_range / squeeze2 / unsqueeze2 (copies, as on the CPU) and their
// gradients, shape, transpose2 (+ grad), concat (+ grad), split, stack (+ grad), top_k_v2 (+ grad)
// and arg_max, for every dtype the CPU registers; slice and gather are in index_cuda.cc. Copies and zero
// fills are cudaMemcpyAsync / cudaMemsetAsync on the context's stream; the rest call the launchers
// of fill.cu, shape.cu, concat_split.cu and top_k.cu. Built into libpaddlec_cuda.so only.
#include "tensor/tensor_cuda.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/cuda_host.h"
#include "common/data_dtypes.h"
#include "tensor/arg_max_slots.h"
#include "tensor/fill_slots.h"

namespace paddlec::ops {

Status RegisterIndexCudaKernels(OpRegistry& r);  // index_cuda.cc: slice, gather and their gradients

namespace {

namespace ti = tensor_index;
static_assert(ti::kMaxRank == kMaxRank, "tensor_index.h's kMaxRank must equal paddlec's");

/// dst = src (n bytes) on the stream; nothing when they coincide (in-place outputs).
Status CopyAsync(KernelContext& ctx, void* dst, const void* src, size_t n, const char* what) {
  if (dst == src || n == 0) return Status::OK();
  return cuda::Launched(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, cuda::Stream(ctx)), what);
}

// ---- fill_constant, fill_zeros_like, assign, cast ----------------------------------------------

constexpr InSlot kX{0, "X"};
constexpr OutSlot kOut{0, "Out"};

/// fill_constant's value (fill.cc's FillValue): a double, or an exact int64 when `str_value` is an integer.
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

/// `value`, or `str_value` when non-empty; the shape function has validated it (as fill.cc parses it).
FillValue ParseFillValue(const AttrReader& a) {
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
  v.d = std::strtod(s.c_str(), nullptr);
  return v;
}

/// True when the op instance binds a shape tensor (fill_slots.h): its values size Out.
bool BindsShapeTensors(const KernelInit& init) {
  for (const auto& slot : init.attrs.op().inputs())
    if ((slot.parameter() == fill::kShapeTensor.name || slot.parameter() == fill::kShapeTensorList.name) &&
        slot.arguments_size() > 0)
      return true;
  return false;
}

template <class T>
class FillConstantGpu final : public OpKernel {
 public:
  explicit FillConstantGpu(const KernelInit& init)
      : value_(ParseFillValue(init.attrs).As<T>()), shape_tensors_(BindsShapeTensors(init)) {}
  // Shape tensors are copied to the host every run.
  bool Replayable() const override { return !shape_tensors_; }
  Status Run(KernelContext& ctx) override {
    if (shape_tensors_) PC_RETURN_IF_ERROR(ResizeFromShapeTensors(ctx));
    Tensor& out = ctx.Out(kOut);
    const T zero{};
    if (std::memcmp(&value_, &zero, sizeof(T)) == 0)  // all-zero bytes (not -0.0): a memset
      return cuda::Launched(cudaMemsetAsync(out.raw_data(), 0, out.nbytes(), cuda::Stream(ctx)), "fill_constant");
    return cuda::Launched(cuda::Fill<T>(out.data<T>(), out.numel(), value_, cuda::Stream(ctx)), "fill_constant");
  }

 private:
  /// Out's dims from ShapeTensor's elements, or the one element of each ShapeTensorList tensor.
  Status ResizeFromShapeTensors(KernelContext& ctx) {
    std::vector<int64_t> values;
    if (const Tensor* t = ctx.InOpt(fill::kShapeTensor)) {
      PC_ASSIGN_OR_RETURN(values, cuda::DeviceValues<int64_t>(cuda::Cuda(ctx), *t, "ShapeTensor"));
    } else {
      for (int i = 0; i < ctx.NumIn(fill::kShapeTensorList); ++i) {
        PC_ASSIGN_OR_RETURN(
            std::vector<int64_t> one,
            cuda::DeviceValues<int64_t>(cuda::Cuda(ctx), ctx.In(fill::kShapeTensorList, i), "ShapeTensorList"));
        if (one.size() != 1)
          return MakeError(ErrorCode::kShape, "ShapeTensorList {} has {} values but must hold one", i, one.size());
        values.push_back(one[0]);
      }
    }
    PC_ASSIGN_OR_RETURN(Dims dims, fill::DimsFromShapeValues(values));
    return ctx.ResizeOut(kOut, dims, DTypeOf<T>());
  }

  T value_;
  bool shape_tensors_;
};

Status FillZerosGpu(KernelContext& ctx) {
  Tensor& out = ctx.Out(kOut);
  return cuda::Launched(cudaMemsetAsync(out.raw_data(), 0, out.nbytes(), cuda::Stream(ctx)), "fill_zeros_like");
}

Status AssignGpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(kX);
  return CopyAsync(ctx, ctx.Out(kOut).raw_data(), x.raw_data(), x.nbytes(), "assign");
}

/// Out = static_cast<O>(X); keyed by X's type, dispatching on Out's (the CPU kernel's rule).
template <class In>
Status CastGpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(kX);
  Tensor& out = ctx.Out(kOut);
  if (out.dtype() == x.dtype()) return CopyAsync(ctx, out.raw_data(), x.raw_data(), x.nbytes(), "cast");
  cudaError_t e = cudaSuccess;
  PC_RETURN_IF_ERROR(VisitDType(out.dtype(), [&]<class O>() {
    e = cuda::Cast<In, O>(x.data<In>(), out.data<O>(), x.numel(), cuda::Stream(ctx));
  }));
  return cuda::Launched(e, "cast");
}

// ---- reshape2, flatten_contiguous_range, transpose2 and their gradients -------------------------

constexpr InSlot kDOut{1, "Out@GRAD"};  // (XShape, Out@GRAD) -> X@GRAD
constexpr OutSlot kDX{0, "X@GRAD"};

Status CopyForwardGpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(kX);
  return CopyAsync(ctx, ctx.Out(kOut).raw_data(), x.raw_data(), x.nbytes(), "reshape/flatten");
}

Status CopyGradGpu(KernelContext& ctx) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& dout = ctx.In(kDOut);
  return CopyAsync(ctx, dx->raw_data(), dout.raw_data(), dout.nbytes(), "reshape/flatten grad");
}

/// `axis` as a permutation of rank `rank` (negative entries normalized); false when it is not one.
bool MakePerm(const std::vector<int>& axis, int rank, int* perm) {
  if (static_cast<int>(axis.size()) != rank) return false;
  bool seen[kMaxRank] = {};
  for (int i = 0; i < rank; ++i) {
    int a = NormalizeAxis(axis[i], rank);
    if (a < 0 || seen[a]) return false;
    seen[a] = true;
    perm[i] = a;
  }
  return true;
}

Status Transpose(KernelContext& ctx, const Tensor& in, Tensor& out, const int* perm) {
  int64_t dims[kMaxRank];
  for (int a = 0; a < in.dims().rank(); ++a) dims[a] = in.dims()[a];
  const ti::TransposePlan plan = ti::MakeTransposePlan(dims, perm, in.dims().rank());
  return cuda::Launched(
      cuda::Transpose(in.raw_data(), out.raw_data(), static_cast<int>(SizeOf(in.dtype())), plan, cuda::Stream(ctx)),
      "transpose2");
}

class TransposeGpu final : public OpKernel {
 public:
  TransposeGpu(const KernelInit& init, bool grad) : axis_(init.attrs.Get<std::vector<int>>("axis")), grad_(grad) {}
  Status Run(KernelContext& ctx) override {
    if (!grad_) {
      const Tensor& x = ctx.In(kX);
      int perm[kMaxRank];
      if (!MakePerm(axis_, x.dims().rank(), perm))
        return MakeError(ErrorCode::kRuntime, "transpose2: axis does not fit X of shape {}", x.dims().ToString());
      return Transpose(ctx, x, ctx.Out(kOut), perm);
    }
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    const Tensor& dout = ctx.In(kDOut);
    int perm[kMaxRank], inv[kMaxRank];
    if (!MakePerm(axis_, dout.dims().rank(), perm))
      return MakeError(ErrorCode::kRuntime, "transpose2_grad: axis does not fit Out@GRAD of shape {}",
                       dout.dims().ToString());
    ti::InvertPermutation(perm, dout.dims().rank(), inv);  // X@GRAD = transpose(Out@GRAD, inverse)
    return Transpose(ctx, dout, *dx, inv);
  }

 private:
  std::vector<int> axis_;
  bool grad_;
};

// ---- concat, concat_grad, split -----------------------------------------------------------------

constexpr InSlot kXIn{0, "X"};  // concat_grad: the forward inputs
constexpr InSlot kDOutConcat{1, "Out@GRAD"};

/// Moves parts [0, nparts) between `whole` (outer rows of whole_len * inner_bytes bytes) and the parts
/// (part(i): data or null to skip; len(i): length along the axis), kMaxParts per launch.
template <class PartFn, class LenFn>
Status MoveAllParts(KernelContext& ctx, void* whole, int64_t outer, int64_t whole_len, int64_t inner_bytes, int nparts,
                    bool gather, PartFn part, LenFn len) {
  int64_t off = 0;
  for (int first = 0; first < nparts; first += ti::kMaxParts) {
    ti::PartTable t;
    t.count = std::min(ti::kMaxParts, nparts - first);
    for (int j = 0; j < t.count; ++j) {
      t.offset[j] = off;
      t.ptr[j] = part(first + j);
      off += len(first + j) * inner_bytes;
    }
    t.offset[t.count] = off;
    PC_RETURN_IF_ERROR(
        cuda::Launched(cuda::MoveParts(whole, outer, whole_len * inner_bytes, t, gather, cuda::Stream(ctx)),
                       gather ? "concat" : "split"));
  }
  return Status::OK();
}

struct AxisAttrs {
  int axis;
  static AxisAttrs Decode(const AttrReader& a) { return {a.Get<int>("axis")}; }
};

/// [outer, dim * inner_bytes] around `axis` of a tensor of `whole` dims.
struct RowView {
  int64_t outer, inner_bytes;
};
RowView ViewAt(const Dims& whole, int axis, DType t) {
  return {whole.Product(0, axis), whole.Product(axis + 1, whole.rank()) * static_cast<int64_t>(SizeOf(t))};
}

Status ConcatGpu(KernelContext& ctx, const AxisAttrs& a) {
  Tensor& out = ctx.Out(kOut);
  const int axis = NormalizeAxis(a.axis, out.dims().rank());
  const RowView v = ViewAt(out.dims(), axis, out.dtype());
  return MoveAllParts(
      ctx, out.raw_data(), v.outer, out.dims()[axis], v.inner_bytes, ctx.NumIn(kX), true,
      [&](int i) { return const_cast<void*>(ctx.In(kX, i).raw_data()); },
      [&](int i) { return ctx.In(kX, i).dims()[axis]; });
}

/// X@GRAD[i] = the slice of Out@GRAD that X[i] filled; @EMPTY@ gradients keep their place.
Status ConcatGradGpu(KernelContext& ctx, const AxisAttrs& a) {
  const Tensor& dout = ctx.In(kDOutConcat);
  const int axis = NormalizeAxis(a.axis, dout.dims().rank());
  const RowView v = ViewAt(dout.dims(), axis, dout.dtype());
  return MoveAllParts(
      ctx, const_cast<void*>(dout.raw_data()), v.outer, dout.dims()[axis], v.inner_bytes, ctx.NumIn(kXIn), false,
      [&](int i) -> void* {
        Tensor* dx = ctx.OutOpt(kDX, i);
        return dx ? dx->raw_data() : nullptr;
      },
      [&](int i) { return ctx.In(kXIn, i).dims()[axis]; });
}

struct SplitAttrs {
  int axis, num;
  std::vector<int> sections;
  static SplitAttrs Decode(const AttrReader& a) {
    return {a.Get<int>("axis"), a.Get<int>("num"), a.Get<std::vector<int>>("sections")};
  }
};

Status SplitGpu(KernelContext& ctx, const SplitAttrs& a) {
  const Tensor& x = ctx.In(kX);
  const int axis = NormalizeAxis(a.axis, x.dims().rank());
  const RowView v = ViewAt(x.dims(), axis, x.dtype());
  const int64_t dim = x.dims()[axis];
  // Part lengths come from the attributes, so an @EMPTY@ output still keeps its place.
  int64_t rest = dim;
  for (int s : a.sections) rest -= s == -1 ? 0 : s;
  return MoveAllParts(
      ctx, const_cast<void*>(x.raw_data()), v.outer, dim, v.inner_bytes, ctx.NumOut(kOut), false,
      [&](int i) -> void* {
        Tensor* o = ctx.OutOpt(kOut, i);
        return o ? o->raw_data() : nullptr;
      },
      [&](int i) -> int64_t {
        if (a.num > 0) return dim / a.num;
        return a.sections[i] == -1 ? rest : a.sections[i];
      });
}

/// stack: a concat along the new axis of Y, each X one unit long (concat_split.cc's view).
constexpr OutSlot kY{0, "Y"};
constexpr InSlot kDY{1, "Y@GRAD"};  // stack_grad: (X, Y@GRAD) -> X@GRAD

Status StackGpu(KernelContext& ctx, const AxisAttrs& a) {
  Tensor& y = ctx.Out(kY);
  const int axis = NormalizeAxis(a.axis, y.dims().rank());
  const RowView v = ViewAt(y.dims(), axis, y.dtype());
  return MoveAllParts(
      ctx, y.raw_data(), v.outer, y.dims()[axis], v.inner_bytes, ctx.NumIn(kX), true,
      [&](int i) { return const_cast<void*>(ctx.In(kX, i).raw_data()); }, [](int) { return int64_t{1}; });
}

Status StackGradGpu(KernelContext& ctx, const AxisAttrs& a) {
  const Tensor& dy = ctx.In(kDY);
  const int axis = NormalizeAxis(a.axis, dy.dims().rank());
  const RowView v = ViewAt(dy.dims(), axis, dy.dtype());
  return MoveAllParts(
      ctx, const_cast<void*>(dy.raw_data()), v.outer, dy.dims()[axis], v.inner_bytes, ctx.NumOut(kDX), false,
      [&](int i) -> void* {
        Tensor* dx = ctx.OutOpt(kDX, i);
        return dx ? dx->raw_data() : nullptr;
      },
      [](int) { return int64_t{1}; });
}

// ---- shape --------------------------------------------------------------------------------------

constexpr InSlot kShapeInput{0, "Input"};

Status ShapeGpu(KernelContext& ctx) {
  const Dims& d = ctx.In(kShapeInput).dims();
  cuda::ShapeValues v;
  v.rank = d.rank();
  for (int i = 0; i < d.rank(); ++i) v.dims[i] = static_cast<int32_t>(d[i]);
  return cuda::Launched(cuda::WriteShape(ctx.Out(kOut).data<int32_t>(), v, cuda::Stream(ctx)), "shape");
}

// ---- arg_max ------------------------------------------------------------------------------------

template <class T>
Status ArgMaxGpu(KernelContext& ctx, const arg_max::ArgMaxAttrs& a) {
  const Tensor& x = ctx.In(arg_max::kX);
  Tensor& out = ctx.Out(arg_max::kOut);
  const arg_max::ArgLines l = arg_max::LinesOf(x.dims(), a);
  if (out.dtype() == DType::kInt32) {
    if (l.n > INT32_MAX)
      return MakeError(ErrorCode::kRuntime,
                       "X has {} entries along the axis, too many for int32 indices: use dtype 3 (int64)", l.n);
    return cuda::Launched(
        cuda::ArgMax<T, int32_t>(x.data<T>(), out.data<int32_t>(), l.outer, l.n, l.inner, cuda::Stream(ctx)),
        "arg_max");
  }
  return cuda::Launched(
      cuda::ArgMax<T, int64_t>(x.data<T>(), out.data<int64_t>(), l.outer, l.n, l.inner, cuda::Stream(ctx)), "arg_max");
}

// ---- top_k_v2 -----------------------------------------------------------------------------------

constexpr OutSlot kIndices{1, "Indices"};
constexpr InSlot kIndicesIn{1, "Indices"};  // top_k_v2_grad: (X, Indices, Out@GRAD) -> X@GRAD
constexpr InSlot kDOutTopK{2, "Out@GRAD"};

/// [outer, n, inner] around `axis` (a 0-D tensor is one line of one element).
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};
Lines LinesOf(const Dims& d, int axis_attr) {
  if (d.rank() == 0) return {};
  int a = NormalizeAxis(axis_attr, d.rank());
  return {d.Product(0, a), d[a], d.Product(a + 1, d.rank())};
}

template <class T>
class TopKGpu final : public OpKernel {
 public:
  explicit TopKGpu(const KernelInit& init)
      : k_(init.attrs.Get<int>("k")),
        axis_(init.attrs.Get<int>("axis")),
        largest_(init.attrs.Get<bool>("largest")),
        sorted_(init.attrs.Get<bool>("sorted")) {}
  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Lines l = LinesOf(x.dims(), axis_);
    if (l.n < k_)
      return MakeError(ErrorCode::kRuntime, "k = {} is larger than X's dimension {} along axis {} (X has shape {})", k_,
                       l.n, axis_, x.dims().ToString());
    return cuda::Launched(cuda::TopK<T>(x.data<T>(), ctx.Out(kOut).data<T>(), ctx.Out(kIndices).data<int64_t>(),
                                        l.outer, l.n, l.inner, k_, largest_, sorted_, cuda::Stream(ctx)),
                          "top_k_v2");
  }

 private:
  int k_, axis_;
  bool largest_, sorted_;
};

template <class T>
Status TopKGradGpu(KernelContext& ctx, const AxisAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& indices = ctx.In(kIndicesIn);
  const Lines l = LinesOf(ctx.In(kXIn).dims(), a.axis);
  const int64_t k = LinesOf(indices.dims(), a.axis).n;
  return cuda::Launched(cuda::TopKGrad<T>(indices.data<int64_t>(), ctx.In(kDOutTopK).data<T>(), dx->data<T>(), l.outer,
                                          l.n, l.inner, k, cuda::Stream(ctx)),
                        "top_k_v2_grad");
}

}  // namespace

Status RegisterTensorCudaKernels(OpRegistry& r) {
  constexpr DeviceType kGpu = DeviceType::kCUDA;
  Status st;
  auto add = [&](const char* op, DType t, KernelFactory f) {
    if (st.ok()) st = r.AddKernel(op, kGpu, t, std::move(f));
  };
  ForEachDType([&]<class T>() {
    const DType t = DTypeOf<T>();
    add("fill_constant", t, MakeKernelClass<FillConstantGpu<T>>());
    add("fill_zeros_like", t, MakeKernel(FillZerosGpu));
    add("assign", t, MakeKernel(AssignGpu));
    add("cast", t, MakeKernel(CastGpu<T>));
    for (const char* op : {"reshape2", "flatten_contiguous_range", "squeeze2", "unsqueeze2"}) {
      add(op, t, MakeKernel(CopyForwardGpu));
      add((std::string(op) + "_grad").c_str(), t, MakeKernel(CopyGradGpu));
    }
    add("transpose2", t, [](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
      return std::unique_ptr<OpKernel>(new TransposeGpu(init, false));
    });
    add("transpose2_grad", t, [](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
      return std::unique_ptr<OpKernel>(new TransposeGpu(init, true));
    });
    add("concat", t, MakeKernel(ConcatGpu));
    add("concat_grad", t, MakeKernel(ConcatGradGpu));
    add("split", t, MakeKernel(SplitGpu));
    add("stack", t, MakeKernel(StackGpu));
    add("stack_grad", t, MakeKernel(StackGradGpu));
    add("shape", t, MakeKernel(ShapeGpu));
  });
  add("arg_max", DType::kFloat32, MakeKernel(ArgMaxGpu<float>));
  add("arg_max", DType::kFloat64, MakeKernel(ArgMaxGpu<double>));
  add("arg_max", DType::kInt32, MakeKernel(ArgMaxGpu<int32_t>));
  add("arg_max", DType::kInt64, MakeKernel(ArgMaxGpu<int64_t>));
  add("top_k_v2", DType::kFloat32, MakeKernelClass<TopKGpu<float>>());
  add("top_k_v2", DType::kFloat64, MakeKernelClass<TopKGpu<double>>());
  add("top_k_v2", DType::kInt32, MakeKernelClass<TopKGpu<int32_t>>());
  add("top_k_v2", DType::kInt64, MakeKernelClass<TopKGpu<int64_t>>());
  add("top_k_v2_grad", DType::kFloat32, MakeKernel(TopKGradGpu<float>));
  add("top_k_v2_grad", DType::kFloat64, MakeKernel(TopKGradGpu<double>));
  if (!st.ok()) return st;
  return RegisterIndexCudaKernels(r);
}

}  // namespace paddlec::ops
