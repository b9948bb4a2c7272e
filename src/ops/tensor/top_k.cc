// Selection along an axis: top_k_v2 (the k largest or smallest entries with their int64 indices)
// and its gradient, and arg_max (the index of the largest entry).
//
// Order: ties go to the lower index; NaN ranks above every number (first when largest, last when
// smallest, as NumPy sorts). sorted = false returns the selected entries in ascending index order.
// Each line is selected in one pass keeping the k best so far (small k, the common case) or with
// nth_element followed by sorting the k winners, in per-thread scratch kept by the kernel (grown
// once, then reused).

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tensor/arg_max_slots.h"
#include "tensor/tensor_index.h"
#include "tensor/tensor_internal.h"

namespace paddlec::ops {
namespace {

constexpr InSlot kX{0, "X"};
constexpr InSlot kK{1, "K"};
constexpr OutSlot kOut{0, "Out"};
constexpr OutSlot kIndices{1, "Indices"};
// top_k_v2_grad: (X, Indices, Out@GRAD) -> X@GRAD.
constexpr InSlot kXIn{0, "X"};
constexpr InSlot kIndicesIn{1, "Indices"};
constexpr InSlot kDOut{2, "Out@GRAD"};
constexpr OutSlot kDX{0, "X@GRAD"};

Status InferTopK(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kK, "k"));
  Dims x = ctx.InputDims(kX);
  int k = ctx.Attr<int>("k"), axis_attr = ctx.Attr<int>("axis");
  Dims out = x;
  if (x.rank() == 0) {
    if (axis_attr != 0 && axis_attr != -1) return ctx.Fail("axis {} is out of range for a 0-D X", axis_attr);
    if (k != 1) return ctx.Fail("k = {} is larger than the single element of a 0-D X", k);
  } else {
    int axis = NormalizeAxis(axis_attr, x.rank());
    if (axis < 0)
      return ctx.Fail("axis {} is out of range for X of shape {} (rank {})", axis_attr, x.ToString(), x.rank());
    if (x[axis] >= 0 && k > x[axis])
      return ctx.Fail("k = {} is larger than dimension {} ({}) of X of shape {}", k, axis, x[axis], x.ToString());
    out[axis] = k;
  }
  ctx.SetOutput(kOut, out, ctx.InputDType(kX));
  ctx.SetOutput(kIndices, out, DType::kInt64);
  return Status::OK();
}

/// [outer, n, inner] around `axis` (a 0-D tensor is one line of one element).
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};
Lines LinesOf(const Dims& d, int axis_attr) {
  if (d.rank() == 0) return {};
  int a = NormalizeAxis(axis_attr, d.rank());
  return {d.Product(0, a), d[a], d.Product(a + 1, d.rank())};
}

/// a ranks before b (ignoring indices): greater when `largest`, smaller otherwise, NaN the greatest.
template <class T>
bool Before(T a, T b, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    bool an = std::isnan(a), bn = std::isnan(b);
    if (an || bn) return largest ? (an && !bn) : (!an && bn);
  }
  return largest ? a > b : a < b;
}

