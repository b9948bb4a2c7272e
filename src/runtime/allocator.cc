// The caching host allocator.
#include "paddlec/runtime/allocator.h"

#include <bit>
#include <cstdlib>

namespace paddlec::runtime {

uint64_t Buffer::Stamp() const {
  if (!owned()) return 0;
  static std::atomic<uint64_t> next{1};
  uint64_t s = stamp_.load(std::memory_order_acquire);
  if (s != 0) return s;
  // Stamps are unique across buffers: a kernel holding one stamp never sees it on another buffer,
  // not even on one made later at the same address.
  uint64_t fresh = next.fetch_add(1, std::memory_order_relaxed);
  return stamp_.compare_exchange_strong(s, fresh, std::memory_order_acq_rel) ? fresh : s;
}

StatusOr<std::shared_ptr<Buffer>> AllocateBuffer(Allocator& alloc, size_t bytes) {
  PC_ASSIGN_OR_RETURN(void* p, alloc.Allocate(bytes));
  return std::make_shared<Buffer>(alloc.shared_from_this(), p, bytes);
}

std::shared_ptr<CpuCachingAllocator> CpuCachingAllocator::Create(size_t max_cached_bytes) {
  return std::shared_ptr<CpuCachingAllocator>(new CpuCachingAllocator(max_cached_bytes));
}

size_t BlockCache::Bin(size_t bytes) const {
  if (bytes <= min_bin_) return min_bin_;
  if (bytes <= 4096) return (bytes + min_bin_ - 1) / min_bin_ * min_bin_;
  size_t quarter = std::max(std::bit_floor(bytes) / 4, min_bin_);
  return (bytes + quarter - 1) / quarter * quarter;
}

void* BlockCache::Take(size_t bin) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.allocs;
  auto it = free_.find(bin);
  if (it == free_.end() || it->second.empty()) return nullptr;
  void* p = it->second.back();
  it->second.pop_back();
  stats_.bytes_cached -= bin;
  stats_.bytes_in_use += bin;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return p;
}

void BlockCache::NoteSystemAlloc(size_t bin) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.system_allocs;
  stats_.bytes_in_use += bin;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
}

bool BlockCache::Give(void* ptr, size_t bin) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.bytes_in_use -= bin;
  if (stats_.bytes_cached + bin > max_cached_) return false;
  free_[bin].push_back(ptr);
  stats_.bytes_cached += bin;
  return true;
}

std::vector<std::pair<void*, size_t>> BlockCache::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<void*, size_t>> out;
  for (auto& [bin, list] : free_)
    for (void* p : list) out.emplace_back(p, bin);
  free_.clear();
  stats_.bytes_cached = 0;
  return out;
}

AllocatorStats BlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

CpuCachingAllocator::~CpuCachingAllocator() { ReleaseCache(); }

size_t CpuCachingAllocator::BinSize(size_t bytes) { return BlockCache(kMinBin, 0).Bin(bytes); }

StatusOr<void*> CpuCachingAllocator::Allocate(size_t bytes) {
  size_t bin = cache_.Bin(bytes);
  if (void* p = cache_.Take(bin)) return p;
  void* p = std::aligned_alloc(64, bin);
  if (p == nullptr) {
    ReleaseCache();
    p = std::aligned_alloc(64, bin);
  }
  if (p == nullptr)
    return MakeError(ErrorCode::kResourceExhausted, "out of host memory allocating {} bytes", bin);
  cache_.NoteSystemAlloc(bin);
  return p;
}

void CpuCachingAllocator::Free(void* ptr, size_t bytes) {
  if (!cache_.Give(ptr, cache_.Bin(bytes))) std::free(ptr);
}

AllocatorStats CpuCachingAllocator::stats() const { return cache_.stats(); }

void CpuCachingAllocator::ReleaseCache() {
  for (auto [p, bin] : cache_.Drain()) std::free(p);
}

}  // namespace paddlec::runtime
