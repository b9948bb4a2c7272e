// Helpers shared by the loss family: hard-label validation, PaddlePaddle's guarded log, axis views.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "common/cpu_kernels.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

void RegisterCrossEntropyOps(OpRegistry& r);
void RegisterSoftmaxWithCrossEntropyOps(OpRegistry& r);
void RegisterAccuracyOps(OpRegistry& r);
void RegisterSquaredL2NormOps(OpRegistry& r);

namespace loss {

/// PaddlePaddle's TolerableValue bound: log(0) = -inf becomes -1e20, so a hard-label loss on a zero
/// probability stays finite (1e20) and a zero soft label times log(0) is 0 rather than NaN.
inline constexpr double kApproInf = 1e20;

/// log(x) with +-inf replaced by +-1e20 (NaN passes through, so invalid probabilities stay visible).
template <class T>
T TolerableLog(T x) {
  T l = std::log(x);
  if (l == -std::numeric_limits<T>::infinity()) return T(-kApproInf);
  if (l == std::numeric_limits<T>::infinity()) return T(kApproInf);
  return l;
}

/// The same, element-wise on an Eigen array expression.
template <class T, class E>
auto TolerableLogArray(const E& x) {
  auto l = x.log();
  constexpr T kInf = std::numeric_limits<T>::infinity();
  return (l == -kInf).select(T(-kApproInf), (l == kInf).select(T(kApproInf), l));
}

/// True for the dtypes hard labels may have.
inline bool IsIndexDType(DType t) { return t == DType::kInt64 || t == DType::kInt32; }

/// Checks that every label is a class index in [0, num_classes) or equals ignore_index; the classes lie
/// along axis `axis` of input `slot`. A runtime error names the first bad label.
template <class L>
Status CheckHardLabels(const L* labels, int64_t count, int64_t num_classes, int64_t ignore_index, std::string_view slot,
                       int axis) {
  bool bad = false;  // one branch-free sweep (vectorizable); the slow search runs only on failure
  for (int64_t i = 0; i < count; ++i) {
    int64_t l = labels[i];
    bad |= (l < 0 || l >= num_classes) && l != ignore_index;
  }
  if (!bad) return Status::OK();
  for (int64_t i = 0; i < count; ++i) {
    int64_t l = labels[i];
    if ((l < 0 || l >= num_classes) && l != ignore_index)
      return MakeError(
          ErrorCode::kRuntime,
          "Label holds {} at index {}, outside the {} classes [0, {}) along axis {} of {} (ignore_index is {})", l, i,
          num_classes, num_classes, axis, slot, ignore_index);
  }
  return Status::OK();
}

/// A tensor seen as [outer, n, inner] around one axis: element (o, k, i) is at (o * n + k) * inner + i.
struct AxisView {
  int64_t outer, n, inner;
  int64_t lines() const { return outer * inner; }
  /// Offset of element k = 0 of line `line` (lines are numbered o * inner + i).
  int64_t base(int64_t line) const { return (line / inner) * n * inner + line % inner; }
};

/// Precondition: `axis` is a valid (already normalized) axis of `d`.
inline AxisView ViewAround(const Dims& d, int axis) {
  return {d.Product(0, axis), d[axis], d.Product(axis + 1, d.rank())};
}

/// Work per line is ~n elements; aim for kElementwiseGrain elements per thread.
inline int64_t LineGrain(int64_t n) { return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)); }

/// Calls f(line, view) for every line of `v`, split across the CPU pool. view(ptr) maps that line of a
/// tensor laid out like `v` (ptr = its data) as an Eigen array of n elements: a contiguous map, which
/// Eigen vectorizes, when inner == 1 (the class axis is the last one), a strided map otherwise.
template <class F>
void ForEachLine(const AxisView& v, F&& f) {
  auto run = [&](auto contiguous) {
    ParallelFor(v.lines(), LineGrain(v.n), [&](int64_t b, int64_t e) {
      for (int64_t line = b; line < e; ++line) {
        const int64_t base = v.base(line);
        auto view = [&]<class P>(P* p) {
          using Arr = Eigen::Array<std::remove_const_t<P>, Eigen::Dynamic, 1>;
          using Target = std::conditional_t<std::is_const_v<P>, const Arr, Arr>;
          if constexpr (decltype(contiguous)::value) {
            return Eigen::Map<Target>(p + base, v.n);
          } else {
            return Eigen::Map<Target, 0, Eigen::InnerStride<>>(p + base, v.n, Eigen::InnerStride<>(v.inner));
          }
        };
        f(line, view);
      }
    });
  };
  if (v.inner == 1)
    run(std::true_type{});
  else
    run(std::false_type{});
}

}  // namespace loss
}  // namespace paddlec::ops
