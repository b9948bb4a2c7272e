// Binary element-wise ops with PaddlePaddle broadcasting: elementwise_{add,sub,mul,div,max,min} and
// their gradients.
//
// Forward kernels walk the output once with a coalesced StridedLoop (math/broadcast.h); equal
// shapes take a flat path, and the broadcast operand is read in place with stride 0, never copied.
// Gradient kernels walk the same domain and sum each gradient back onto its operand's shape
// (ReduceSpans), again without materializing anything of the output's size.
#include <type_traits>

#include "math/broadcast.h"
#include "math/elementwise_slots.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using namespace elementwise;  // NOLINT: the family's shared slots

using math::ElementwiseShapes;
using math::StridedLoop;

Status InferElementwise(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(kX), y = ctx.InputDims(kY);
  const DType xt = ctx.InputDType(kX), yt = ctx.InputDType(kY);
  if (xt != yt)
    return ctx.Fail("X has dtype {} but Y has dtype {}: elementwise ops need operands of one dtype", DTypeName(xt),
                    DTypeName(yt));
  PC_ASSIGN_OR_RETURN(ElementwiseShapes s, math::BroadcastElementwise(x, y, ctx.Attr<int>("axis")));
  ctx.SetOutput(kOut, s.out, xt);
  return Status::OK();
}

// ---- Functors -------------------------------------------------------------------------------
// F is the forward; DX / DY the partial derivatives times dOut, given d = dOut, x, y and o = Out at
// one output position. kUsesX / kUsesY / kUsesOut say which values the gradients read.

struct AddOp {
  static constexpr bool kUsesX = false, kUsesY = false, kUsesOut = false;
  static auto F(auto a, auto b) { return a + b; }
  static auto DX(auto d, auto, auto, auto) { return d; }
  static auto DY(auto d, auto, auto, auto) { return d; }
};
struct SubOp {
  static constexpr bool kUsesX = false, kUsesY = false, kUsesOut = false;
  static auto F(auto a, auto b) { return a - b; }
  static auto DX(auto d, auto, auto, auto) { return d; }
  static auto DY(auto d, auto, auto, auto) { return -d; }
};
struct MulOp {
  static constexpr bool kUsesX = true, kUsesY = true, kUsesOut = false;
  static auto F(auto a, auto b) { return a * b; }
  static auto DX(auto d, auto, auto y, auto) { return d * y; }
  static auto DY(auto d, auto x, auto, auto) { return d * x; }
};
struct DivOp {
  static constexpr bool kUsesX = false, kUsesY = true, kUsesOut = true;
  static auto F(auto a, auto b) { return a / b; }
  static auto DX(auto d, auto, auto y, auto) { return d / y; }
  static auto DY(auto d, auto, auto y, auto o) { return -d * o / y; }
};
// max/min gradients: the whole dOut goes to one operand; ties go to X.
struct MaxOp {
  static constexpr bool kUsesX = true, kUsesY = true, kUsesOut = false;
  static auto F(auto a, auto b) { return a > b ? a : b; }
  static auto DX(auto d, auto x, auto y, auto) { return x >= y ? d : decltype(d)(0); }
  static auto DY(auto d, auto x, auto y, auto) { return x < y ? d : decltype(d)(0); }
};
struct MinOp {
  static constexpr bool kUsesX = true, kUsesY = true, kUsesOut = false;
  static auto F(auto a, auto b) { return a < b ? a : b; }
  static auto DX(auto d, auto x, auto y, auto) { return x <= y ? d : decltype(d)(0); }
  static auto DY(auto d, auto x, auto y, auto) { return x > y ? d : decltype(d)(0); }
};

/// Ops whose X@GRAD is dOut itself where X has the output's shape: plan-memory runs their gradient
/// in place (src/passes/plan_memory.cc), and then that part has nothing to write.
template <class Op>
constexpr bool kDXIsDOut = std::is_same_v<Op, AddOp> || std::is_same_v<Op, SubOp>;

