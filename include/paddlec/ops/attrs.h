// Typed access to op attributes, shared by shape inference, gradient makers and kernels.
//
// Values come from the OpDesc, or from the OpProto's default when the OpDesc omits them. Integer
// and float widths convert where no information is lost (INT <-> LONG, INTS <-> LONGS, FLOAT ->
// FLOAT64), because PaddlePaddle files of different eras store e.g. `shape` as INTS or as LONGS.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "framework.pb.h"
#include "paddlec/core/error.h"

namespace paddlec::ops {

namespace pb = ::paddle::framework::proto;
class OpInfo;

/// The AttrType a C++ type maps to (int -> INT, std::vector<int64_t> -> LONGS, ...).
template <class T>
constexpr pb::AttrType AttrTypeOf();

/// Builds an OpDesc.Attr holding `value`.
template <class T>
pb::OpDesc::Attr MakeAttr(std::string_view name, const T& value);

/// Reads `attr` as T; an error when the stored type cannot convert to T without loss.
template <class T>
StatusOr<T> AttrAs(const pb::OpDesc::Attr& attr);

#define PC_ATTR_TYPE_(T, E)                                   \
  template <>                                                 \
  constexpr pb::AttrType AttrTypeOf<T>() { return pb::E; }   \
  template <>                                                 \
  StatusOr<T> AttrAs<T>(const pb::OpDesc::Attr& attr);
PC_ATTR_TYPE_(int, INT)
PC_ATTR_TYPE_(int64_t, LONG)
PC_ATTR_TYPE_(float, FLOAT)
PC_ATTR_TYPE_(double, FLOAT64)
PC_ATTR_TYPE_(bool, BOOLEAN)
PC_ATTR_TYPE_(std::string, STRING)
PC_ATTR_TYPE_(std::vector<int>, INTS)
PC_ATTR_TYPE_(std::vector<int64_t>, LONGS)
PC_ATTR_TYPE_(std::vector<float>, FLOATS)
PC_ATTR_TYPE_(std::vector<double>, FLOAT64S)
PC_ATTR_TYPE_(std::vector<bool>, BOOLEANS)
PC_ATTR_TYPE_(std::vector<std::string>, STRINGS)
#undef PC_ATTR_TYPE_

/// True when a value stored as `have` may be read as `want` (same type or a lossless widening).
bool AttrTypeCompatible(pb::AttrType have, pb::AttrType want);

class AttrReader {
 public:
  AttrReader(const pb::OpDesc& op, const OpInfo* info) : op_(&op), info_(info) {}

  /// The op's attribute, else the proto default, else nullptr.
  const pb::OpDesc::Attr* Find(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name) != nullptr; }

  /// The value of `name` as T. Precondition: the op passed validation (the attribute exists, or has a
  /// default, with a compatible type); otherwise T{} is returned.
  template <class T>
  T Get(std::string_view name) const {
    const pb::OpDesc::Attr* a = Find(name);
    if (a == nullptr) return T{};
    auto v = AttrAs<T>(*a);
    return v.ok() ? std::move(v).value() : T{};
  }

  const pb::OpDesc& op() const { return *op_; }
  /// The op's registry entry (nullptr for unregistered ops).
  const OpInfo* info() const { return info_; }

 private:
  const pb::OpDesc* op_;
  const OpInfo* info_;
};

}  // namespace paddlec::ops
