// top_k_v2: the k largest (or smallest) entries along an axis with their int64 indices, and its gradient.
//
// Order: ties go to the lower index; NaN ranks above every number (first when largest, last when
// smallest, as NumPy sorts). sorted = false returns the selected entries in ascending index order.
// Each line is selected in one pass keeping the k best so far (small k, the common case) or with
// nth_element followed by sorting the k winners, in per-thread scratch kept by the kernel (grown
// once, then reused).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>

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
    size_t threads = static_cast<size_t>(omp_get_max_threads());
    if (scratch_.size() < threads) scratch_.resize(threads);
    for (auto& s : scratch_)
      if (static_cast<int64_t>(s.idx.size()) < l.n) {
        s.idx.resize(l.n);
        s.vals.resize(l.n);
      }
    ParallelFor(l.outer * l.inner, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(l.n, 1)),
                [&](int64_t b, int64_t e) {
                  Scratch& s = scratch_[omp_get_thread_num()];
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
}

}  // namespace paddlec::ops
