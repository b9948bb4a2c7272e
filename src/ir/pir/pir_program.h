// A PIR JSON program as read from the file, before translation: regions, blocks, ops, values (by
// their integer ids) and typed attributes. The reader (pir_reader.cc) undoes the format's
// compressions (dialect codes, the positional `p` parameter op) and its version differences, so
// the translator sees one shape for every PIR version.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paddlec/core/dtype.h"
#include "paddlec/core/error.h"

namespace paddlec::ir::pir {

/// A value's type: a dense tensor, a vector of types (builtin.combine's result), the null type of
/// an absent optional result, or a type the translator does not know (kept by its tag).
struct Type {
  enum class Kind { kNull, kDense, kVec, kOther };
  Kind kind = Kind::kNull;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;   // kDense; -1 = unknown, [] = 0-D
  std::vector<Type> elements;  // kVec
  std::string tag;             // kOther
};

/// An attribute value. Numbers keep their PIR width (i32, i64, f32, f64), so the translator can tell
/// an INT from a LONG, and a FLOAT from a FLOAT64.
struct Attr {
  enum class Kind { kBool, kI32, kI64, kF32, kF64, kStr, kArray, kIntArray, kDType, kPlace, kOther };
  Kind kind = Kind::kOther;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;              // kStr; kDType: the dtype's name; kOther: the tag
  std::vector<Attr> array;    // kArray
  std::vector<int64_t> ints;  // kIntArray
};

struct NamedAttr {
  std::string name;
  Attr value;
};

struct Value {
  int64_t id = 0;  // > 0 op results, < 0 block arguments, 0 = the null value
  Type type;
};

struct Region;

struct Op {
  std::string name;  // "pd_op.conv2d", "builtin.parameter", "cf.yield", ...
  std::vector<int64_t> operands;
  std::vector<Value> results;
  std::vector<NamedAttr> attrs;
  /// Per-result attributes ("OA"): stop_gradient, persistable (and a parameter's trainable), one
  /// bool per result. Absent when the program was saved with trainable=false.
  std::vector<NamedAttr> result_attrs;
  std::vector<Region> regions;
  int block = 0;  // the PIR block number (block_N) and the op's position in it, for diagnostics
  int index = 0;

  const Attr* FindAttr(std::string_view n) const;
  /// The bool of result attribute `n` for result `r`; `fallback` when absent.
  bool ResultFlag(std::string_view n, int r, bool fallback) const;
};

struct Block {
  int id = 0;
  std::vector<Value> args;
  std::vector<Op> ops;
};

struct Region {
  std::vector<Block> blocks;
};

struct Program {
  int version = 0;
  bool trainable = true;
  Region top;
};

/// Parses the JSON text; errors name the file and, for a malformed op, its block and position.
StatusOr<Program> ReadPirProgram(std::string_view bytes, const std::string& file);

/// "float32", "int64", ... -> DType (PIR's dtype attribute spelling); kUndefined when unknown.
DType DTypeFromPirName(std::string_view name);

}  // namespace paddlec::ir::pir