template <class T>
class TopKKernel final : public OpKernel {
 public:
  explicit TopKKernel(const KernelInit& init)
      : k_(init.attrs.Get<int>("k")),
        axis_(init.attrs.Get<int>("axis")),
        largest_(init.attrs.Get<bool>("largest")),
        sorted_(init.attrs.Get<bool>("sorted")) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    Lines l = LinesOf(x.dims(), axis_);
    if (l.n < k_)
      return MakeError(ErrorCode::kRuntime, "k = {} is larger than X's dimension {} along axis {} (X has shape {})", k_,
                       l.n, axis_, x.dims().ToString());
    const T* xp = x.data<T>();
    T* out = ctx.Out(kOut).data<T>();
    int64_t* idx_out = ctx.Out(kIndices).data<int64_t>();
    const int64_t k = k_;
    // Scratch per thread, grown only when a longer axis arrives.
    size_t threads = static_cast<size_t>(runtime::LoopThreads());
    if (scratch_.size() < threads) scratch_.resize(threads);
    for (auto& s : scratch_)
      if (static_cast<int64_t>(s.idx.size()) < l.n) {
        s.idx.resize(l.n);
        s.vals.resize(l.n);
      }
    ParallelFor(l.outer * l.inner, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(l.n, 1)),
                [&](int64_t b, int64_t e, int slot) {
                  Scratch& s = scratch_[slot];
                  for (int64_t line = b; line < e; ++line) {
                    int64_t o = line / l.inner, in = line % l.inner;
                    const T* src = xp + o * l.n * l.inner + in;
                    const T* v = src;
                    if (l.inner != 1) {  // gather the strided line once so selection reads it contiguously
                      for (int64_t j = 0; j < l.n; ++j) s.vals[j] = src[j * l.inner];
                      v = s.vals.data();
                    }
                    int64_t* sel = s.idx.data();
                    SelectLine(v, l.n, k, sel);
                    T* dst = out + o * k * l.inner + in;
                    int64_t* dsti = idx_out + o * k * l.inner + in;
                    for (int64_t j = 0; j < k; ++j) {
                      dst[j * l.inner] = v[sel[j]];
                      dsti[j * l.inner] = sel[j];
                    }
                  }
                });
    return Status::OK();
  }

 private:
  /// Leaves the indices of the k winners of v[0, n) in sel[0, k), in output order.
  void SelectLine(const T* v, int64_t n, int64_t k, int64_t* sel) const {
    const bool largest = largest_;
    if (k <= kInsertionMaxK) {
      // One pass keeping the k best so far sorted best-first: most elements cost one comparison with
      // the current k-th. Scanning in index order with strict comparisons keeps ties index-ordered.
      int64_t m = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (m == k && !Before(v[j], v[sel[k - 1]], largest)) continue;
        int64_t pos = m < k ? m++ : k - 1;
        while (pos > 0 && Before(v[j], v[sel[pos - 1]], largest)) {
          sel[pos] = sel[pos - 1];
          --pos;
        }
        sel[pos] = j;
      }
    } else {
      std::iota(sel, sel + n, int64_t{0});
      auto cmp = [&](int64_t a, int64_t b) {
        if (Before(v[a], v[b], largest)) return true;
        if (Before(v[b], v[a], largest)) return false;
        return a < b;
      };
      if (k < n) std::nth_element(sel, sel + k - 1, sel + n, cmp);
      if (sorted_) std::sort(sel, sel + k, cmp);
    }
    if (!sorted_) std::sort(sel, sel + k);
  }

  /// Up to this k the one-pass insertion selection beats nth_element (O(n k) worst case, ~n typical).
  static constexpr int64_t kInsertionMaxK = 16;

  struct Scratch {
    std::vector<int64_t> idx;
    std::vector<T> vals;
  };
  int k_, axis_;
  bool largest_, sorted_;
  std::vector<Scratch> scratch_;
};

struct TopKGradAttrs {
  int axis;
  static TopKGradAttrs Decode(const AttrReader& a) { return {a.Get<int>("axis")}; }
};

/// X@GRAD = zeros with Out@GRAD scattered to the selected positions (indices within a line are distinct).
template <class T>
Status TopKGradCpu(KernelContext& ctx, const TopKGradAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& indices = ctx.In(kIndicesIn);
  const Tensor& dout = ctx.In(kDOut);
  Lines l = LinesOf(ctx.In(kXIn).dims(), a.axis);
  const int64_t k = LinesOf(indices.dims(), a.axis).n;
  const int64_t* ip = indices.data<int64_t>();
  const T* gp = dout.data<T>();
  T* dp = dx->data<T>();
  ParallelFor(l.outer * l.inner, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(l.n, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t line = b; line < e; ++line) {
                  int64_t o = line / l.inner, in = line % l.inner;
                  T* dst = dp + o * l.n * l.inner + in;
                  for (int64_t j = 0; j < l.n; ++j) dst[j * l.inner] = T(0);
                  const int64_t* sel = ip + o * k * l.inner + in;
                  const T* g = gp + o * k * l.inner + in;
                  for (int64_t j = 0; j < k; ++j) dst[sel[j * l.inner] * l.inner] = g[j * l.inner];
                }
              });
  return Status::OK();
}

