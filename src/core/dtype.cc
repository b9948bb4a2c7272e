// Names, sizes and wire-format conversion of element data types.
#include "paddlec/core/dtype.h"

#include <array>

namespace paddlec {
namespace {

struct DTypeRow {
  DType type;
  size_t size;
  std::string_view name;
  std::string_view paddle_name;
};

constexpr std::array<DTypeRow, 10> kRows = {{
    {DType::kBool, 1, "bool", "BOOL"},
    {DType::kInt16, 2, "int16", "INT16"},
    {DType::kInt32, 4, "int32", "INT32"},
    {DType::kInt64, 8, "int64", "INT64"},
    {DType::kFloat16, 2, "float16", "FP16"},
    {DType::kFloat32, 4, "float32", "FP32"},
    {DType::kFloat64, 8, "float64", "FP64"},
    {DType::kUInt8, 1, "uint8", "UINT8"},
    {DType::kInt8, 1, "int8", "INT8"},
    {DType::kBFloat16, 2, "bfloat16", "BF16"},
}};

const DTypeRow* Find(DType t) {
  for (const auto& r : kRows)
    if (r.type == t) return &r;
  return nullptr;
}

}  // namespace

size_t SizeOf(DType t) {
  const DTypeRow* r = Find(t);
  return r ? r->size : 0;
}

std::string_view DTypeName(DType t) {
  const DTypeRow* r = Find(t);
  return r ? r->name : "undefined";
}

std::optional<DType> ParseDType(std::string_view name) {
  for (const auto& r : kRows)
    if (name == r.name || name == r.paddle_name) return r.type;
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "int") return DType::kInt32;
  return std::nullopt;
}

StatusOr<DType> DTypeFromProto(int var_type) {
  const DTypeRow* r = Find(static_cast<DType>(var_type));
  if (r == nullptr)
    return MakeError(ErrorCode::kValidation, "VarType {} is not a tensor element type", var_type);
  return r->type;
}

bool IsFloating(DType t) {
  return t == DType::kFloat16 || t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kBFloat16;
}

}  // namespace paddlec
