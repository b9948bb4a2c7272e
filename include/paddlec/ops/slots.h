// Slot names declared once per op as constants: the name is what OpDescs use, the index is the
// slot's position in the op's proto, which is how kernels reach their tensors without string lookups.
//
//   constexpr InSlot kX{0, "X"};
//   constexpr OutSlot kOut{0, "Out"};
#pragma once

#include <string_view>

namespace paddlec::ops {

struct InSlot {
  int index;
  std::string_view name;
};

struct OutSlot {
  int index;
  std::string_view name;
};

}  // namespace paddlec::ops
