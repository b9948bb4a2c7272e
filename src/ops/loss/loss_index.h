// Index arithmetic and scalar rules of the loss family's CUDA kernels (loss.cu), shared with the host:
// the [outer, n, inner] view of a tensor around its class axis (element -> line and class), the
// label validity rule and PaddlePaddle's guarded log. Plain __host__ __device__ code without paddlec
// headers; unit-tested on the CPU (loss_index_test.cc).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#ifdef __CUDACC__
#define PC_LOSS_HD __host__ __device__
#else
#define PC_LOSS_HD
#endif

namespace paddlec::ops::loss_index {

/// A tensor seen as [outer, n, inner] around its class axis: element e = (o * n + k) * inner + i lies
/// on line o * inner + i (the line's label and loss entry) at class k.
struct AxisIndex {
  int64_t n, inner;
  PC_LOSS_HD int64_t Line(int64_t e) const { return e / (n * inner) * inner + e % inner; }
  PC_LOSS_HD int64_t Class(int64_t e) const { return e / inner % n; }
  /// Element k = 0 of a line.
  PC_LOSS_HD int64_t Base(int64_t line) const { return line / inner * n * inner + line % inner; }
};

/// The CPU's CheckHardLabels rule: a label is bad when it is no class in [0, classes) and not ignore_index.
PC_LOSS_HD inline bool BadLabel(int64_t label, int64_t classes, int64_t ignore_index) {
  return (label < 0 || label >= classes) && label != ignore_index;
}

/// PaddlePaddle's TolerableValue bound (loss_common.h's kApproInf).
inline constexpr double kApproInf = 1e20;

/// log(x) with -inf and +inf replaced by -1e20 and 1e20 (NaN passes through), as loss::TolerableLog.
template <class T>
PC_LOSS_HD inline T TolerableLog(T x) {
#ifdef __CUDA_ARCH__
  const T l = log(x);
#else
  const T l = std::log(x);
#endif
  constexpr T kMax = std::numeric_limits<T>::max();
  if (l < -kMax) return T(-kApproInf);
  if (l > kMax) return T(kApproInf);
  return l;
}

}  // namespace paddlec::ops::loss_index
