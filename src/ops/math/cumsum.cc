// cumsum (inclusive or exclusive, forward or reversed, along an axis or over the flattened tensor)
// and its gradient, the cumsum of Out@GRAD in the opposite direction.
//
// Lines along the last axis are scanned one after the other, in parallel across lines; scans along
// an outer axis add whole contiguous rows (vectorized across the lines), in parallel across outer
// slices and column blocks. Sums run in the element type, in order, so results are deterministic.
#include <algorithm>

#include "common/cpu_kernels.h"
#include "math/cumsum_slots.h"

namespace paddlec::ops {
namespace {

using namespace cumsum;  // NOLINT: the concept's shared slots and geometry

Status InferCumsum(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(kX);
  const CumsumAttrs a = CumsumAttrs::Decode(ctx.attrs());
  if (a.flatten) {
    ctx.SetOutput(kOut, Dims{x.Numel()}, ctx.InputDType(kX));
    return Status::OK();
  }
  if (x.rank() == 0 ? (a.axis != 0 && a.axis != -1) : NormalizeAxis(a.axis, x.rank()) < 0)
    return ctx.Fail("axis {} is out of range for X of shape {} (rank {})", a.axis, x.ToString(), x.rank());
  ctx.ShareDims(kX, kOut);
  return Status::OK();
}

/// X@GRAD takes X's shape; Out@GRAD, scanned into it, must hold as many elements.
Status InferCumsumGrad(InferShapeContext& ctx) {
  const Dims x = ctx.InputDims(kGradX), dout = ctx.InputDims(kGradDOut);
  if (x.Numel() >= 0 && dout.Numel() >= 0 && x.Numel() != dout.Numel())
    return ctx.Fail("Out@GRAD has shape {} but X has shape {}: they must hold as many elements", dout.ToString(),
                    x.ToString());
  if (ctx.HasOutput(kDX)) ctx.SetOutput(kDX, x, ctx.InputDType(kGradDOut));
  return Status::OK();
}

/// y = the scan of x over `l`'s lines: y[k] = x[0] + ... + x[k] (exclusive: up to x[k - 1]; reverse:
/// from the end of the line).
template <class T>
void Scan(const T* x, T* y, const ScanLines& l, bool exclusive, bool reverse) {
  if (l.n == 0 || l.outer * l.inner == 0) return;
  if (l.inner == 1) {
    ParallelFor(l.outer, std::max<int64_t>(1, kElementwiseGrain / l.n), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* xl = x + o * l.n;
        T* yl = y + o * l.n;
        T acc = 0;
        for (int64_t k = 0; k < l.n; ++k) {
          const int64_t i = reverse ? l.n - 1 - k : k;
          if (exclusive) {
            yl[i] = acc;
            acc += xl[i];
          } else {
            acc += xl[i];
            yl[i] = acc;
          }
        }
      }
    });
    return;
  }
  // Along an outer axis: row k of a slice (inner contiguous elements) adds into row k - 1's sums.
  constexpr int64_t kColumns = 4096;
  const int64_t blocks = (l.inner + kColumns - 1) / kColumns;
  ParallelFor(l.outer * blocks, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(l.n * kColumns, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t job = b; job < e; ++job) {
                  const int64_t o = job / blocks, c0 = (job % blocks) * kColumns;
                  const int64_t len = std::min(kColumns, l.inner - c0);
                  const T* xs = x + o * l.n * l.inner + c0;
                  T* ys = y + o * l.n * l.inner + c0;
                  for (int64_t k = 0; k < l.n; ++k) {
                    const int64_t row = reverse ? l.n - 1 - k : k, prev = reverse ? row + 1 : row - 1;
                    T* yr = ys + row * l.inner;
                    if (k == 0) {
                      if (exclusive)
                        std::fill(yr, yr + len, T(0));
                      else
                        std::copy(xs + row * l.inner, xs + row * l.inner + len, yr);
                      continue;
                    }
                    const T* yp = ys + prev * l.inner;
                    const T* xr = xs + (exclusive ? prev : row) * l.inner;
                    for (int64_t c = 0; c < len; ++c) yr[c] = yp[c] + xr[c];
                  }
                }
              });
}

template <class T>
Status CumsumCpu(KernelContext& ctx, const CumsumAttrs& a) {
  const Tensor& x = ctx.In(kX);
  Scan(x.data<T>(), ctx.Out(kOut).data<T>(), LinesOf(x.dims(), a), a.exclusive, a.reverse);
  return Status::OK();
}

template <class T>
Status CumsumGradCpu(KernelContext& ctx, const CumsumAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const CumsumAttrs g = a.Reversed();
  Scan(ctx.In(kGradDOut).data<T>(), dx->data<T>(), LinesOf(dx->dims(), g), g.exclusive, g.reverse);
  return Status::OK();
}

}  // namespace

void RegisterCumsumOps(OpRegistry& r) {
  r.Add("cumsum")
      .Doc(
          "Cumulative sum along `axis` (or over the flattened X): Out[k] = X[0] + ... + X[k]; `exclusive` stops at "
          "X[k - 1], `reverse` sums from the end.")
      .Input(kX, "The input tensor.")
      .Output(kOut, "The cumulative sums, shaped like X (1-D with `flatten`).")
      .Attr("axis", -1, "The axis to sum along; negative counts from the end.")
      .Attr("flatten", false, "Sum over X flattened to 1-D.")
      .Attr("exclusive", false, "Exclude X[k] from Out[k].")
      .Attr("reverse", false, "Sum from the last element backwards.")
      .InferShape(InferCumsum)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(CumsumCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(CumsumCpu<double>))
      .Kernel(DeviceType::kCPU, DType::kInt32, MakeKernel(CumsumCpu<int32_t>))
      .Kernel(DeviceType::kCPU, DType::kInt64, MakeKernel(CumsumCpu<int64_t>));
  r.Add("cumsum_grad")
      .GradOf("cumsum")
      .Doc("Gradient of cumsum: the cumsum of Out@GRAD in the opposite direction, shaped like X.")
      .Input(kGradX, "The forward input (its shape only).")
      .Input(kGradDOut, "Gradient of the loss with respect to Out.")
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferCumsumGrad)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(CumsumGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(CumsumGradCpu<double>));
}

}  // namespace paddlec::ops
