// Test helpers for the math family: naive double-precision references and a multi-threaded
// one-op runner (OpTest runs kernels on one thread; the parallel paths need two).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "math/gemm.h"
#include "paddlec.pb.h"
#include "paddlec/exec/executor.h"
#include "paddlec/ir/program.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::testing::math_test {

/// Sets the tiled GEMM's TiledGemmUse for a scope. Tests of the tiles ask for kAlways: under kAuto a
/// CPU where oneDNN runs AVX-512 sends most of their products to oneDNN.
class ScopedTiledGemmUse {
 public:
  explicit ScopedTiledGemmUse(ops::math::TiledGemmUse use) : saved_(ops::math::GetTiledGemmUse()) {
    ops::math::SetTiledGemmUse(use);
  }
  ~ScopedTiledGemmUse() { ops::math::SetTiledGemmUse(saved_); }
  ScopedTiledGemmUse(const ScopedTiledGemmUse&) = delete;
  ScopedTiledGemmUse& operator=(const ScopedTiledGemmUse&) = delete;

 private:
  ops::math::TiledGemmUse saved_;
};

/// Row-major multi-index of flat index i in dims.
inline std::vector<int64_t> Unravel(int64_t i, const Dims& dims) {
  std::vector<int64_t> idx(dims.rank());
  for (int d = dims.rank() - 1; d >= 0; --d) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
  return idx;
}

/// Flat index in `aligned` (same rank as idx; size-1 dims read index 0) of a multi-index.
inline int64_t Ravel(const std::vector<int64_t>& idx, const Dims& aligned) {
  int64_t off = 0;
  for (int d = 0; d < aligned.rank(); ++d) off = off * aligned[d] + (aligned[d] == 1 ? 0 : idx[d]);
  return off;
}

/// out[i] = f(x[ix], y[iy]) over `out` dims, with X and Y given by hand-aligned dims (1 = broadcast).
inline std::vector<double> BinaryRef(const std::vector<double>& x, const Dims& xa, const std::vector<double>& y,
                                     const Dims& ya, const Dims& out, const std::function<double(double, double)>& f) {
  std::vector<double> r(out.Numel());
  for (int64_t i = 0; i < out.Numel(); ++i) {
    auto idx = Unravel(i, out);
    r[i] = f(x[Ravel(idx, xa)], y[Ravel(idx, ya)]);
  }
  return r;
}

/// Sums `v` (shaped `full`) onto `aligned` (same rank; 1 where summed), in double.
inline std::vector<double> SumTo(const std::vector<double>& v, const Dims& full, const Dims& aligned) {
  std::vector<double> r(aligned.Numel(), 0.0);
  for (int64_t i = 0; i < full.Numel(); ++i) r[Ravel(Unravel(i, full), aligned)] += v[i];
  return r;
}

template <class T>
Tensor FromDoubles(const Dims& dims, const std::vector<double>& v) {
  std::vector<T> t(v.begin(), v.end());
  return MakeTensor<T>(dims, t);
}

}  // namespace paddlec::testing::math_test
