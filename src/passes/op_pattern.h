// Reading OpDescs while matching patterns in rewriting passes: single-variable slots and typed
// attributes, with "absent" as a value rather than an error.
#pragma once

#include <string>
#include <string_view>

#include "paddlec/ir/program.h"

namespace paddlec::passes::pattern {

namespace pb = ::paddle::framework::proto;

/// The one variable of slot `slot`, or null when the slot is absent or holds another count.
inline const std::string* Single(const pb::OpDesc& op, bool input, std::string_view slot) {
  for (const auto& s : input ? op.inputs() : op.outputs())
    if (s.parameter() == slot && s.arguments_size() == 1) return &s.arguments(0);
  return nullptr;
}

inline const pb::OpDesc::Attr* FindAttr(const pb::OpDesc& op, std::string_view name) {
  for (const auto& a : op.attrs())
    if (a.name() == name) return &a;
  return nullptr;
}

inline bool BoolAttr(const pb::OpDesc& op, std::string_view name) {
  const auto* a = FindAttr(op, name);
  return a != nullptr && a->type() == pb::BOOLEAN && a->b();
}

inline int64_t IntAttr(const pb::OpDesc& op, std::string_view name, int64_t fallback) {
  const auto* a = FindAttr(op, name);
  if (a == nullptr) return fallback;
  return a->type() == pb::LONG ? a->l() : a->i();
}

}  // namespace paddlec::passes::pattern
