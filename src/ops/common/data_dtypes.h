// The element types data-movement kernels (copies, reshapes, gathers, broadcasts, fills) serve on
// every place: one list, so the CPU and CUDA registrations and the `dtype` attributes agree.
#pragma once

#include <cstdint>
#include <vector>

namespace paddlec::ops {

/// Calls f.template operator()<T>() for every element type data-movement kernels serve.
template <class F>
void ForEachDType(F&& f) {
  f.template operator()<bool>();
  f.template operator()<int8_t>();
  f.template operator()<uint8_t>();
  f.template operator()<int16_t>();
  f.template operator()<int32_t>();
  f.template operator()<int64_t>();
  f.template operator()<float>();
  f.template operator()<double>();
}

/// The VarType numbers of the element types ForEachDType covers (for `dtype`-like attributes).
inline const std::vector<int64_t>& SupportedDTypeNumbers() {
  static const std::vector<int64_t> v = {0, 1, 2, 3, 5, 6, 20, 21};
  return v;
}

}  // namespace paddlec::ops
