// Optimizer update ops: sgd, momentum and adam.
//
// Every op updates a parameter and its state in place: the optimizer pass binds ParamOut to the Param
// variable, VelocityOut to Velocity and so on, which the runtime allows (an output that is also an
// input keeps its buffer). Kernels also work out of place. Scalars (learning rate, beta powers) are
// read once per run, so a learning-rate schedule may change them between steps; the element-wise
// updates are Eigen array expressions over chunks split across the CPU pool.
//
// multi_precision follows PaddlePaddle's CUDA kernels: when set, the update runs on MasterParam (the
// full-precision copy of a low-precision parameter) and ParamOut receives the updated copy. There are
// no float16 kernels yet, so MasterParam has Param's dtype for now.
//
// A SelectedRows Grad (lookup_table_v2 with is_sparse) is applied lazily: only its rows of Param and
// of the state are updated, duplicates merged first (optimizer_slots.h), so a step costs the rows
// touched, not the table. That is PaddlePaddle's adam with lazy_mode; adam without it updates every
// row as the dense update with a zero gradient would (PaddlePaddle's semantics). sgd's sparse update
// is exact; momentum's is lazy too (rows without a gradient keep their velocity).
#include <cmath>
#include <cstring>

#include "common/cpu_kernels.h"
#include "optimizer/optimizer_slots.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using optimizer::ParamSlots;

// ---- Shared shape checks ----------------------------------------------------------------------

bool IsFloatDType(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }

/// Fails unless input `s` (when bound) holds one value ([1] or []) of a float dtype (bool when `flag`).
Status CheckScalarInput(InferShapeContext& ctx, InSlot s, bool flag = false) {
  if (!ctx.HasInput(s)) return Status::OK();
  const Dims d = ctx.InputDims(s);
  const int64_t n = d.Numel();
  if (n >= 0 && n != 1) return ctx.Fail("{} has shape {} but must hold one value ([1])", s.name, d.ToString());
  const DType t = ctx.InputDType(s);
  if (flag ? t != DType::kBool : !IsFloatDType(t))
    return ctx.Fail("{} is {} but must be {}", s.name, DTypeName(t), flag ? "bool" : "float32 or float64");
  return Status::OK();
}

/// A [1] state input (beta powers) and its output.
Status InferScalarState(InferShapeContext& ctx, InSlot in, OutSlot out) {
  PC_RETURN_IF_ERROR(CheckScalarInput(ctx, in));
  ctx.ShareDims(in, out);
  return Status::OK();
}

/// Checks Param, Grad, LearningRate and the master copy; sets ParamOut and MasterParamOut. Returns in
/// `source` the slot the update reads values from (MasterParam with multi_precision, else Param).
Status InferParamUpdate(InferShapeContext& ctx, const ParamSlots& s, InSlot* source) {
  const Dims p = ctx.InputDims(s.param), g = ctx.InputDims(s.grad);
  const DType pt = ctx.InputDType(s.param), gt = ctx.InputDType(s.grad);
  // A SelectedRows Grad holds some of Param's rows: only its row shape must match (the kernels check
  // a dense Grad's row count).
  bool rows_of_param = p.rank() == g.rank() && p.rank() >= 1;
  for (int d = 1; rows_of_param && d < p.rank(); ++d) rows_of_param = DimsMatch(Dims{p[d]}, Dims{g[d]});
  if (!DimsMatch(p, g) && !rows_of_param)
    return ctx.Fail("Param has shape {} but Grad has shape {}: they must be equal", p.ToString(), g.ToString());
  if (gt != pt) return ctx.Fail("Grad is {} but Param is {}: they must have one dtype", DTypeName(gt), DTypeName(pt));
  PC_RETURN_IF_ERROR(CheckScalarInput(ctx, s.lr));
  *source = s.param;
  if (ctx.Attr<bool>("multi_precision")) {
    if (!ctx.HasInput(s.master))
      return ctx.Fail("multi_precision is true but MasterParam is not bound: the update runs on that copy");
    if (!ctx.HasOutput(s.master_out))
      return ctx.Fail("multi_precision is true but MasterParamOut is not bound: the updated copy would be lost");
    const Dims m = ctx.InputDims(s.master);
    if (!DimsMatch(p, m))
      return ctx.Fail("Param has shape {} but MasterParam has shape {}: they must be equal", p.ToString(),
                      m.ToString());
    if (!IsFloatDType(ctx.InputDType(s.master)))
      return ctx.Fail("MasterParam is {} but must be float32 or float64", DTypeName(ctx.InputDType(s.master)));
    *source = s.master;
  }
  Dims out = p;
  if (DimsMatch(p, g))
    for (int i = 0; i < out.rank(); ++i) out[i] = DimMerge(p[i], g[i]);
  ctx.SetOutput(s.param_out, out, pt);
  if (ctx.HasInput(s.master)) ctx.ShareDims(s.master, s.master_out);
  return Status::OK();
}

