// slice, gather and their gradients on the GPU, with index.cc's semantics: the slice box of
// index_slots.h as a strided view (shape.cu's gather and scatter), gather's rows by index.cu, and
// gather_grad by the deterministic sorted accumulation of lookup_table_v2 (nn/embedding.cu): a
// gather along axis 0 of X viewed as [rows, inner] is an embedding lookup, one per outer slice.
//
// Out-of-range indices. As on the CPU (and as lookup_table_v2 on the GPU does, see
// nn/embedding_cuda.cc), an index outside [0, rows) is this op's run-time error naming it: the
// kernel records the smallest bad position on the device and Run waits for those 8 bytes. That
// host synchronization is the one the error semantics force; the gradient does not wait (the
// forward of the same step checked the same indices). Built into libpaddlec_cuda.so only.
#include <climits>

#include "common/data_dtypes.h"
#include "nn/nn_cuda.h"
#include "nn/nn_cuda_host.h"
#include "tensor/index_slots.h"
#include "tensor/tensor_cuda.h"

namespace paddlec::ops {
namespace {

using namespace index;  // NOLINT: the concept's shared slots and geometry
namespace ti = tensor_index;
using runtime::cuda::CudaContext;

// ---- slice ------------------------------------------------------------------------------------

/// The strided view of a slice box: its dims, the full tensor's strides, and the box's first element.
struct SliceView {
  ti::TransposePlan plan;
  int64_t base = 0;  // element offset of the box in the full tensor
};

SliceView ViewOf(const Dims& full, const SliceBox& box) {
  int64_t stride[kMaxRank], len[kMaxRank];
  int64_t s = 1;
  SliceView v;
  for (int d = full.rank() - 1; d >= 0; --d) {
    stride[d] = s;
    len[d] = box.len[d];
    v.base += box.start[d] * s;
    s *= full[d];
  }
  v.plan = ti::MakeStridedPlan(len, stride, full.rank());
  return v;
}

Status SliceCuda(KernelContext& ctx, const SliceAttrs& a) {
  const Tensor& in = ctx.In(kInput);
  PC_ASSIGN_OR_RETURN(SliceBox box, MakeSliceBox(in.dims(), a));
  const SliceView v = ViewOf(in.dims(), box);
  const int elem = static_cast<int>(SizeOf(in.dtype()));
  char* src = static_cast<char*>(const_cast<void*>(in.raw_data())) + v.base * elem;
  return cuda::Launched(cuda::StridedCopy(src, ctx.Out(kOut).raw_data(), elem, v.plan, false, cuda::Stream(ctx)),
                        "slice");
}

Status SliceGradCuda(KernelContext& ctx, const SliceAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDInput);
  if (dx == nullptr) return Status::OK();
  PC_ASSIGN_OR_RETURN(SliceBox box, MakeSliceBox(dx->dims(), a));
  const SliceView v = ViewOf(dx->dims(), box);
  const int elem = static_cast<int>(SizeOf(dx->dtype()));
  cudaStream_t s = cuda::Stream(ctx);
  if (dx->nbytes() > 0) PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dx->raw_data(), 0, dx->nbytes(), s));
  char* dst = static_cast<char*>(dx->raw_data()) + v.base * elem;
  return cuda::Launched(cuda::StridedCopy(dst, const_cast<void*>(ctx.In(kGradDOut).raw_data()), elem, v.plan, true, s),
                        "slice_grad");
}

// ---- gather -----------------------------------------------------------------------------------

constexpr unsigned long long kNoBadPosition = ~0ull;

class GatherCuda final : public OpKernel {
 public:
  explicit GatherCuda(const KernelInit& init) : attrs_(GatherAttrs::Decode(init.attrs)) {}
  ~GatherCuda() override {
    if (host_bad_pos_) cudaFreeHost(host_bad_pos_);
  }

