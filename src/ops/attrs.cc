// Attribute conversions between OpDesc.Attr and C++ values.
#include "paddlec/ops/attrs.h"

#include "paddlec/ir/program.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

bool AttrTypeCompatible(pb::AttrType have, pb::AttrType want) {
  if (have == want) return true;
  auto pair = [&](pb::AttrType a, pb::AttrType b) { return have == a && want == b; };
  return pair(pb::INT, pb::LONG) || pair(pb::LONG, pb::INT) || pair(pb::INTS, pb::LONGS) ||
         pair(pb::LONGS, pb::INTS) || pair(pb::FLOAT, pb::FLOAT64) || pair(pb::FLOATS, pb::FLOAT64S) ||
         pair(pb::FLOAT64, pb::FLOAT) || pair(pb::FLOAT64S, pb::FLOATS);
}

namespace {

Error WrongType(const pb::OpDesc::Attr& a, pb::AttrType want) {
  return MakeError(ErrorCode::kValidation, "attribute '{}' is {}, expected {}", a.name(),
                   ir::AttrTypeName(a.type()), ir::AttrTypeName(want));
}

Error OutOfInt32(const pb::OpDesc::Attr& a, int64_t v) {
  return MakeError(ErrorCode::kValidation, "attribute '{}' value {} does not fit in 32 bits", a.name(), v);
}

}  // namespace

template <>
StatusOr<int> AttrAs<int>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::INT) return a.i();
  if (a.type() == pb::BLOCK) return a.block_idx();  // the value of a BLOCK attribute is the block's index
  if (a.type() == pb::LONG) {
    if (a.l() < INT32_MIN || a.l() > INT32_MAX) return OutOfInt32(a, a.l());
    return static_cast<int>(a.l());
  }
  return WrongType(a, pb::INT);
}

template <>
StatusOr<int64_t> AttrAs<int64_t>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::LONG) return a.l();
  if (a.type() == pb::INT) return static_cast<int64_t>(a.i());
  return WrongType(a, pb::LONG);
}

template <>
StatusOr<float> AttrAs<float>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::FLOAT) return a.f();
  if (a.type() == pb::FLOAT64) return static_cast<float>(a.float64());
  return WrongType(a, pb::FLOAT);
}

template <>
StatusOr<double> AttrAs<double>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::FLOAT64) return a.float64();
  if (a.type() == pb::FLOAT) return static_cast<double>(a.f());
  return WrongType(a, pb::FLOAT64);
}

template <>
StatusOr<bool> AttrAs<bool>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::BOOLEAN) return a.b();
  return WrongType(a, pb::BOOLEAN);
}

template <>
StatusOr<std::string> AttrAs<std::string>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::STRING) return a.s();
  return WrongType(a, pb::STRING);
}

template <>
StatusOr<std::vector<int>> AttrAs<std::vector<int>>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::INTS) return std::vector<int>(a.ints().begin(), a.ints().end());
  if (a.type() == pb::LONGS) {
    std::vector<int> out;
    for (int64_t v : a.longs()) {
      if (v < INT32_MIN || v > INT32_MAX) return OutOfInt32(a, v);
      out.push_back(static_cast<int>(v));
    }
    return out;
  }
  return WrongType(a, pb::INTS);
}

template <>
StatusOr<std::vector<int64_t>> AttrAs<std::vector<int64_t>>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::LONGS) return std::vector<int64_t>(a.longs().begin(), a.longs().end());
  if (a.type() == pb::INTS) return std::vector<int64_t>(a.ints().begin(), a.ints().end());
  return WrongType(a, pb::LONGS);
}

template <>
StatusOr<std::vector<float>> AttrAs<std::vector<float>>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::FLOATS) return std::vector<float>(a.floats().begin(), a.floats().end());
  if (a.type() == pb::FLOAT64S) return std::vector<float>(a.float64s().begin(), a.float64s().end());
  return WrongType(a, pb::FLOATS);
}

template <>
StatusOr<std::vector<double>> AttrAs<std::vector<double>>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::FLOAT64S) return std::vector<double>(a.float64s().begin(), a.float64s().end());
  if (a.type() == pb::FLOATS) return std::vector<double>(a.floats().begin(), a.floats().end());
  return WrongType(a, pb::FLOAT64S);
}

template <>
StatusOr<std::vector<bool>> AttrAs<std::vector<bool>>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::BOOLEANS) return std::vector<bool>(a.bools().begin(), a.bools().end());
  return WrongType(a, pb::BOOLEANS);
}

template <>
StatusOr<std::vector<std::string>> AttrAs<std::vector<std::string>>(const pb::OpDesc::Attr& a) {
  if (a.type() == pb::STRINGS) return std::vector<std::string>(a.strings().begin(), a.strings().end());
  return WrongType(a, pb::STRINGS);
}

template <class T>
pb::OpDesc::Attr MakeAttr(std::string_view name, const T& v) {
  pb::OpDesc::Attr a;
  a.set_name(std::string(name));
  a.set_type(AttrTypeOf<T>());
  if constexpr (std::is_same_v<T, int>) a.set_i(v);
  else if constexpr (std::is_same_v<T, int64_t>) a.set_l(v);
  else if constexpr (std::is_same_v<T, float>) a.set_f(v);
  else if constexpr (std::is_same_v<T, double>) a.set_float64(v);
  else if constexpr (std::is_same_v<T, bool>) a.set_b(v);
  else if constexpr (std::is_same_v<T, std::string>) a.set_s(v);
  else if constexpr (std::is_same_v<T, std::vector<int>>) for (int x : v) a.add_ints(x);
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) for (int64_t x : v) a.add_longs(x);
  else if constexpr (std::is_same_v<T, std::vector<float>>) for (float x : v) a.add_floats(x);
  else if constexpr (std::is_same_v<T, std::vector<double>>) for (double x : v) a.add_float64s(x);
  else if constexpr (std::is_same_v<T, std::vector<bool>>) for (bool x : v) a.add_bools(x);
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) for (const auto& x : v) a.add_strings(x);
  return a;
}

template pb::OpDesc::Attr MakeAttr(std::string_view, const int&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const int64_t&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const float&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const double&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const bool&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const std::string&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const std::vector<int>&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const std::vector<int64_t>&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const std::vector<float>&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const std::vector<double>&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const std::vector<bool>&);
template pb::OpDesc::Attr MakeAttr(std::string_view, const std::vector<std::string>&);

const pb::OpDesc::Attr* AttrReader::Find(std::string_view name) const {
  for (const auto& a : op_->attrs())
    if (a.name() == name) return &a;
  if (info_ != nullptr)
    if (const pb::OpProto::Attr* spec = info_->FindAttr(name); spec && spec->has_default_value())
      return &spec->default_value();
  return nullptr;
}

}  // namespace paddlec::ops