/// An optimizer state shaped like Param (velocity, moments) in the dtype of `source`; sets its output.
Status InferTensorState(InferShapeContext& ctx, InSlot param, InSlot source, InSlot state, OutSlot out) {
  const Dims p = ctx.InputDims(param), d = ctx.InputDims(state);
  if (!DimsMatch(p, d))
    return ctx.Fail("Param has shape {} but {} has shape {}: optimizer state must match its parameter", p.ToString(),
                    state.name, d.ToString());
  if (ctx.InputDType(state) != ctx.InputDType(source))
    return ctx.Fail("{} is {} but {} is {}: they must have one dtype", state.name, DTypeName(ctx.InputDType(state)),
                    source.name, DTypeName(ctx.InputDType(source)));
  ctx.ShareDims(state, out);
  return Status::OK();
}

// ---- Shared kernel helpers --------------------------------------------------------------------

/// The value of a one-element float tensor (the shape function checked it).
double ReadScalar(const Tensor& t) {
  return t.dtype() == DType::kFloat64 ? t.data<double>()[0] : static_cast<double>(t.data<float>()[0]);
}

void WriteScalar(Tensor& t, double v) {
  if (t.dtype() == DType::kFloat64)
    t.data<double>()[0] = v;
  else
    t.data<float>()[0] = static_cast<float>(v);
}

/// Makes `out` hold `in`'s values; nothing to do when the op runs in place.
void CopyThrough(const Tensor& in, Tensor* out) {
  if (out != nullptr && out->raw_data() != in.raw_data()) std::memcpy(out->raw_data(), in.raw_data(), in.nbytes());
}

/// Where an update reads the parameter and writes it: MasterParam -> MasterParamOut, mirrored into
/// ParamOut, with multi_precision; Param -> ParamOut otherwise.
template <class T>
struct ParamTarget {
  const T* in;
  T* out;
  T* mirror;  // ParamOut when the update runs on the master copy, else null

  ParamTarget(KernelContext& ctx, const ParamSlots& s, bool multi_precision) {
    const bool master = multi_precision && ctx.InOpt(s.master) != nullptr;
    in = ctx.In(master ? s.master : s.param).template data<T>();
    out = master ? ctx.Out(s.master_out).template data<T>() : ctx.Out(s.param_out).template data<T>();
    mirror = master ? ctx.Out(s.param_out).template data<T>() : nullptr;
  }
  /// After a chunk of `out` is updated: copy it to ParamOut (a cast once low-precision params exist).
  void Mirror(int64_t b, int64_t n) const {
    if (mirror != nullptr) MutEigenVec<T>(mirror + b, n) = ConstEigenVec<T>(out + b, n);
  }
};