// ---- Forward ---------------------------------------------------------------------------------

/// One innermost run: X and Y either contiguous (true) or broadcast (false).
template <class Op, bool kXc, bool kYc, class T>
void ForwardRun(const T* x, const T* y, T* out, int64_t len) {
  if constexpr (kXc && kYc) {
    for (int64_t j = 0; j < len; ++j) out[j] = Op::F(x[j], y[j]);
  } else if constexpr (kXc) {
    const T b = y[0];
    for (int64_t j = 0; j < len; ++j) out[j] = Op::F(x[j], b);
  } else if constexpr (kYc) {
    const T a = x[0];
    for (int64_t j = 0; j < len; ++j) out[j] = Op::F(a, y[j]);
  } else {
    std::fill(out, out + len, Op::F(x[0], y[0]));
  }
}

template <class T, class Op>
class ElementwiseKernel final : public OpKernel {
 public:
  explicit ElementwiseKernel(const KernelInit& init) : axis_(init.attrs.Get<int>("axis")) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kX);
    const Tensor& y = ctx.In(kY);
    Tensor& out = ctx.Out(kOut);
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out.data<T>();
    if constexpr (std::is_integral_v<T> && std::is_same_v<Op, DivOp>) {
      if (std::find(yp, yp + y.numel(), T(0)) != yp + y.numel())
        return MakeError(ErrorCode::kRuntime, "integer division by zero: Y of shape {} holds a 0", y.dims().ToString());
    }
    if (x.dims() == y.dims()) {  // flat fast path
      ParallelChunks(out.numel(), [&](int64_t b, int64_t n) { ForwardRun<Op, true, true>(xp + b, yp + b, op + b, n); });
      return Status::OK();
    }
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(ElementwiseShapes s, math::BroadcastElementwise(x.dims(), y.dims(), axis_));
      loop_ = math::MakeLoop<3>(s.out, {s.out, s.x, s.y});
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    const bool xc = loop_.inner_stride(1) != 0, yc = loop_.inner_stride(2) != 0;
    math::ParallelSpans(loop_, [&](const int64_t* off, int64_t len) {
      const T* a = xp + off[1];
      const T* b = yp + off[2];
      T* o = op + off[0];
      if (xc && yc)
        ForwardRun<Op, true, true>(a, b, o, len);
      else if (xc)
        ForwardRun<Op, true, false>(a, b, o, len);
      else if (yc)
        ForwardRun<Op, false, true>(a, b, o, len);
      else
        ForwardRun<Op, false, false>(a, b, o, len);
    });
    return Status::OK();
  }

 private:
  int axis_;
  Dims x_dims_{-2}, y_dims_{-2};  // shapes loop_ was built for (-2: none yet)
  StridedLoop<3> loop_;
};

// ---- Backward --------------------------------------------------------------------------------

// Operands of a gradient loop over the output's shape.
enum { kOpDOut = 0, kOpX = 1, kOpY = 2, kOpOut = 3, kOpTarget = 4, kNumGradOperands = 5 };

struct GradBases {
  const void* dout;
  const void* x;
  const void* y;
  const void* out;
};

/// The gradient of one run: G(d, x, y, o) accumulated into the target, which is contiguous
/// (kTc; written with = when kAssign, else +=) or a single broadcast element (summed).
template <class Op, bool kDX, bool kXc, bool kYc, bool kTc, bool kAssign, class T>
void GradRun(const T* d, const T* x, const T* y, const T* o, T* t, int64_t len) {
  auto g = [&](int64_t j) {
    const T xv = Op::kUsesX ? (kXc ? x[j] : x[0]) : T(0);
    const T yv = Op::kUsesY ? (kYc ? y[j] : y[0]) : T(0);
    const T ov = Op::kUsesOut ? o[j] : T(0);
    return kDX ? Op::DX(d[j], xv, yv, ov) : Op::DY(d[j], xv, yv, ov);
  };
  if constexpr (!kTc) {
    t[0] += math::SumRun<T>(len, g);
  } else if constexpr (kAssign) {
    for (int64_t j = 0; j < len; ++j) t[j] = g(j);
  } else {
    for (int64_t j = 0; j < len; ++j) t[j] += g(j);
  }
}