// ---- arg_max --------------------------------------------------------------------------------

Status InferArgMax(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(arg_max::kX);
  const auto a = arg_max::ArgMaxAttrs::Decode(ctx.attrs());
  if (a.dtype != -1 && a.dtype != 2 && a.dtype != 3)
    return ctx.Fail("dtype {} is not an index type: use 2 (int32) or 3 (int64)",
                    tensor_internal::DTypeAttrName(a.dtype));
  Dims out;
  if (a.flatten || x.rank() == 0) {
    if (x.rank() == 0 && a.axis != 0 && a.axis != -1) return ctx.Fail("axis {} is out of range for a 0-D X", a.axis);
    if (a.keepdims) out = Dims::Filled(x.rank(), 1);
  } else {
    if (a.axis < -x.rank() || a.axis >= x.rank())
      return ctx.Fail("axis {} is out of range for X of shape {}: it must be in [{}, {}]", a.axis, x.ToString(),
                      -x.rank(), x.rank() - 1);
    const int axis = NormalizeAxis(static_cast<int>(a.axis), x.rank());
    if (x[axis] == 0)
      return ctx.Fail("X of shape {} has no entries along axis {} to take the arg max of", x.ToString(), axis);
    for (int i = 0; i < x.rank(); ++i) {
      if (i != axis)
        out.push_back(x[i]);
      else if (a.keepdims)
        out.push_back(1);
    }
  }
  if (x.IsFullyKnown() && x.Numel() == 0)
    return ctx.Fail("X of shape {} has no entries to take the arg max of", x.ToString());
  ctx.SetOutput(arg_max::kOut, out, a.out_dtype());
  return Status::OK();
}

/// The index of the largest entry of each line (the first on ties; NaN above every number). Lines
/// along the last axis are scanned one by one; otherwise the running maxima of `inner` lines are
/// updated together, a contiguous row at a time.
template <class T, class I>
void ArgMaxLines(const T* x, I* out, const arg_max::ArgLines& l) {
  if (l.inner == 1) {
    ParallelFor(l.outer, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(l.n, 1)),
                [&](int64_t b, int64_t e) {
                  for (int64_t o = b; o < e; ++o) {
                    const T* v = x + o * l.n;
                    // The running maximum stays in a register and changes rarely (well-predicted
                    // branch); the first NaN ends the scan, as it ranks above every number.
                    T best = v[0];
                    int64_t bi = 0;
                    if (!tensor_index::IsNan(best)) {
                      for (int64_t k = 1; k < l.n; ++k) {
                        const T vk = v[k];
                        if (vk > best) {
                          best = vk;
                          bi = k;
                        } else if (tensor_index::IsNan(vk)) {
                          bi = k;
                          break;
                        }
                      }
                    }
                    out[o] = static_cast<I>(bi);
                  }
                });
    return;
  }
  // Blocks of kBlock lines keep their running maxima on the stack.
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (l.inner + kBlock - 1) / kBlock;
  ParallelFor(l.outer * blocks, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(l.n * kBlock, 1)),
              [&](int64_t b, int64_t e) {
                T best[kBlock];
                for (int64_t job = b; job < e; ++job) {
                  const int64_t o = job / blocks, i0 = (job % blocks) * kBlock;
                  const int64_t len = std::min(kBlock, l.inner - i0);
                  const T* v = x + o * l.n * l.inner + i0;
                  I* idx = out + o * l.inner + i0;
                  std::copy(v, v + len, best);
                  std::fill(idx, idx + len, I(0));
                  for (int64_t k = 1; k < l.n; ++k) {
                    const T* row = v + k * l.inner;
                    for (int64_t i = 0; i < len; ++i) {
                      const bool take = Before(row[i], best[i], true);
                      best[i] = take ? row[i] : best[i];
                      idx[i] = take ? static_cast<I>(k) : idx[i];
                    }
                  }
                }
              });
}

