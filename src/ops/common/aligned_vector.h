// Kernel scratch and packed operands on cache-line boundaries. std::vector's storage is 16-byte
// aligned (glibc's malloc), so every 64-byte AVX-512 load from it touched two cache lines: a packed
// panel of B streamed from L2 at half the rate (math/gemm.cc's RowsTimesPanel512, 8.0 us against
// 4.4 us for 0.8 MB).
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace paddlec::ops {

/// The alignment of AlignedVector's storage: a cache line, and one AVX-512 register.
inline constexpr std::size_t kCacheLine = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kCacheLine})); }
  void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{kCacheLine}); }
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
};

/// A std::vector whose data() starts on a cache line.
template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace paddlec::ops
