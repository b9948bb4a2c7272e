// libFuzzer target: the .pdiparams reader (PaddlePaddle's save_combine tensor stream), with and
// without a program whose declarations the records are checked against. scripts/fuzz.sh builds and
// runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "paddlec/io/params.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/runtime/device_context.h"
#include "paddlec/runtime/scope.h"
#include "testing/fuzz_check.h"

namespace {

constexpr std::string_view kProgram = R"(blocks { idx: 0 parent_idx: -1
  vars { name: "p0" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2 dims: 3 } } } persistable: true }
  vars { name: "p1" type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 dims: -1 } } } persistable: true }
})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace paddlec;
  static runtime::CpuContext* device = new runtime::CpuContext(1);
  static ir::Module* module = ir::ParseModule(kProgram, ir::Format::kText, "fuzz.pbtxt").value().release();
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // One record, two checked against declarations, and many: each stops at its own first problem.
  const std::vector<std::vector<std::string>> name_sets = {
      {"p0"}, {"p0", "p1"}, {"a", "b", "c", "d", "e", "f", "g", "h"}};
  for (const auto& names : name_sets) {
    runtime::Scope scope;
    const ir::Block* block = names.size() == 2 ? &module->main().global_block() : nullptr;
    fuzz::CheckDiagnostic(io::ParseParams(bytes, "fuzz.pdiparams", names, scope, *device, block));
  }
  return 0;
}
