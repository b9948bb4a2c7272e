// The comparison ops' relations as plain values (no paddlec headers), for compare.cc, the CUDA
// adapter and the device code (compare.cu) alike.
#pragma once

#ifdef __CUDACC__
#define PC_COMPARE_HD __host__ __device__
#else
#define PC_COMPARE_HD
#endif

namespace paddlec::ops {

enum class Compare { kEq, kNe, kLt, kLe, kGt, kGe };

/// The relation of `kind` between a and b; NaN compares unequal to everything, as in IEEE 754.
template <Compare kKind, class T>
PC_COMPARE_HD inline bool Relate(T a, T b) {
  switch (kKind) {
    case Compare::kEq:
      return a == b;
    case Compare::kNe:
      return a != b;
    case Compare::kLt:
      return a < b;
    case Compare::kLe:
      return a <= b;
    case Compare::kGt:
      return a > b;
    case Compare::kGe:
      return a >= b;
  }
  return false;
}

}  // namespace paddlec::ops
