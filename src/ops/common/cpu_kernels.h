// Helpers shared by CPU kernels: Eigen views of tensors and parallel element-wise maps.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include "paddlec/ops/kernel.h"
#include "paddlec/runtime/device_context.h"

namespace paddlec::ops {

template <class T>
using ConstEigenVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using MutEigenVec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

/// Elements per thread below which element-wise work stays on one thread.
inline constexpr int64_t kElementwiseGrain = 32768;

using runtime::ParallelFor;

/// Runs fn(begin, len) over chunks of [0, n), split across the CPU pool when n is large.
template <class F>
void ParallelChunks(int64_t n, F&& fn) {
  runtime::ParallelFor(n, kElementwiseGrain, [&](int64_t b, int64_t e) { fn(b, e - b); });
}

}  // namespace paddlec::ops