template <class Op, bool kDX, bool kTc, bool kAssign, class T>
void GradRunDispatch(bool xc, bool yc, const T* d, const T* x, const T* y, const T* o, T* t, int64_t len) {
  if (xc && yc)
    GradRun<Op, kDX, true, true, kTc, kAssign>(d, x, y, o, t, len);
  else if (xc)
    GradRun<Op, kDX, true, false, kTc, kAssign>(d, x, y, o, t, len);
  else if (yc)
    GradRun<Op, kDX, false, true, kTc, kAssign>(d, x, y, o, t, len);
  else
    GradRun<Op, kDX, false, false, kTc, kAssign>(d, x, y, o, t, len);
}

template <class T, class Op>
class ElementwiseGradKernel final : public OpKernel {
 public:
  explicit ElementwiseGradKernel(const KernelInit& init) : axis_(init.attrs.Get<int>("axis")) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& x = ctx.In(kGradX);
    const Tensor& y = ctx.In(kGradY);
    const Tensor& dout = ctx.In(Op::kUsesOut ? kGradDOutAfterOut : kGradDOut);
    const T* out = Op::kUsesOut ? ctx.In(kGradOut).data<T>() : nullptr;
    Tensor* dx = ctx.OutOpt(kDX);
    Tensor* dy = ctx.OutOpt(kDY);
    if (!(x.dims() == x_dims_ && y.dims() == y_dims_)) {
      PC_ASSIGN_OR_RETURN(ElementwiseShapes s, math::BroadcastElementwise(x.dims(), y.dims(), axis_));
      if (!(s.out == dout.dims()))
        return MakeError(ErrorCode::kShape, "Out@GRAD has shape {} but X {} and Y {} broadcast to {}",
                         dout.dims().ToString(), x.dims().ToString(), y.dims().ToString(), s.out.ToString());
      // Operands the gradient does not read take the output's pattern, so they never split a run.
      const Dims& xs = Op::kUsesX ? s.x : s.out;
      const Dims& ys = Op::kUsesY ? s.y : s.out;
      loop_dx_ = math::MakeLoop<kNumGradOperands>(s.out, {s.out, xs, ys, s.out, s.x});
      loop_dy_ = math::MakeLoop<kNumGradOperands>(s.out, {s.out, xs, ys, s.out, s.y});
      dx_reduces_ = !(s.x == s.out);
      dy_reduces_ = !(s.y == s.out);
      x_dims_ = x.dims();
      y_dims_ = y.dims();
    }
    const T* xp = Op::kUsesX ? x.data<T>() : nullptr;
    const T* yp = Op::kUsesY ? y.data<T>() : nullptr;
    const bool dx_is_dout = kDXIsDOut<Op> && !dx_reduces_ && dx != nullptr && dx->data<T>() == dout.data<T>();
    if (dx != nullptr && !dx_is_dout)
      Compute<true>(loop_dx_, dx_reduces_, dout.data<T>(), xp, yp, out, dx->data<T>(), dx->numel());
    if (dy != nullptr) Compute<false>(loop_dy_, dy_reduces_, dout.data<T>(), xp, yp, out, dy->data<T>(), dy->numel());
    return Status::OK();
  }

 private:
  template <bool kDX>
  void Compute(const StridedLoop<kNumGradOperands>& loop, bool reduces, const T* d, const T* x, const T* y, const T* o,
               T* target, int64_t target_numel) {
    const bool xc = loop.inner_stride(kOpX) != 0, yc = loop.inner_stride(kOpY) != 0;
    auto at = [](const T* base, int64_t off) { return base ? base + off : nullptr; };
    if (!reduces) {  // one gradient element per output element
      math::ParallelSpans(loop, [&](const int64_t* off, int64_t len) {
        GradRunDispatch<Op, kDX, true, true>(xc, yc, d + off[kOpDOut], at(x, off[kOpX]), at(y, off[kOpY]),
                                             at(o, off[kOpOut]), target + off[kOpTarget], len);
      });
      return;
    }
    const bool tc = loop.inner_stride(kOpTarget) != 0;
    math::ReduceSpans(loop, kOpTarget, target, target_numel, scratch_, [&](const int64_t* off, int64_t len, T* base) {
      const T* dd = d + off[kOpDOut];
      const T* xx = at(x, off[kOpX]);
      const T* yy = at(y, off[kOpY]);
      const T* oo = at(o, off[kOpOut]);
      T* t = base + off[kOpTarget];
      if (tc)
        GradRunDispatch<Op, kDX, true, false>(xc, yc, dd, xx, yy, oo, t, len);
      else
        GradRunDispatch<Op, kDX, false, false>(xc, yc, dd, xx, yy, oo, t, len);
    });
  }

  int axis_;
  Dims x_dims_{-2}, y_dims_{-2};
  StridedLoop<kNumGradOperands> loop_dx_, loop_dy_;
  bool dx_reduces_ = false, dy_reduces_ = false;
  std::vector<T> scratch_;  // per-thread partial sums of a reduced gradient
};

