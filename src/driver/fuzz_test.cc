// Fuzz-style robustness test of the parse + compile path: random byte strings and mutated
// programs (text, binary, JSON) must never crash, hang or abort; every failure must be a rendered
// "error: ..." diagnostic. Deterministic (fixed seeds) so a failure reproduces.
#include <doctest/doctest.h>

#include <random>

#include "paddlec/core/file.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/passes/signature.h"

namespace paddlec {
namespace {

struct Outcome {
  int ok = 0, failed = 0;
};

/// Parses and compiles `bytes`; returns false (and reports) if a failure was not a proper error.
void CompileBytes(const std::string& bytes, ir::Format format, Outcome& outcome) {
  auto module = ir::ParseModule(bytes, format, "fuzz");
  Status st = module.ok() ? Status() : module.status();
  if (st.ok()) {
    passes::PassManager pm;
    REQUIRE(pm.AddPipeline("validate,infer-shape").ok());
    passes::PassContext ctx{ops::GlobalOpRegistry()};
    st = pm.Run(**module, ctx);
    if (st.ok()) passes::ComputeSignature(**module);
  }
  if (st.ok()) {
    ++outcome.ok;
    return;
  }
  ++outcome.failed;
  std::string text = st.error().Render();
  REQUIRE_MESSAGE(text.starts_with("error: "), "not an error line: " << text);
  REQUIRE_MESSAGE(st.error().message().size() > 0, "empty error message");
}

std::string Mutate(std::string s, std::mt19937_64& rng, bool text) {
  static const char* kTokens[] = {"-1", "0", "999999999999", "-7", "\"\"", "{", "}", "dims: 1000000000", ":",
                                  "type: \"mul\"", "ints: -5", "FLOAT", "STRINGS", "parent_idx: 5", "idx: 2",
                                  "blocks { idx: 1 parent_idx: 0 }", "attrs { name: \"axis\" type: INT i: 99 }"};
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    size_t pos = rng() % s.size();
    switch (rng() % (text ? 6 : 4)) {
      case 0: s[pos] = static_cast<char>(rng()); break;                   // flip a byte
      case 1: s.erase(pos, 1 + rng() % 16); break;                        // delete a run
      case 2: s.insert(pos, 1 + rng() % 4, static_cast<char>(rng())); break;  // insert bytes
      case 3: s.resize(pos); break;                                        // truncate
      case 4: s.insert(pos, std::string(" ") + kTokens[rng() % std::size(kTokens)] + " "); break;
      default: {  // replace a number with an extreme one
        size_t d = s.find_first_of("0123456789", pos);
        if (d != std::string::npos) s.replace(d, 1, rng() % 2 ? "-2" : "4294967297");
      }
    }
  }
  return s;
}

TEST_CASE("10,000+ random and mutated inputs never crash the compile path") {
  std::vector<std::string> seeds;
  for (const char* f : {"configs/mlp.pbtxt", "configs/lenet.pbtxt"}) {
    auto t = ReadFile(std::string(PADDLEC_SOURCE_DIR) + "/" + f);
    REQUIRE(t.ok());
    seeds.push_back(*t);
  }
  std::vector<std::string> binaries, jsons;
  for (const auto& s : seeds) {
    auto m = ir::ParseModule(s, ir::Format::kText, "seed");
    REQUIRE(m.ok());
    binaries.push_back(*ir::Serialize((*m)->compiled().main_program(), ir::Format::kBinary));
    jsons.push_back(*ir::Serialize((*m)->compiled().main_program(), ir::Format::kJson));
  }
  std::mt19937_64 rng(20261122);
  Outcome outcome;
  int cases = 0;
  // Pure noise in every format.
  for (int i = 0; i < 3000; ++i, ++cases) {
    std::string noise(rng() % 512, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    CompileBytes(noise, static_cast<ir::Format>(i % 3), outcome);
  }
  // Mutated valid programs.
  for (int i = 0; i < 4000; ++i, ++cases)
    CompileBytes(Mutate(seeds[i % seeds.size()], rng, true), ir::Format::kText, outcome);
  for (int i = 0; i < 2500; ++i, ++cases)
    CompileBytes(Mutate(binaries[i % binaries.size()], rng, false), ir::Format::kBinary, outcome);
  for (int i = 0; i < 1000; ++i, ++cases)
    CompileBytes(Mutate(jsons[i % jsons.size()], rng, false), ir::Format::kJson, outcome);
  MESSAGE(cases << " inputs: " << outcome.ok << " compiled, " << outcome.failed << " rejected with an error");
  CHECK(cases >= 10000);
  CHECK(outcome.failed > 0);
}

}  // namespace
}  // namespace paddlec