template <class T>
Status ArgMaxCpu(KernelContext& ctx, const arg_max::ArgMaxAttrs& a) {
  const Tensor& x = ctx.In(arg_max::kX);
  Tensor& out = ctx.Out(arg_max::kOut);
  const arg_max::ArgLines l = arg_max::LinesOf(x.dims(), a);
  if (out.dtype() == DType::kInt32) {
    if (l.n > INT32_MAX)
      return MakeError(ErrorCode::kRuntime,
                       "X has {} entries along the axis, too many for int32 indices: use dtype 3 (int64)", l.n);
    ArgMaxLines(x.data<T>(), out.data<int32_t>(), l);
  } else {
    ArgMaxLines(x.data<T>(), out.data<int64_t>(), l);
  }
  return Status::OK();
}

}  // namespace

void RegisterTopKOps(OpRegistry& r) {
  OpBuilder topk = r.Add("top_k_v2");
  topk.Doc(
          "The k largest (or smallest) entries of X along `axis` and their indices. Ties go to the lower index; "
          "NaN ranks above every number.")
      .Input(kX, "The input tensor.")
      .Input(kK, "A 1-element int tensor overriding `k` (not supported yet).", kDispensable)
      .Output(kOut, "The selected values: X's shape with k along the axis.")
      .Output(kIndices, "int64 indices of the selected values along the axis, shaped like Out.")
      .Attr("k", 1, "Number of entries to select.")
      .Min(1)
      .Attr("axis", -1, "The axis to select along; negative counts from the end.")
      .Attr("largest", true, "Select the largest entries (false: the smallest).")
      .Attr("sorted", true, "Return them best first (false: in ascending index order).")
      .InferShape(InferTopK)
      .NoGradInput(kK)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<TopKKernel<float>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<TopKKernel<double>>())
      .Kernel(DeviceType::kCPU, DType::kInt32, MakeKernelClass<TopKKernel<int32_t>>())
      .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernelClass<TopKKernel<int64_t>>());
  r.Add("top_k_v2_grad")
      .GradOf("top_k_v2")
      .Doc("Gradient of top_k_v2: Out@GRAD scattered into zeros at the selected indices.")
      .Input(kXIn, "The forward input (its shape only).")
      .Input(kIndicesIn, "The forward indices.")
      .Input(kDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(TopKGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(TopKGradCpu<double>));

  r.Add("arg_max")
      .Doc(
          "The index of the largest entry of X along `axis` (or of all of X with `flatten`); ties go to the lower "
          "index, NaN ranks above every number.")
      .Input(arg_max::kX, "The input tensor.")
      .Output(arg_max::kOut, "The indices: X's shape without the axis (kept as 1 with `keepdims`).")
      .RequiredAttr<int64_t>("axis", "The axis to search along; negative counts from the end.")
      .Attr("keepdims", false, "Keep the searched axis as a dimension of size 1.")
      .Attr("flatten", false, "Search all of X as one line (Out is 0-D, or all 1s with `keepdims`).")
      .Attr("dtype", 3, "VarType of Out: 2 (int32) or 3 (int64); -1 means int64.")
      .AllowedInts({-1, 2, 3})
      .InferShape(InferArgMax)
      .NoGradient()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(ArgMaxCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(ArgMaxCpu<double>))
      .Kernel(DeviceType::kCPU, DType::kInt32, MakeKernel(ArgMaxCpu<int32_t>))
      .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernel(ArgMaxCpu<int64_t>));
}

}  // namespace paddlec::ops
