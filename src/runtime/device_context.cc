// The CPU device context.
#include "paddlec/runtime/device_context.h"

#include <cstring>
#include <thread>

#include "paddlec/runtime/onednn.h"
#include "paddlec/runtime/tensor.h"

namespace paddlec::runtime {

Status DeviceContext::CopyFromHost(const Tensor& host, Tensor& device) {
  device.Set(host.dtype(), host.dims());
  PC_RETURN_IF_ERROR(device.Allocate(allocator()));
  if (host.nbytes() > 0) std::memcpy(device.raw_data(), host.raw_data(), host.nbytes());
  device.mutable_lod() = host.lod();
  if (host.is_selected_rows()) device.SetSelectedRows(host.rows(), host.height());
  else device.ClearSelectedRows();
  return Status::OK();
}

Status DeviceContext::CopyToHost(const Tensor& device, Tensor& host, Allocator& host_alloc) {
  host.Set(device.dtype(), device.dims());
  PC_RETURN_IF_ERROR(host.Allocate(host_alloc));
  if (device.nbytes() > 0) std::memcpy(host.raw_data(), device.raw_data(), device.nbytes());
  host.mutable_lod() = device.lod();
  if (device.is_selected_rows()) host.SetSelectedRows(device.rows(), device.height());
  else host.ClearSelectedRows();
  return Status::OK();
}

CpuContext::CpuContext(int num_threads) {
  allocator_ = CpuCachingAllocator::Create();
  // The count applies while this context's plans run (exec/plan.cc, runtime/threads.h), not
  // process-wide: executors with different counts coexist.
  num_threads_ = num_threads > 0 ? num_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

CpuContext::~CpuContext() = default;

OneDnnHandles& CpuContext::onednn() {
  if (!onednn_) onednn_ = std::make_unique<OneDnnHandles>();
  return *onednn_;
}

}  // namespace paddlec::runtime
