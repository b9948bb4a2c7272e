// The feed rule shared by the CLI and Python (see feed_rules.h).
#include "paddlec/core/feed_rules.h"

namespace paddlec {
namespace {

enum class Kind { kFloat, kSigned, kOther };

Kind KindOf(DType t) {
  switch (t) {
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
      return Kind::kFloat;
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return Kind::kSigned;
    default:
      return Kind::kOther;
  }
}

std::string Shape(const Dims& d, Frontend f) {
  if (f == Frontend::kCli) return d.ToString();
  std::string s = "(";
  for (int i = 0; i < d.rank(); ++i) s += fmt::format("{}{}", i ? ", " : "", d[i]);
  return s + (d.rank() == 1 ? ",)" : ")");
}

}  // namespace

StatusOr<FeedCast> CheckFeedDType(std::string_view name, DType declared, DType given) {
  if (given == declared || declared == DType::kUndefined) return FeedCast{};
  if (KindOf(given) == Kind::kOther || KindOf(given) != KindOf(declared))
    return MakeError(ErrorCode::kInvalidArgument, "input '{}' is declared {} but the fed array is {}", name,
                     DTypeName(declared), DTypeName(given));
  FeedCast cast{.convert = true};
  if (SizeOf(given) > SizeOf(declared))
    cast.warning = fmt::format("input '{}' is declared {}: the fed {} array is converted to it, which may lose {}",
                               name, DTypeName(declared), DTypeName(given),
                               KindOf(declared) == Kind::kFloat ? "precision" : "values out of its range");
  return cast;
}

StatusOr<FeedCast> CheckFeedDType(std::string_view name, DType declared, std::string_view given) {
  std::optional<DType> t = ParseDType(given);
  if (!t)
    return MakeError(ErrorCode::kInvalidArgument, "input '{}' is declared {} but the fed array is {}", name,
                     DTypeName(declared), given);
  return CheckFeedDType(name, declared, *t);
}

Status CheckFeedDims(std::string_view name, const Dims& declared, const Dims& given) {
  if (DimsMatch(declared, given)) return Status::OK();
  Error e =
      MakeError(ErrorCode::kInvalidArgument, "input '{}' is declared with shape {} but the fed array has shape {}",
                name, declared.ToString(), given.ToString());
  if (declared.rank() == given.rank() + 1 && declared.back() == 1) {
    Dims d = given;
    d.push_back(1);
    e.Advise(fmt::format("add a trailing dimension of 1: shape {}", Shape(d, Frontend::kCli)),
             fmt::format("add a trailing dimension of 1: array.reshape({})", Shape(d, Frontend::kPython)));
  }
  return e;
}

}  // namespace paddlec