  // Waits for the device to report out-of-range indices.
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override {
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& x = ctx.In(kX);
    const Tensor& index = ctx.In(kIndex);
    const GatherView v = GatherViewOf(x.dims(), attrs_.axis);
    const int64_t m = index.numel();
    if (v.outer * m == 0) return Status::OK();
    if (!host_bad_pos_) PC_CUDA_RETURN_IF_ERROR(cudaMallocHost(&host_bad_pos_, sizeof(unsigned long long)));
    PC_ASSIGN_OR_RETURN(unsigned long long* bad_pos, bad_pos_.Get<unsigned long long>(cc, 1));
    PC_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(bad_pos, 0xff, sizeof(unsigned long long), cc.stream()));
    const int64_t row_bytes = v.inner * static_cast<int64_t>(SizeOf(x.dtype()));
    void* out = ctx.Out(kGatherOut).raw_data();
    cudaError_t e = index.dtype() == DType::kInt32
                        ? cuda::GatherRows<int32_t>(x.raw_data(), index.data<int32_t>(), m, v.outer, v.rows, row_bytes,
                                                    out, bad_pos, cc.stream())
                        : cuda::GatherRows<int64_t>(x.raw_data(), index.data<int64_t>(), m, v.outer, v.rows, row_bytes,
                                                    out, bad_pos, cc.stream());
    PC_RETURN_IF_ERROR(cuda::Launched(e, "gather"));
    // The synchronization the error semantics force (see the file comment).
    PC_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(host_bad_pos_, bad_pos, sizeof(unsigned long long), cudaMemcpyDeviceToHost, cc.stream()));
    PC_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cc.stream()));
    if (*host_bad_pos_ == kNoBadPosition) return Status::OK();
    return BadIndex(cc, index, static_cast<int64_t>(*host_bad_pos_), v.rows,
                    NormalizeAxis(attrs_.axis, x.dims().rank()));
  }

 private:
  /// index.cc's error for the index at `pos` (error path only: one more small copy).
  static Status BadIndex(CudaContext& cc, const Tensor& index, int64_t pos, int64_t rows, int axis) {
    int64_t id = 0;
    if (index.dtype() == DType::kInt32) {
      int32_t v = 0;
      PC_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(&v, index.data<int32_t>() + pos, sizeof(v), cudaMemcpyDeviceToHost, cc.stream()));
      PC_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cc.stream()));
      id = v;
    } else {
      PC_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(&id, index.data<int64_t>() + pos, sizeof(id), cudaMemcpyDeviceToHost, cc.stream()));
      PC_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cc.stream()));
    }
    return MakeError(ErrorCode::kRuntime, "Index[{}] = {} is out of range for X, which has {} entries along axis {}",
                     pos, id, rows, axis);
  }

  GatherAttrs attrs_;
  nn::DeviceScratch bad_pos_;
  unsigned long long* host_bad_pos_ = nullptr;  // pinned
};

/// X@GRAD: per outer slice, lookup_table_v2's deterministic gradient with X's slice as the table.
template <class T>
class GatherGradCuda final : public OpKernel {
 public:
  explicit GatherGradCuda(const KernelInit& init) : attrs_(GatherAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    Tensor* dx = ctx.OutOpt(kDX);
    if (dx == nullptr) return Status::OK();
    CudaContext& cc = cuda::Cuda(ctx);
    const Tensor& index = ctx.In(kGradIndex);
    const GatherView v = GatherViewOf(dx->dims(), attrs_.axis);
    const int64_t m = index.numel();
    if (m >= INT_MAX || v.rows >= INT_MAX)
      return MakeError(ErrorCode::kUnimplemented,
                       "gather_grad on the GPU sorts 32-bit indices and positions: {} indices into {} rows exceed 2^31",
                       m, v.rows);
    if (m == 0 || v.outer * v.inner == 0) return nn::ZeroFill(cc, dx);
    size_t sort_bytes = 0;
    PC_CUDA_RETURN_IF_ERROR(cuda::EmbeddingSortScratchBytes(m, v.rows, &sort_bytes));
    PC_ASSIGN_OR_RETURN(uint32_t * keys_pos, keys_pos_.Get<uint32_t>(cc, 4 * m));
    PC_ASSIGN_OR_RETURN(void* sort_scratch, sort_.Get(cc, sort_bytes));
    const T* dout = ctx.In(kGatherDOut).data<T>();
    for (int64_t o = 0; o < v.outer; ++o) {
      T* table = dx->data<T>() + o * v.rows * v.inner;
      const T* g = dout + o * m * v.inner;
      cudaError_t e =
          index.dtype() == DType::kInt32
              ? cuda::EmbeddingBackward<T, int32_t>(index.data<int32_t>(), g, table, m, v.rows, v.inner,
                                                    nn::kNoPaddingIdx, keys_pos, sort_scratch, sort_bytes, cc.stream())
              : cuda::EmbeddingBackward<T, int64_t>(index.data<int64_t>(), g, table, m, v.rows, v.inner,
                                                    nn::kNoPaddingIdx, keys_pos, sort_scratch, sort_bytes, cc.stream());
      PC_RETURN_IF_ERROR(cuda::Launched(e, "gather_grad"));
    }
    return Status::OK();
  }

 private:
  GatherAttrs attrs_;
  nn::DeviceScratch keys_pos_, sort_;
};

}  // namespace

Status RegisterIndexCudaKernels(OpRegistry& r) {
  constexpr DeviceType kGpu = DeviceType::kCUDA;
  Status st;
  auto add = [&](const char* op, DType t, KernelFactory f) {
    if (st.ok()) st = r.AddKernel(op, kGpu, t, std::move(f));
  };
  ForEachDType([&]<class T>() {
    add("slice", DTypeOf<T>(), MakeKernel(SliceCuda));
    add("gather", DTypeOf<T>(), MakeKernelClass<GatherCuda>());
  });
  for (DType t : {DType::kFloat32, DType::kFloat64}) add("slice_grad", t, MakeKernel(SliceGradCuda));
  add("gather_grad", DType::kFloat32, MakeKernelClass<GatherGradCuda<float>>());
  add("gather_grad", DType::kFloat64, MakeKernelClass<GatherGradCuda<double>>());
  return st;
}

}  // namespace paddlec::ops