/// Runs fn(param_offset, width, merged_grad_row) for every distinct row of a SelectedRows Grad, in
/// parallel across rows (each row is one thread's).
template <class T, class F>
Status ForEachSparseRow(KernelContext& ctx, InSlot grad_slot, InSlot param_slot, std::string_view op, F fn) {
  const Tensor& grad = ctx.In(grad_slot);
  PC_RETURN_IF_ERROR(optimizer::CheckSparseGrad(grad, ctx.In(param_slot), op));
  const optimizer::MergedRows m = optimizer::MergeRows(grad.rows());
  const int64_t width = ctx.In(param_slot).numel() / std::max<int64_t>(ctx.In(param_slot).dims()[0], 1);
  const T* values = grad.data<T>();
  ParallelFor(static_cast<int64_t>(m.rows.size()), std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(width, 1)),
              [&](int64_t b, int64_t e) {
                std::vector<T> g(width);
                for (int64_t u = b; u < e; ++u) {
                  std::fill(g.begin(), g.end(), T(0));
                  for (int64_t k = m.starts[u]; k < m.starts[u + 1]; ++k)
                    MutEigenVec<T>(g.data(), width) += ConstEigenVec<T>(values + m.order[k] * width, width);
                  fn(m.rows[u] * width, width, g.data());
                }
              });
  return Status::OK();
}

// ---- sgd --------------------------------------------------------------------------------------

namespace sgd {
using namespace optimizer::sgd;  // NOLINT: its slots and attributes

Status Infer(InferShapeContext& ctx) {
  InSlot source = kParam;
  return InferParamUpdate(ctx, kSlots, &source);
}

/// ParamOut = Param - lr * Grad.
template <class T>
Status Cpu(KernelContext& ctx, const Attrs& a) {
  const T lr = static_cast<T>(ReadScalar(ctx.In(kLearningRate)));
  const ParamTarget<T> p(ctx, kSlots, a.multi_precision);
  auto update = [&](int64_t b, int64_t n, const T* g) {
    MutEigenVec<T>(p.out + b, n) = ConstEigenVec<T>(p.in + b, n) - lr * ConstEigenVec<T>(g, n);
    p.Mirror(b, n);
  };
  if (ctx.In(kGrad).is_selected_rows()) {
    // Rows without a gradient keep their values: copy them through when not in place.
    CopyThrough(ctx.In(kParam), &ctx.Out(kParamOut));
    return ForEachSparseRow<T>(ctx, kGrad, kParam, "sgd", update);
  }
  PC_RETURN_IF_ERROR(optimizer::CheckDenseGrad(ctx.In(kGrad), ctx.In(kParam), "sgd"));
  const T* g = ctx.In(kGrad).data<T>();
  ParallelChunks(ctx.In(kGrad).numel(), [&](int64_t b, int64_t n) { update(b, n, g + b); });
  return Status::OK();
}
}  // namespace sgd

// ---- momentum ---------------------------------------------------------------------------------

namespace momentum {
using namespace optimizer::momentum;  // NOLINT: its slots and attributes

Status Infer(InferShapeContext& ctx) {
  InSlot source = kParam;
  PC_RETURN_IF_ERROR(InferParamUpdate(ctx, kSlots, &source));
  return InferTensorState(ctx, kParam, source, kVelocity, kVelocityOut);
}

/// g = rescale_grad * Grad (+ coeff * Param with l2_decay); v = mu * v + g;
/// Param -= lr * (g + mu * v) with Nesterov, lr * v otherwise.
template <class T>
Status Cpu(KernelContext& ctx, const Attrs& a) {
  const T lr = static_cast<T>(ReadScalar(ctx.In(kLearningRate)));
  const T mu = a.mu, rescale = a.rescale_grad, coeff = a.regularization_coeff;
  const ParamTarget<T> p(ctx, kSlots, a.multi_precision);
  const T* v = ctx.In(kVelocity).data<T>();
  T* v_out = ctx.Out(kVelocityOut).data<T>();
  auto update = [&](int64_t b, int64_t n, const T* g) {
    ConstEigenVec<T> pin(p.in + b, n), gin(g, n), vin(v + b, n);
    MutEigenVec<T> pout(p.out + b, n), vout(v_out + b, n);
    // Element-wise, so in-place outputs are safe: each element is read before it is written.
    auto step = [&](const auto& grad) {
      vout = mu * vin + grad;
      if (a.use_nesterov)
        pout = pin - lr * (grad + mu * vout);
      else
        pout = pin - lr * vout;
    };
    if (a.l2_decay)
      step(rescale * gin + coeff * pin);
    else
      step(rescale * gin);
    p.Mirror(b, n);
  };
  if (ctx.In(kGrad).is_selected_rows()) {
    CopyThrough(ctx.In(kParam), &ctx.Out(kParamOut));
    CopyThrough(ctx.In(kVelocity), &ctx.Out(kVelocityOut));
    return ForEachSparseRow<T>(ctx, kGrad, kParam, "momentum", update);
  }
  PC_RETURN_IF_ERROR(optimizer::CheckDenseGrad(ctx.In(kGrad), ctx.In(kParam), "momentum"));
  const T* g = ctx.In(kGrad).data<T>();
  ParallelChunks(ctx.In(kGrad).numel(), [&](int64_t b, int64_t n) { update(b, n, g + b); });
  return Status::OK();
}
}  // namespace momentum

