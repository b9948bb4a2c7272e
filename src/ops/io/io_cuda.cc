// feed and fetch on a GPU place: the holders stay on the host ("feed/fetch on the host, everything
// else on the device"), so feed copies host -> device and fetch device -> host.
#include "common/cuda_host.h"

namespace paddlec::ops {
namespace {

constexpr InSlot kX{0, "X"};
constexpr OutSlot kOut{0, "Out"};

class FeedGpu final : public OpKernel {
 public:
  explicit FeedGpu(const KernelInit& init) : col_(init.attrs.Get<int>("col")) {}
  // Copies from pageable host memory, which a CUDA graph cannot record.
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override {
    Tensor& out = ctx.Out(kOut);
    const Variable* holder = ctx.InVar(kX);
    if (holder != nullptr && col_ < static_cast<int>(holder->list().size())) {
      const Tensor& src = holder->list()[col_];
      if (!src.initialized())
        return MakeError(ErrorCode::kRuntime, "feed holder entry at col {} holds no data", col_);
      return ctx.device().CopyFromHost(src, out);
    }
    if (out.initialized()) return Status::OK();  // the driver copied the fed tensor into Out already
    return MakeError(ErrorCode::kRuntime, "feed target at col {} was not fed", col_);
  }

 private:
  int col_;
};

class FetchGpu final : public OpKernel {
 public:
  explicit FetchGpu(const KernelInit& init) : col_(init.attrs.Get<int>("col")) {}
  // Waits for the device to hand the value to the host.
  bool Replayable() const override { return false; }
  Status Run(KernelContext& ctx) override {
    Variable* holder = ctx.OutVar(kOut);
    if (holder == nullptr) return MakeError(ErrorCode::kRuntime, "fetch at col {} has no FETCH_LIST holder", col_);
    std::vector<Tensor>& list = holder->list();
    if (static_cast<int>(list.size()) <= col_) list.resize(col_ + 1);
    return ctx.device().CopyToHost(ctx.In(kX), list[col_], *host_);
  }

 private:
  int col_;
  std::shared_ptr<runtime::Allocator> host_ = runtime::CpuCachingAllocator::Create();
};

}  // namespace

Status RegisterIoCudaKernels(OpRegistry& r) {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32, DType::kInt16, DType::kBool,
                  DType::kUInt8, DType::kInt8}) {
    PC_RETURN_IF_ERROR(r.AddKernel("feed", DeviceType::kCUDA, t, MakeKernelClass<FeedGpu>()));
    PC_RETURN_IF_ERROR(r.AddKernel("fetch", DeviceType::kCUDA, t, MakeKernelClass<FetchGpu>()));
  }
  return Status::OK();
}

}  // namespace paddlec::ops
