// cumsum and cumsum_grad on the GPU: cumsum_slots.h's attributes and lines around cumsum.cu's scan.
// Built into libpaddlec_cuda.so only.
#include "math/cumsum_slots.h"
#include "math/math_cuda_host.h"

namespace paddlec::ops {
namespace {

using namespace cumsum;  // NOLINT: the concept's shared slots and geometry

template <class T>
Status Scan(KernelContext& ctx, const T* x, T* y, const Dims& dims, const CumsumAttrs& a) {
  const ScanLines l = LinesOf(dims, a);
  return cuda::Launched(cuda::Cumsum<T>(x, y, l.outer, l.n, l.inner, a.exclusive, a.reverse, cuda::Stream(ctx)),
                        "cumsum");
}

template <class T>
Status CumsumCuda(KernelContext& ctx, const CumsumAttrs& a) {
  const Tensor& x = ctx.In(kX);
  return Scan<T>(ctx, x.data<T>(), ctx.Out(kOut).data<T>(), x.dims(), a);
}

template <class T>
Status CumsumGradCuda(KernelContext& ctx, const CumsumAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  return Scan<T>(ctx, ctx.In(kGradDOut).data<T>(), dx->data<T>(), dx->dims(), a.Reversed());
}

}  // namespace

Status RegisterCumsumCudaKernels(OpRegistry& r) {
  PC_RETURN_IF_ERROR(r.AddKernel("cumsum", DeviceType::kCUDA, DType::kFloat32, MakeKernel(CumsumCuda<float>)));
  PC_RETURN_IF_ERROR(r.AddKernel("cumsum", DeviceType::kCUDA, DType::kFloat64, MakeKernel(CumsumCuda<double>)));
  PC_RETURN_IF_ERROR(r.AddKernel("cumsum", DeviceType::kCUDA, DType::kInt32, MakeKernel(CumsumCuda<int32_t>)));
  PC_RETURN_IF_ERROR(r.AddKernel("cumsum", DeviceType::kCUDA, DType::kInt64, MakeKernel(CumsumCuda<int64_t>)));
  PC_RETURN_IF_ERROR(r.AddKernel("cumsum_grad", DeviceType::kCUDA, DType::kFloat32, MakeKernel(CumsumGradCuda<float>)));
  return r.AddKernel("cumsum_grad", DeviceType::kCUDA, DType::kFloat64, MakeKernel(CumsumGradCuda<double>));
}

}  // namespace paddlec::ops