// ---- adam -------------------------------------------------------------------------------------

namespace adam {
using namespace optimizer::adam;  // NOLINT: its slots and attributes

/// Elements of one block of the update: 8 KB of each float array it reads or writes.
constexpr int64_t kAdamBlock = 2048;

Status Infer(InferShapeContext& ctx) {
  InSlot source = kParam;
  PC_RETURN_IF_ERROR(InferParamUpdate(ctx, kSlots, &source));
  PC_RETURN_IF_ERROR(InferTensorState(ctx, kParam, source, kMoment1, kMoment1Out));
  PC_RETURN_IF_ERROR(InferTensorState(ctx, kParam, source, kMoment2, kMoment2Out));
  PC_RETURN_IF_ERROR(InferScalarState(ctx, kBeta1Pow, kBeta1PowOut));
  PC_RETURN_IF_ERROR(InferScalarState(ctx, kBeta2Pow, kBeta2PowOut));
  for (InSlot s : {kBeta1Tensor, kBeta2Tensor, kEpsilonTensor}) PC_RETURN_IF_ERROR(CheckScalarInput(ctx, s));
  PC_RETURN_IF_ERROR(CheckScalarInput(ctx, kSkipUpdate, /*flag=*/true));
  if (ctx.Attr<bool>("amsgrad"))
    return ctx.Fail("amsgrad is not supported: paddlec's adam keeps no Moment2Max")
        .Note("PaddlePaddle's default is amsgrad=false; Moment2Max may be bound or left empty then");
  // A beta of 1 never moves its moment and makes the bias correction divide by 1 - 1^t = 0.
  const std::pair<const char*, InSlot> betas[] = {{"beta1", kBeta1Tensor}, {"beta2", kBeta2Tensor}};
  for (const auto& [name, tensor] : betas)
    if (!ctx.HasInput(tensor) && ctx.Attr<float>(name) >= 1)
      return ctx.Fail("{} is {} but must lie in [0, 1): Adam's bias correction divides by 1 - {}^t", name,
                      ctx.Attr<float>(name), name);
  return Status::OK();
}

/// m1 = b1 m1 + (1 - b1) g; m2 = b2 m2 + (1 - b2) g^2; lr_t = lr sqrt(1 - b2pow) / (1 - b1pow);
/// Param -= lr_t m1 / (sqrt(m2) + eps sqrt(1 - b2pow)); then b1pow *= b1, b2pow *= b2 unless
/// use_global_beta_pow (another op advances them). PaddlePaddle's formula, epsilon scaled as there.
template <class T>
Status Cpu(KernelContext& ctx, const Attrs& a) {
  if (const Tensor* skip = ctx.InOpt(kSkipUpdate); skip != nullptr && skip->data<bool>()[0]) {
    CopyThrough(ctx.In(kParam), &ctx.Out(kParamOut));
    CopyThrough(ctx.In(kMoment1), &ctx.Out(kMoment1Out));
    CopyThrough(ctx.In(kMoment2), &ctx.Out(kMoment2Out));
    CopyThrough(ctx.In(kBeta1Pow), &ctx.Out(kBeta1PowOut));
    CopyThrough(ctx.In(kBeta2Pow), &ctx.Out(kBeta2PowOut));
    if (const Tensor* m = ctx.InOpt(kMasterParam)) CopyThrough(*m, ctx.OutOpt(kMasterParamOut));
    return Status::OK();
  }
  auto scalar_or = [&](InSlot s, float attr) {
    const Tensor* t = ctx.InOpt(s);
    return t != nullptr ? ReadScalar(*t) : static_cast<double>(attr);
  };
  const double beta1 = scalar_or(kBeta1Tensor, a.beta1), beta2 = scalar_or(kBeta2Tensor, a.beta2);
  const double epsilon = scalar_or(kEpsilonTensor, a.epsilon);
  const double beta1_pow = ReadScalar(ctx.In(kBeta1Pow)), beta2_pow = ReadScalar(ctx.In(kBeta2Pow));
  const double lr = ReadScalar(ctx.In(kLearningRate));
  const T lr_t = static_cast<T>(lr * std::sqrt(1 - beta2_pow) / (1 - beta1_pow));
  const T eps_t = static_cast<T>(epsilon * std::sqrt(1 - beta2_pow));
  const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);