// ---- Registration ---------------------------------------------------------------------------

template <class Op>
void RegisterElementwise(OpRegistry& r, const std::string& type, const std::string& formula) {
  r.Add(type)
      .Doc(fmt::format("Element-wise {} with PaddlePaddle broadcasting: Y (or X when it has the lower rank) "
                       "matches a contiguous run of the other's dims starting at `axis`; size-1 dims broadcast.",
                       formula))
      .Input(kX, "The first operand.")
      .Input(kY, "The second operand, broadcast onto X (or X onto it when its rank is higher).")
      .Output(kOut, "The result, shaped as X and Y broadcast together.")
      .Attr("axis", -1, "First dim of the higher-rank operand that the other aligns with; -1 aligns trailing dims.")
      .Min(-1)
      .InferShape(InferElementwise)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<ElementwiseKernel<float, Op>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<ElementwiseKernel<double, Op>>())
      .Kernel(DeviceType::kCPU, DType::kInt32, MakeKernelClass<ElementwiseKernel<int32_t, Op>>())
      .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernelClass<ElementwiseKernel<int64_t, Op>>());

  OpBuilder g = r.Add(type + "_grad");
  g.GradOf(type)
      .Doc(fmt::format("Gradient of {}: X@GRAD and Y@GRAD, each summed back onto its operand's shape.", type))
      .Input(kGradX, "The forward X (its shape; its values where the gradient needs them).")
      .Input(kGradY, "The forward Y (its shape; its values where the gradient needs them).");
  if (Op::kUsesOut) g.Input(kGradOut, "The forward output.");
  g.Input(Op::kUsesOut ? kGradDOutAfterOut : kGradDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .Output(kDY, "Gradient of the loss with respect to Y.")
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<ElementwiseGradKernel<float, Op>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<ElementwiseGradKernel<double, Op>>());
}

}  // namespace

void RegisterElementwiseOps(OpRegistry& r) {
  RegisterElementwise<AddOp>(r, "elementwise_add", "sum Out = X + Y");
  RegisterElementwise<SubOp>(r, "elementwise_sub", "difference Out = X - Y");
  RegisterElementwise<MulOp>(r, "elementwise_mul", "product Out = X * Y");
  RegisterElementwise<DivOp>(r, "elementwise_div", "quotient Out = X / Y");
  RegisterElementwise<MaxOp>(r, "elementwise_max", "maximum Out = max(X, Y) (gradient: to X on ties)");
  RegisterElementwise<MinOp>(r, "elementwise_min", "minimum Out = min(X, Y) (gradient: to X on ties)");
}

}  // namespace paddlec::ops
