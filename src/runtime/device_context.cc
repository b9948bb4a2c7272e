// The CPU device context.
#include "paddlec/runtime/device_context.h"

#include <omp.h>

#include <thread>

#include "paddlec/runtime/onednn.h"

namespace paddlec::runtime {

CpuContext::CpuContext(int num_threads) {
  allocator_ = std::make_shared<CpuCachingAllocator>();
  num_threads_ = num_threads > 0 ? num_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  omp_set_num_threads(num_threads_);
}

CpuContext::~CpuContext() = default;

OneDnnHandles& CpuContext::onednn() {
  if (!onednn_) onednn_ = std::make_unique<OneDnnHandles>();
  return *onednn_;
}

}  // namespace paddlec::runtime