  const ParamTarget<T> p(ctx, kSlots, a.multi_precision);
  const T* m1 = ctx.In(kMoment1).data<T>();
  const T* m2 = ctx.In(kMoment2).data<T>();
  T* m1_out = ctx.Out(kMoment1Out).data<T>();
  T* m2_out = ctx.Out(kMoment2Out).data<T>();
  auto update = [&](int64_t b0, int64_t n0, const T* g0) {
    // The three assignments are three passes, the last re-reading the moments the first two wrote:
    // blocks of kAdamBlock keep those in L1 (a thread's whole share of fc1.w, 200k floats, left L2).
    for (int64_t o = 0; o < n0; o += kAdamBlock) {
      const int64_t b = b0 + o, n = std::min(kAdamBlock, n0 - o);
      ConstEigenVec<T> gin(g0 + o, n);
      MutEigenVec<T> m1o(m1_out + b, n), m2o(m2_out + b, n);
      m1o = b1 * ConstEigenVec<T>(m1 + b, n) + (T(1) - b1) * gin;
      m2o = b2 * ConstEigenVec<T>(m2 + b, n) + (T(1) - b2) * gin.square();
      MutEigenVec<T>(p.out + b, n) = ConstEigenVec<T>(p.in + b, n) - lr_t * (m1o / (m2o.sqrt() + eps_t));
      p.Mirror(b, n);
    }
  };
  const Tensor& grad = ctx.In(kGrad);
  if (grad.is_selected_rows() && a.lazy_mode) {
    CopyThrough(ctx.In(kParam), &ctx.Out(kParamOut));
    CopyThrough(ctx.In(kMoment1), &ctx.Out(kMoment1Out));
    CopyThrough(ctx.In(kMoment2), &ctx.Out(kMoment2Out));
    PC_RETURN_IF_ERROR(ForEachSparseRow<T>(ctx, kGrad, kParam, "adam", update));
  } else if (grad.is_selected_rows()) {
    // Without lazy_mode every row moves, those without a gradient as with a zero one.
    PC_RETURN_IF_ERROR(optimizer::CheckSparseGrad(grad, ctx.In(kParam), "adam"));
    std::vector<T> dense(ctx.In(kParam).numel(), T(0));
    const int64_t width = static_cast<int64_t>(dense.size()) / std::max<int64_t>(ctx.In(kParam).dims()[0], 1);
    for (size_t k = 0; k < grad.rows().size(); ++k)
      MutEigenVec<T>(dense.data() + grad.rows()[k] * width, width) +=
          ConstEigenVec<T>(grad.data<T>() + static_cast<int64_t>(k) * width, width);
    ParallelChunks(static_cast<int64_t>(dense.size()), [&](int64_t b, int64_t n) { update(b, n, dense.data() + b); });
  } else {
    PC_RETURN_IF_ERROR(optimizer::CheckDenseGrad(grad, ctx.In(kParam), "adam"));
    const T* g = grad.data<T>();
    ParallelChunks(grad.numel(), [&](int64_t b, int64_t n) { update(b, n, g + b); });
  }

