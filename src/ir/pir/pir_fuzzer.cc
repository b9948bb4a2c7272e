// libFuzzer target: Paddle 3's PIR JSON programs through the translator (src/ir/pir), then
// validation and shape inference of what it produced. scripts/fuzz.sh builds and runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "paddlec/ir/pir_json.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace paddlec;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto desc = ir::TranslatePirJson(bytes, "fuzz.json");
  if (!desc.ok()) {
    fuzz::CheckDiagnostic(desc.status());
    return 0;
  }
  auto module = ir::ParseModule(bytes, ir::Format::kJson, "fuzz.json");
  fuzz::Require(module.ok() || !ir::LooksLikePirJson(bytes), "a translated PIR program loads as a module");
  if (!module.ok()) {
    fuzz::CheckDiagnostic(module.status());
    return 0;
  }
  passes::PassManager pm;
  fuzz::Require(pm.AddPipeline("validate,infer-shape").ok(), "the pipeline parses");
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  fuzz::CheckDiagnostic(pm.Run(**module, ctx));
  return 0;
}
