// libFuzzer target: a program in every serialized form (text, binary, our JSON and, by content, PIR
// JSON) through parsing, validation, shape inference and the signature, as `paddlec compile` runs
// them. scripts/fuzz.sh builds and runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/passes/signature.h"
#include "testing/fuzz_check.h"

namespace paddlec {
namespace {

void CompileAs(std::string_view bytes, ir::Format format) {
  auto module = ir::ParseModule(bytes, format, "fuzz");
  if (!module.ok()) return fuzz::CheckDiagnostic(module.status());
  passes::PassManager pm;
  fuzz::Require(pm.AddPipeline("validate,infer-shape").ok(), "the pipeline parses");
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**module, ctx);
  fuzz::CheckDiagnostic(st);
  if (st.ok()) passes::ComputeSignature(**module);
}

}  // namespace
}  // namespace paddlec

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using paddlec::ir::Format;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // Each parser rejects the other formats in a few bytes, so every input tries all three.
  for (Format f : {Format::kText, Format::kBinary, Format::kJson}) paddlec::CompileAs(bytes, f);
  return 0;
}
