// cos_sim: row-wise cosine similarity of X [N, ...] and Y [N, ...] or [1, ...] (broadcast over
// rows), and its gradient.
//
// Rows are flattened to D = numel / N features. Like PaddlePaddle there is no epsilon: a zero row
// gives a non-finite result, which keeps Out exactly X.Y / (|X| |Y|).
#include <cmath>

#include "common/cpu_kernels.h"
#include "math/broadcast.h"
#include "math/cos_sim_slots.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

using namespace cos_sim;  // NOLINT: the op's shared slots

Status InferCosSim(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(kX), y = ctx.InputDims(kY);
  if (x.rank() < 2)
    return ctx.Fail("X has shape {} (rank {}) but cos_sim needs rank >= 2: [N, features...]", x.ToString(), x.rank());
  if (y.rank() != x.rank())
    return ctx.Fail("X has shape {} but Y has shape {}: cos_sim needs X and Y of equal rank", x.ToString(),
                    y.ToString());
  for (int i = 1; i < x.rank(); ++i)
    if (!DimMatch(x[i], y[i]))
      return ctx.Fail("X has shape {} but Y has shape {}: all dims but the first must match (dim {}: {} vs {})",
                      x.ToString(), y.ToString(), i, x[i], y[i]);
  if (!DimMatch(x[0], y[0]) && y[0] != 1)
    return ctx.Fail("X has shape {} but Y has shape {}: Y's first dim must equal X's ({}) or be 1", x.ToString(),
                    y.ToString(), x[0]);
  if (ctx.InputDType(kX) != ctx.InputDType(kY))
    return ctx.Fail("X has dtype {} but Y has dtype {}", DTypeName(ctx.InputDType(kX)), DTypeName(ctx.InputDType(kY)));
  const DType t = ctx.InputDType(kX);
  ctx.SetOutput(kOut, Dims{x[0], 1}, t);
  ctx.SetOutput(kXNorm, Dims{x[0], 1}, t);
  ctx.SetOutput(kYNorm, Dims{y[0], 1}, t);
  return Status::OK();
}

template <class T>
T Dot(const T* a, const T* b, int64_t n) {
  return math::SumRun<T>(n, [&](int64_t j) { return a[j] * b[j]; });
}

/// Rows per parallel task so that each covers about kElementwiseGrain elements.
int64_t RowGrain(int64_t d) { return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(d, 1)); }

template <class T>
Status CosSimCpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(kX);
  const Tensor& y = ctx.In(kY);
  const int64_t n = x.dims()[0], d = n == 0 ? 0 : x.numel() / n;
  const bool bcast = y.dims()[0] == 1 && n != 1;
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  T* out = ctx.Out(kOut).data<T>();
  // XNorm and YNorm are intermediate outputs: an inference program may leave them out.
  Tensor* xn_t = ctx.OutOpt(kXNorm);
  Tensor* yn_t = ctx.OutOpt(kYNorm);
  T* xn = xn_t ? xn_t->data<T>() : nullptr;
  T* yn = yn_t ? yn_t->data<T>() : nullptr;
  const T ybnorm = bcast ? std::sqrt(Dot(yp, yp, d)) : T(0);
  if (bcast && yn) yn[0] = ybnorm;
  ParallelFor(n, RowGrain(d), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xr = xp + i * d;
      const T* yr = bcast ? yp : yp + i * d;
      const T xnorm = std::sqrt(Dot(xr, xr, d));
      const T ynorm = bcast ? ybnorm : std::sqrt(Dot(yr, yr, d));
      if (xn) xn[i] = xnorm;
      if (yn && !bcast) yn[i] = ynorm;
      out[i] = Dot(xr, yr, d) / (xnorm * ynorm);
    }
  });
  return Status::OK();
}

