// Reading the values of small tensors that steer an op (sizes, paddings, scales) on the host.
#pragma once

#include <string_view>
#include <vector>

#include "paddlec/core/error.h"
#include "paddlec/runtime/tensor.h"

namespace paddlec::ops {

/// `n` elements of `dtype` (int32, int64, float32 or float64) at `data`, converted to To; an error
/// naming the input `what` for any other dtype.
template <class To>
StatusOr<std::vector<To>> ValuesAs(DType dtype, const void* data, int64_t n, std::string_view what) {
  std::vector<To> out(static_cast<size_t>(n < 0 ? 0 : n));
  auto copy = [&](const auto* p) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<To>(p[i]);
  };
  switch (dtype) {
    case DType::kInt32:
      copy(static_cast<const int32_t*>(data));
      break;
    case DType::kInt64:
      copy(static_cast<const int64_t*>(data));
      break;
    case DType::kFloat32:
      copy(static_cast<const float*>(data));
      break;
    case DType::kFloat64:
      copy(static_cast<const double*>(data));
      break;
    default:
      return MakeError(ErrorCode::kInvalidArgument, "{} is {} but must be int32, int64, float32 or float64", what,
                       DTypeName(dtype));
  }
  return out;
}

/// The elements of a host tensor, converted to To (see ValuesAs).
template <class To>
StatusOr<std::vector<To>> HostValues(const runtime::Tensor& t, std::string_view what) {
  return ValuesAs<To>(t.dtype(), t.raw_data(), t.numel(), what);
}

}  // namespace paddlec::ops
