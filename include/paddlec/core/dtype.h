// Element data types, numbered as PaddlePaddle's VarType.Type so they convert to the wire format
// with a cast, plus the one dtype-dispatch utility every kernel uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "paddlec/core/error.h"

namespace paddlec {

enum class DType : int {
  kBool = 0,
  kInt16 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat16 = 4,
  kFloat32 = 5,
  kFloat64 = 6,
  kUInt8 = 20,
  kInt8 = 21,
  kBFloat16 = 22,
  kUndefined = -1,
};

/// Bytes per element; 0 for kUndefined.
size_t SizeOf(DType t);
/// "float32", "int64", ... (NumPy's spelling).
std::string_view DTypeName(DType t);
/// Accepts NumPy's names and Paddle's enum names ("float32", "FP32", "int64", "INT64", ...).
std::optional<DType> ParseDType(std::string_view name);
/// Maps a VarType.Type number to a DType; an error for container kinds (LOD_TENSOR, ...) and unknown numbers.
StatusOr<DType> DTypeFromProto(int var_type);
inline int DTypeToProto(DType t) { return static_cast<int>(t); }
bool IsFloating(DType t);

template <class T>
constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<bool>() { return DType::kBool; }
template <> constexpr DType DTypeOf<int16_t>() { return DType::kInt16; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kInt32; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kInt64; }
template <> constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <> constexpr DType DTypeOf<double>() { return DType::kFloat64; }
template <> constexpr DType DTypeOf<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType DTypeOf<int8_t>() { return DType::kInt8; }

/// Calls `fn.template operator()<T>()` with T the C++ type of `t`, for the types kernels compute in
/// (bool, int8/16/32/64, uint8, float, double). Returns an Unimplemented error for the others.
///   PC_RETURN_IF_ERROR(VisitDType(t, [&]<class T>() { Fill<T>(out); }));
template <class Fn>
Status VisitDType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kBool: fn.template operator()<bool>(); return Status::OK();
    case DType::kInt8: fn.template operator()<int8_t>(); return Status::OK();
    case DType::kUInt8: fn.template operator()<uint8_t>(); return Status::OK();
    case DType::kInt16: fn.template operator()<int16_t>(); return Status::OK();
    case DType::kInt32: fn.template operator()<int32_t>(); return Status::OK();
    case DType::kInt64: fn.template operator()<int64_t>(); return Status::OK();
    case DType::kFloat32: fn.template operator()<float>(); return Status::OK();
    case DType::kFloat64: fn.template operator()<double>(); return Status::OK();
    default:
      return MakeError(ErrorCode::kUnimplemented, "data type {} is not supported here", DTypeName(t));
  }
}

}  // namespace paddlec
