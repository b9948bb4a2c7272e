// The caching host allocator.
#include "paddlec/runtime/allocator.h"

#include <bit>
#include <cstdlib>

namespace paddlec::runtime {

StatusOr<std::shared_ptr<Buffer>> AllocateBuffer(Allocator& alloc, size_t bytes) {
  PC_ASSIGN_OR_RETURN(void* p, alloc.Allocate(bytes));
  return std::make_shared<Buffer>(alloc.shared_from_this(), p, bytes);
}

std::shared_ptr<CpuCachingAllocator> CpuCachingAllocator::Create(size_t max_cached_bytes) {
  return std::shared_ptr<CpuCachingAllocator>(new CpuCachingAllocator(max_cached_bytes));
}

CpuCachingAllocator::~CpuCachingAllocator() { ReleaseCache(); }

size_t CpuCachingAllocator::BinSize(size_t bytes) {
  if (bytes <= 64) return 64;
  if (bytes <= 4096) return (bytes + 63) & ~size_t{63};
  // Above 4 KiB: four bins per power of two, so rounding wastes at most 25%.
  size_t p = std::bit_floor(bytes);
  size_t quarter = p / 4;
  return (bytes + quarter - 1) / quarter * quarter;
}

StatusOr<void*> CpuCachingAllocator::Allocate(size_t bytes) {
  size_t bin = BinSize(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.allocs;
    auto it = free_.find(bin);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.bytes_cached -= bin;
      stats_.bytes_in_use += bin;
      stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
      return p;
    }
  }
  void* p = std::aligned_alloc(64, bin);
  if (p == nullptr) {
    ReleaseCache();
    p = std::aligned_alloc(64, bin);
  }
  if (p == nullptr)
    return MakeError(ErrorCode::kResourceExhausted, "out of host memory allocating {} bytes", bin);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.system_allocs;
  stats_.bytes_in_use += bin;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return p;
}

void CpuCachingAllocator::Free(void* ptr, size_t bytes) {
  size_t bin = BinSize(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.bytes_in_use -= bin;
  if (stats_.bytes_cached + bin > max_cached_) {
    std::free(ptr);
    return;
  }
  free_[bin].push_back(ptr);
  stats_.bytes_cached += bin;
}

AllocatorStats CpuCachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CpuCachingAllocator::ReleaseCache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [bin, list] : free_)
    for (void* p : list) std::free(p);
  free_.clear();
  stats_.bytes_cached = 0;
}

}  // namespace paddlec::runtime