/// With z = Out, |x| = XNorm, |y| = YNorm and g = Out@GRAD per row:
///   dX = g (y / (|x| |y|) - z x / |x|^2),  dY = g (x / (|x| |y|) - z y / |y|^2),
/// and when Y is one row broadcast over N rows, dY sums the second formula over the rows.
template <class T>
Status CosSimGradCpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(kGradX);
  const Tensor& y = ctx.In(kGradY);
  const int64_t n = x.dims()[0], d = n == 0 ? 0 : x.numel() / n;
  const bool bcast = y.dims()[0] == 1 && n != 1;
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  const T* z = ctx.In(kGradOut).data<T>();
  const T* xn = ctx.In(kGradXNorm).data<T>();
  const T* yn = ctx.In(kGradYNorm).data<T>();
  const T* g = ctx.In(kGradDOut).data<T>();
  if (Tensor* dx = ctx.OutOpt(kDX)) {
    T* gx = dx->data<T>();
    ParallelFor(n, RowGrain(d), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T ynorm = bcast ? yn[0] : yn[i];
        const T a = g[i] / (xn[i] * ynorm), c = g[i] * z[i] / (xn[i] * xn[i]);
        const T* xr = xp + i * d;
        const T* yr = bcast ? yp : yp + i * d;
        T* o = gx + i * d;
        for (int64_t j = 0; j < d; ++j) o[j] = a * yr[j] - c * xr[j];
      }
    });
  }
  Tensor* dy = ctx.OutOpt(kDY);
  if (dy == nullptr) return Status::OK();
  T* gy = dy->data<T>();
  if (!bcast) {
    ParallelFor(n, RowGrain(d), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T a = g[i] / (xn[i] * yn[i]), c = g[i] * z[i] / (yn[i] * yn[i]);
        const T* xr = xp + i * d;
        const T* yr = yp + i * d;
        T* o = gy + i * d;
        for (int64_t j = 0; j < d; ++j) o[j] = a * xr[j] - c * yr[j];
      }
    });
    return Status::OK();
  }
  // dY = sum_i (g_i / (|x_i| |y|)) x_i - (sum_i g_i z_i / |y|^2) y; columns split across threads so
  // every thread owns its slice of dY.
  T gz = 0;
  for (int64_t i = 0; i < n; ++i) gz += g[i] * z[i];
  const T c = gz / (yn[0] * yn[0]);
  ParallelFor(d, std::max<int64_t>(16, kElementwiseGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    T* o = gy + b;
    const int64_t w = e - b;
    for (int64_t j = 0; j < w; ++j) o[j] = -c * yp[b + j];
    for (int64_t i = 0; i < n; ++i) {
      const T a = g[i] / (xn[i] * yn[0]);
      const T* xr = xp + i * d + b;
      for (int64_t j = 0; j < w; ++j) o[j] += a * xr[j];
    }
  });
  return Status::OK();
}

}  // namespace

void RegisterCosSimOps(OpRegistry& r) {
  r.Add("cos_sim")
      .Doc(
          "Row-wise cosine similarity Out = X.Y / (|X| |Y|) of X [N, ...] and Y [N, ...] or [1, ...] (one row "
          "broadcast to all), rows flattened; no epsilon, as in PaddlePaddle.")
      .Input(kX, "The first operand, [N, ...] (rank >= 2).")
      .Input(kY, "The second operand, shaped like X or with a first dim of 1.")
      .Output(kOut, "The cosine similarity of each row, [N, 1].")
      .Output(kXNorm, "The L2 norm of each row of X, [N, 1] (kept for the gradient).", kIntermediate)
      .Output(kYNorm, "The L2 norm of each row of Y, [N or 1, 1] (kept for the gradient).", kIntermediate)
      .InferShape(InferCosSim)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(CosSimCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(CosSimCpu<double>));
  r.Add("cos_sim_grad")
      .GradOf("cos_sim")
      .Doc("Gradient of cos_sim: X@GRAD and Y@GRAD (summed over rows when Y was broadcast).")
      .Input(kGradX, "The forward X.")
      .Input(kGradY, "The forward Y.")
      .Input(kGradOut, "The forward output.")
      .Input(kGradXNorm, "The forward XNorm.")
      .Input(kGradYNorm, "The forward YNorm.")
      .Input(kGradDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .Output(kDY, "Gradient of the loss with respect to Y.")
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(CosSimGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(CosSimGradCpu<double>));
}

}  // namespace paddlec::ops
