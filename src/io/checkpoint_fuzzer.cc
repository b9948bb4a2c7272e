// libFuzzer target: the checkpoint reader (checkpoint.json of `paddlec train --save`). What it
// accepts must serialize and read back to the same checkpoint. scripts/fuzz.sh builds and runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "paddlec/io/checkpoint.h"
#include "paddlec/ir/serialize.h"
#include "testing/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace paddlec;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto ck = io::ParseCheckpoint(bytes, "fuzz/checkpoint.json");
  if (!ck.ok()) {
    fuzz::CheckDiagnostic(ck.status());
    return 0;
  }
  auto json = ir::Serialize(*ck, ir::Format::kJson);
  fuzz::Require(json.ok(), "an accepted checkpoint serializes");
  auto again = io::ParseCheckpoint(*json, "again/checkpoint.json");
  fuzz::Require(again.ok() && again->SerializeAsString() == ck->SerializeAsString(), "a checkpoint round-trips");
  return 0;
}
