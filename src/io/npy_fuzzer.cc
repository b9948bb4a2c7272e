// libFuzzer target: the .npy reader (--feed files, paddlec.io). What it accepts must write back to
// the same bytes' meaning: parse -> serialize -> parse -> serialize is a fixed point.
// scripts/fuzz.sh builds and runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "paddlec/io/npy.h"
#include "paddlec/runtime/allocator.h"
#include "testing/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace paddlec;
  static auto alloc = runtime::CpuCachingAllocator::Create(size_t{64} << 20);
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto t = io::ParseNpy(bytes, *alloc, "fuzz.npy");
  if (!t.ok()) {
    fuzz::CheckDiagnostic(t.status());
    return 0;
  }
  auto once = io::SerializeNpy(*t);
  fuzz::Require(once.ok(), "an accepted array serializes");
  auto again = io::ParseNpy(*once, *alloc, "again.npy");
  fuzz::Require(again.ok(), "what SerializeNpy writes parses");
  auto twice = io::SerializeNpy(*again);
  fuzz::Require(twice.ok() && *twice == *once, "serialize(parse(serialize(x))) == serialize(x)");
  return 0;
}
