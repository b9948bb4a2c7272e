// Paddle 3's PIR JSON programs (`model.json`, header "base_code": {"magic": "pir"}): recognised by
// content and translated into a ProgramDesc, so every pass, the runtime and Python see one IR.
//
// The pd_op -> legacy op mapping is data (src/ir/pir/pir_op_table.cc); the translation engine
// (src/ir/pir/pir_translate.cc) adds feed/fetch ops for the program's data/fetch ops, folds the
// constants PIR passes as operands (full, full_int_array) into the legacy attributes, and names
// every value. Facts about the format: docs/pir_json.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "paddlec/core/error.h"
#include "paddlec/ir/program.h"

namespace paddlec::ir {

/// True when `bytes` is a PIR JSON program: a JSON object whose first key is "base_code". Our own
/// protobuf JSON never starts so; the magic and version are checked by TranslatePirJson.
bool LooksLikePirJson(std::string_view bytes);

/// The PIR versions this translator knows (what Paddle 3.0 to 3.3 write).
inline constexpr int kMinPirVersion = 1;
inline constexpr int kMaxPirVersion = 4;

/// Translates a PIR JSON program into a ProgramDesc with one global block. Every op without a
/// translation is reported, all at once, with its PIR block, position and name.
StatusOr<pb::ProgramDesc> TranslatePirJson(std::string_view bytes, const std::string& file);

/// One row of the translation table, for documentation (`paddlec dump-opprotos --format=md`).
struct PirOpMapping {
  std::string pir_name;     // "pd_op.matmul"
  std::string legacy_type;  // "matmul_v2"
};
/// Every pd_op the translator maps, sorted by PIR name; ops handled by the engine itself (data,
/// fetch, full, full_int_array, builtin.*) included.
std::vector<PirOpMapping> PirOpMappings();

}  // namespace paddlec::ir
