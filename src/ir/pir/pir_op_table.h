// The pd_op -> legacy op translation table: one row of data per PIR op (pir_op_table.cc), and the
// parsed form the translator applies (pir_translate.cc).
//
// A row is {pir name, legacy type, signature, attribute rules}:
//
//   signature  "operand, operand, ... -> result, result, ..." in PIR's operand and result order.
//     Operands:  Slot       the value is bound to input slot Slot
//                Slot[]     a builtin.combine vector expands into the duplicable slot Slot
//                @attr:form the value must be a constant (full / full_int_array / a combine of
//                           constants) and becomes legacy attribute `attr` of that form
//                @attr:form|Slot|List[]   a constant becomes the attribute; otherwise a tensor is
//                           bound to Slot and a vector to List (either may be left out)
//                -          dropped (a PIR-only operand)
//     Results:   Slot, Slot[] (a vector the program splits with builtin.split), - (dropped), or
//                Slot=In: written in place into the variable of input slot In (PIR's `op_` ops).
//   attrs      space-separated rules for PIR attributes and extra legacy attributes:
//                a>b  rename a to b      a>b:form  rename and convert      a:form  convert
//                a>-  drop a             b=literal:form  set legacy attribute b
//                b=$dtype(N)  the VarType number of operand N's element type
//              Attributes without a rule keep their name and their PIR width; `struct_name` and
//              `place` (layer paths, device hints) are dropped everywhere.
//   forms      bool int long float double str ints longs floats doubles strs vartype
//              (vartype: a dtype name such as "float32" -> its VarType.Type number, as INT)
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "paddlec/core/error.h"

namespace paddlec::ir::pir {

struct TableRow {
  std::string_view pir;
  std::string_view legacy;
  std::string_view signature;
  std::string_view attrs = "";
};

/// Every row, in table order.
std::span<const TableRow> OpTable();
/// PaddlePaddle's legacy ops that no row produces (feed, mul, fill_zeros_like, ...), separated by
/// single spaces.
std::string_view LegacyOnlyOps();

enum class AttrForm {
  kNatural,
  kBool,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kStr,
  kInts,
  kLongs,
  kFloats,
  kDoubles,
  kStrs,
  kVarType
};

struct OperandRule {
  bool ignore = false;
  std::string slot;  // a tensor goes here ("" = none)
  bool slot_is_list = false;
  std::string list_slot;  // a vector goes here when `slot` takes one tensor ("" = none)
  std::string attr;       // a constant folds into this attribute ("" = none)
  AttrForm form = AttrForm::kNatural;
};

struct ResultRule {
  bool drop = false;
  std::string slot;
  bool list = false;
  std::string inplace_of;  // an input slot whose variable this result overwrites
};

struct AttrRule {
  std::string pir;
  std::string legacy;  // "" = drop
  AttrForm form = AttrForm::kNatural;
};

struct FixedAttr {
  std::string legacy;
  enum class Source { kLiteral, kOperandDType } source = Source::kLiteral;
  std::string literal;
  int operand = 0;
  AttrForm form = AttrForm::kNatural;
};

struct OpRule {
  std::string pir, legacy;
  std::vector<OperandRule> operands;
  std::vector<ResultRule> results;
  std::vector<AttrRule> attrs;
  std::vector<FixedAttr> fixed;

  const AttrRule* FindAttrRule(std::string_view pir_attr) const;
};

/// Parses one row; an error (kInternal, naming the row) for a malformed signature or rule.
StatusOr<OpRule> ParseRow(const TableRow& row);
std::string_view AttrFormName(AttrForm f);

}  // namespace paddlec::ir::pir
