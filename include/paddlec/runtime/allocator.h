// Memory for tensors: the Allocator interface and the caching CPU allocator.
//
// Training and inference repeat the same allocation sizes every step, and glibc's malloc returns
// large blocks to the OS and page-faults them back in (up to 4x slower GEMMs here, see
// docs/performance.md). The caching allocator keeps freed blocks in size-binned free lists
// so the steady state never reaches the system allocator. The CUDA allocator implements the same
// interface in the CUDA backend.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "paddlec/core/error.h"
#include "paddlec/core/place.h"

namespace paddlec::runtime {

struct AllocatorStats {
  uint64_t bytes_in_use = 0;
  uint64_t peak_bytes_in_use = 0;
  uint64_t bytes_cached = 0;       // freed blocks kept for reuse
  uint64_t system_allocs = 0;      // calls that reached the system allocator
  uint64_t allocs = 0;             // all Allocate calls
};

class Allocator : public std::enable_shared_from_this<Allocator> {
 public:
  virtual ~Allocator() = default;
  virtual Place place() const = 0;
  /// Returns a block of at least `bytes` bytes, 64-byte aligned; an error when memory runs out.
  virtual StatusOr<void*> Allocate(size_t bytes) = 0;
  /// Returns a block obtained from Allocate with the same `bytes`.
  virtual void Free(void* ptr, size_t bytes) = 0;
  virtual AllocatorStats stats() const = 0;
  /// Gives every cached block back to the system.
  virtual void ReleaseCache() {}
};

/// A block of memory owned by a tensor (shared between tensors that alias it): from an Allocator, or
/// memory someone else owns (a NumPy array fed without a copy), released by a callback.
class Buffer {
 public:
  Buffer(std::shared_ptr<Allocator> alloc, void* data, size_t size)
      : alloc_(std::move(alloc)), data_(data), size_(size), place_(alloc_->place()) {}
  /// Wraps external memory; `release` runs when the last tensor using it lets go.
  Buffer(void* data, size_t size, Place place, std::function<void()> release)
      : data_(data), size_(size), place_(place), release_(std::move(release)) {}
  ~Buffer() {
    if (alloc_ && data_) alloc_->Free(data_, size_);
    if (release_) release_();
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  Place place() const { return place_; }
  /// False for external memory, which paddlec must never reuse for another tensor.
  bool owned() const { return alloc_ != nullptr; }

  /// Content stamps let a kernel keep something derived from an input (a GEMM's packed weights)
  /// across steps: two equal non-zero stamps of a buffer, read at two times, mean nothing wrote to
  /// it in between. Every write path of Tensor (its non-const data access) calls Touch() first.
  /// External memory always reads 0, "unknown": its owner may write it at any time.
  uint64_t Stamp() const;
  void Touch() {
    // A read first: a buffer written by many threads' loops then stays shared in their caches.
    if (stamp_.load(std::memory_order_relaxed) != 0) stamp_.store(0, std::memory_order_relaxed);
  }

 private:
  std::shared_ptr<Allocator> alloc_;
  void* data_;
  size_t size_;
  Place place_;
  std::function<void()> release_;
  mutable std::atomic<uint64_t> stamp_{0};  // 0 until read after a write
};

/// Size-binned free lists and the statistics of a caching allocator, shared by the host and the CUDA
/// ones: requests round up to a bin (four per power of two above `min_bin`, so rounding wastes at
/// most 25%), freed blocks wait in their bin's list, and a request that finds one never reaches the
/// system allocator. Thread-safe.
class BlockCache {
 public:
  BlockCache(size_t min_bin, size_t max_cached) : min_bin_(min_bin), max_cached_(max_cached) {}
  size_t Bin(size_t bytes) const;
  /// A cached block of exactly `bin` bytes, or nullptr. Counts the request either way.
  void* Take(size_t bin);
  /// Records a block of `bin` bytes obtained from the system.
  void NoteSystemAlloc(size_t bin);
  /// Caches a freed block; false when the cache is full (the caller returns it to the system).
  bool Give(void* ptr, size_t bin);
  /// Removes and returns every cached block with its size.
  std::vector<std::pair<void*, size_t>> Drain();
  AllocatorStats stats() const;

 private:
  size_t min_bin_, max_cached_;
  mutable std::mutex mu_;
  AllocatorStats stats_;
  std::unordered_map<size_t, std::vector<void*>> free_;
};

/// Allocates a Buffer of `bytes` from `alloc`.
StatusOr<std::shared_ptr<Buffer>> AllocateBuffer(Allocator& alloc, size_t bytes);

/// The caching, 64-byte-aligned host allocator. Buffers keep their allocator alive, so allocators are
/// always owned by a shared_ptr: create them with Create().
class CpuCachingAllocator final : public Allocator {
 public:
  /// `max_cached_bytes` bounds the memory kept in free lists.
  static std::shared_ptr<CpuCachingAllocator> Create(size_t max_cached_bytes = size_t{2} << 30);
  ~CpuCachingAllocator() override;

  Place place() const override { return Place::CPU(); }
  StatusOr<void*> Allocate(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  AllocatorStats stats() const override;
  void ReleaseCache() override;

  /// The bin a request of `bytes` is rounded up to (exposed for tests).
  static size_t BinSize(size_t bytes);

 private:
  explicit CpuCachingAllocator(size_t max_cached_bytes) : cache_(kMinBin, max_cached_bytes) {}
  static constexpr size_t kMinBin = 64;
  BlockCache cache_;
};

}  // namespace paddlec::runtime
