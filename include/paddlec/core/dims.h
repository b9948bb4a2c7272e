// Tensor shapes with unknown dimensions as a first-class value.
//
// A dimension of -1 (kUnknownDim) is unknown at compile time, typically the batch. The helpers
// below propagate unknowns instead of making every shape function branch on "compile time or run
// time": DimMul(-1, 4) is -1, DimsMatch accepts -1 against anything, and so on. Dims stores up to
// kMaxRank dimensions inline, so copying or comparing shapes never allocates.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "paddlec/core/error.h"

namespace paddlec {

inline constexpr int kMaxRank = 9;
inline constexpr int64_t kUnknownDim = -1;
/// The largest tensor paddlec accepts (2^40 elements): far above any real tensor, far below
/// where sizes in bytes overflow, so absurd shapes fail early with a clear message.
inline constexpr int64_t kMaxNumel = int64_t{1} << 40;

class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<int64_t> d) {
    for (int64_t v : d) push_back(v);
  }
  template <class It>
  static StatusOr<Dims> FromRange(It begin, It end) {
    Dims out;
    for (It it = begin; it != end; ++it) {
      if (out.rank_ == kMaxRank)
        return MakeError(ErrorCode::kShape, "rank exceeds the maximum of {}", kMaxRank);
      out.d_[out.rank_++] = static_cast<int64_t>(*it);
    }
    return out;
  }
  /// Dims of `rank` dimensions, all equal to `value`.
  static Dims Filled(int rank, int64_t value) {
    Dims d;
    for (int i = 0; i < rank; ++i) d.push_back(value);
    return d;
  }

  int rank() const { return rank_; }
  int size() const { return rank_; }
  bool empty() const { return rank_ == 0; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  /// Python-style index: back(-1) is the last dimension.
  int64_t back(int from_end = 1) const { return d_[rank_ - from_end]; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + rank_; }
  int64_t* begin() { return d_; }
  int64_t* end() { return d_ + rank_; }
  std::span<const int64_t> span() const { return {d_, static_cast<size_t>(rank_)}; }
  void push_back(int64_t v) { d_[rank_++] = v; }  // precondition: rank() < kMaxRank
  void resize(int r, int64_t fill = 1) {
    for (int i = rank_; i < r; ++i) d_[i] = fill;
    rank_ = static_cast<int8_t>(r);
  }
  void erase(int i) {
    std::copy(d_ + i + 1, d_ + rank_, d_ + i);
    --rank_;
  }
  void insert(int i, int64_t v) {
    std::copy_backward(d_ + i, d_ + rank_, d_ + rank_ + 1);
    d_[i] = v;
    ++rank_;
  }

  bool IsFullyKnown() const {
    return std::none_of(begin(), end(), [](int64_t v) { return v < 0; });
  }
  /// Product of the dimensions, -1 if any is unknown. 1 for rank 0.
  int64_t Numel() const;
  /// Product of dimensions [from, to), -1 if any is unknown.
  int64_t Product(int from, int to) const;
  /// "[-1, 784]".
  std::string ToString() const;

  friend bool operator==(const Dims& a, const Dims& b) {
    return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  int64_t d_[kMaxRank] = {};
  int8_t rank_ = 0;
};

/// True when the two dimensions can be the same at run time (either unknown, or equal).
inline bool DimMatch(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }
/// True when the shapes have equal rank and every dimension matches.
bool DimsMatch(const Dims& a, const Dims& b);
/// The more-known of two matching dimensions.
inline int64_t DimMerge(int64_t a, int64_t b) { return a < 0 ? b : a; }
inline int64_t DimMul(int64_t a, int64_t b) { return (a < 0 || b < 0) ? kUnknownDim : a * b; }
inline int64_t DimAdd(int64_t a, int64_t b) { return (a < 0 || b < 0) ? kUnknownDim : a + b; }
/// Normalizes a possibly negative axis against `rank`; nullopt-like -1 result when out of range.
int NormalizeAxis(int axis, int rank);

/// Checks every dimension is >= -1 and the known numel is at most kMaxNumel, without overflow.
Status CheckDims(const Dims& d);

/// Output size of a sliding window (conv/pool) along one axis; unknown in, unknown out.
/// Returns -2 when the window does not fit (the caller reports the error with context).
int64_t WindowOutputSize(int64_t in, int64_t kernel, int64_t pad_before, int64_t pad_after,
                         int64_t stride, int64_t dilation, bool ceil_mode = false);

}  // namespace paddlec