  // The powers were read above, so writing them in place afterwards is safe.
  if (a.use_global_beta_pow) {
    CopyThrough(ctx.In(kBeta1Pow), &ctx.Out(kBeta1PowOut));
    CopyThrough(ctx.In(kBeta2Pow), &ctx.Out(kBeta2PowOut));
  } else {
    WriteScalar(ctx.Out(kBeta1PowOut), beta1_pow * beta1);
    WriteScalar(ctx.Out(kBeta2PowOut), beta2_pow * beta2);
  }
  return Status::OK();
}
}  // namespace adam

}  // namespace

void RegisterOptimizerOps(OpRegistry& r) {
  r.Add("sgd")
      .Doc("Stochastic gradient descent: ParamOut = Param - LearningRate * Grad, normally in place.")
      .Input(sgd::kParam, "The parameter to update.")
      .Input(sgd::kLearningRate, "The learning rate, one float value ([1]).")
      .Input(sgd::kGrad, "The gradient of the loss with respect to Param, shaped and typed like Param.")
      .Input(sgd::kMasterParam, "Full-precision copy of Param, updated instead of it with multi_precision.",
             kDispensable)
      .Output(sgd::kParamOut, "The updated parameter; normally the Param variable itself.")
      .Output(sgd::kMasterParamOut, "The updated MasterParam; normally the MasterParam variable itself.", kDispensable)
      .Attr("multi_precision", false, "Update MasterParam and copy the result into ParamOut.")
      .InferShape(sgd::Infer)
      .NoGradient()
      .KernelDTypeFromInput(sgd::kParam)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(sgd::Cpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(sgd::Cpu<double>));

  r.Add("momentum")
      .Doc(
          "Momentum SGD, PaddlePaddle's update: g = rescale_grad * Grad (+ regularization_coeff * Param with "
          "l2_decay); Velocity = mu * Velocity + g; Param -= LearningRate * (g + mu * Velocity) with Nesterov, "
          "LearningRate * Velocity otherwise. Normally in place.")
      .Input(momentum::kParam, "The parameter to update.")
      .Input(momentum::kGrad, "The gradient of the loss with respect to Param, shaped and typed like Param.")
      .Input(momentum::kVelocity, "The velocity accumulator, shaped like Param.")
      .Input(momentum::kLearningRate, "The learning rate, one float value ([1]).")
      .Input(momentum::kMasterParam, "Full-precision copy of Param, updated instead of it with multi_precision.",
             kDispensable)
      .Output(momentum::kParamOut, "The updated parameter; normally the Param variable itself.")
      .Output(momentum::kVelocityOut, "The updated velocity; normally the Velocity variable itself.")
      .Output(momentum::kMasterParamOut, "The updated MasterParam; normally the MasterParam variable itself.",
              kDispensable)
      .RequiredAttr<float>("mu", "The momentum coefficient; required, as in PaddlePaddle.")
      .Attr("use_nesterov", false, "Use Nesterov momentum.")
      .Attr("regularization_method", "", "Weight decay folded into the gradient: \"\" (none) or \"l2_decay\".")
      .AllowedValues({"", "l2_decay"})
      .Attr("regularization_coeff", 0.0f, "The L2 decay coefficient, used with regularization_method l2_decay.")
      .Attr("multi_precision", false, "Update MasterParam and copy the result into ParamOut.")
      .Attr("rescale_grad", 1.0f, "Multiplies the gradient before the update (often 1 / batch size).")
      .InferShape(momentum::Infer)
      .NoGradient()
      .KernelDTypeFromInput(momentum::kParam)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(momentum::Cpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(momentum::Cpu<double>));

  r.Add("adam")
      .Doc(
          "Adam, PaddlePaddle's update: Moment1 = beta1 Moment1 + (1 - beta1) Grad; Moment2 = beta2 Moment2 + "
          "(1 - beta2) Grad^2; lr_t = LearningRate sqrt(1 - Beta2Pow) / (1 - Beta1Pow); Param -= lr_t Moment1 / "
          "(sqrt(Moment2) + epsilon sqrt(1 - Beta2Pow)); then Beta1Pow *= beta1 and Beta2Pow *= beta2 unless "
          "use_global_beta_pow. Normally in place; dense gradients only.")
      .Input(adam::kParam, "The parameter to update.")
      .Input(adam::kGrad, "The gradient of the loss with respect to Param, shaped and typed like Param.")
      .Input(adam::kLearningRate, "The learning rate, one float value ([1]).")
      .Input(adam::kMoment1, "The first-moment accumulator, shaped like Param.")
      .Input(adam::kMoment2, "The second-moment accumulator, shaped like Param.")
      .Input(adam::kBeta1Pow, "beta1^t for the current step t (initialized to beta1), [1].")
      .Input(adam::kBeta2Pow, "beta2^t for the current step t (initialized to beta2), [1].")
      .Input(adam::kBeta1Tensor, "Overrides the beta1 attribute when bound, [1].", kDispensable)
      .Input(adam::kBeta2Tensor, "Overrides the beta2 attribute when bound, [1].", kDispensable)
      .Input(adam::kEpsilonTensor, "Overrides the epsilon attribute when bound, [1].", kDispensable)
      .Input(adam::kMasterParam, "Full-precision copy of Param, updated instead of it with multi_precision.",
             kDispensable)
      .Input(adam::kSkipUpdate, "A bool [1]; when true every output keeps its input value.", kDispensable)
      .Input(adam::kMoment2Max,
             "AMSGrad's running maximum of Moment2 (PaddlePaddle 3.1+); unused, as amsgrad must be "
             "false.",
             kDispensable)
      .Output(adam::kParamOut, "The updated parameter; normally the Param variable itself.")
      .Output(adam::kMoment1Out, "The updated first moment; normally the Moment1 variable itself.")
      .Output(adam::kMoment2Out, "The updated second moment; normally the Moment2 variable itself.")
      .Output(adam::kBeta1PowOut, "beta1^(t+1); normally the Beta1Pow variable itself.")
      .Output(adam::kBeta2PowOut, "beta2^(t+1); normally the Beta2Pow variable itself.")
      .Output(adam::kMasterParamOut, "The updated MasterParam; normally the MasterParam variable itself.", kDispensable)
      .Output(adam::kMoment2MaxOut, "AMSGrad's updated Moment2Max; never written, as amsgrad must be false.",
              kDispensable)
      .Attr("beta1", 0.9f, "Decay rate of the first moment, in [0, 1).")
      .Range(0, 1)
      .Attr("beta2", 0.999f, "Decay rate of the second moment, in [0, 1).")
      .Range(0, 1)
      .Attr("epsilon", 1e-8f, "Added to sqrt(Moment2) (scaled by sqrt(1 - Beta2Pow)) for numerical stability.")
      .Min(0)
      .Attr("lazy_mode", false, "Update only the rows present in a sparse gradient; no effect on dense gradients.")
      .Attr("min_row_size_to_use_multithread", int64_t{1000},
            "PaddlePaddle's threading threshold for sparse gradients; no effect on dense gradients.")
      .Attr("multi_precision", false, "Update MasterParam and copy the result into ParamOut.")
      .Attr("use_global_beta_pow", false, "Leave Beta1Pow and Beta2Pow unchanged: another op advances them.")
      .Attr("amsgrad", false, "AMSGrad (PaddlePaddle 3.1+): only false, plain Adam, is supported.")
      .InferShape(adam::Infer)
      .NoGradient()
      .KernelDTypeFromInput(adam::kParam)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(adam::Cpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(adam::Cpu<double>));
}

}  // namespace paddlec::ops
