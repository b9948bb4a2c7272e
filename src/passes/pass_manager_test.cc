// Tests of the pass manager: pipeline parsing, options, debugging switches.
#include <doctest/doctest.h>

#include <sstream>

#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"

namespace paddlec::passes {
namespace {

constexpr char kProgram[] = R"pb(
blocks {
  idx: 0
  parent_idx: -1
  vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 4 } } } }
  ops { type: "softmax" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "y" } }
}
)pb";

std::unique_ptr<ir::Module> Parse(const char* text = kProgram) {
  auto m = ir::ParseModule(text, ir::Format::kText, "t.pbtxt");
  REQUIRE(m.ok());
  return std::move(m).value();
}

TEST_CASE("Pipeline specs: names, options and errors") {
  auto p = ParsePipelineSpec("validate, infer-shape ,optimizer{type=adam,lr=0.001},x");
  REQUIRE(p.ok());
  REQUIRE(p->size() == 4);
  CHECK((*p)[1].first == "infer-shape");
  CHECK((*p)[2].first == "optimizer");
  CHECK((*p)[2].second.at("type") == "adam");
  CHECK((*p)[2].second.at("lr") == "0.001");
  CHECK((*p)[3].first == "x");
  CHECK_FALSE(ParsePipelineSpec("a{b=1").ok());
  CHECK_FALSE(ParsePipelineSpec("a{b}").ok());
  CHECK_FALSE(ParsePipelineSpec("a,,b").ok());
  CHECK_FALSE(ParsePipelineSpec("a{b=1}c").ok());
}

TEST_CASE("Unknown passes and options are errors with hints") {
  PassManager pm;
  Status st = pm.AddPipeline("validate,infer-shapes");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "unknown pass 'infer-shapes'");
  CHECK(st.error().notes().at(0).starts_with("known passes: validate, infer-shape"));
  Status opt = pm.AddPipeline("validate{strict=1}");
  REQUIRE_FALSE(opt.ok());
  CHECK(opt.error().message() == "pass 'validate' has no option 'strict'");
}

TEST_CASE("Typed pass options") {
  std::vector<PassOption> specs = {{"lr", PassOption::Type::kFloat, "0.01", "learning rate"},
                                   {"steps", PassOption::Type::kInt, "3", ""},
                                   {"nesterov", PassOption::Type::kBool, "false", ""},
                                   {"type", PassOption::Type::kString, "sgd", ""}};
  auto o = PassOptions::Parse("opt", specs, {{"lr", "0.5"}, {"nesterov", "true"}});
  REQUIRE(o.ok());
  CHECK(o->GetFloat("lr") == 0.5);
  CHECK(o->GetInt("steps") == 3);
  CHECK(o->GetBool("nesterov"));
  CHECK(o->GetString("type") == "sgd");
  CHECK(o->IsSet("lr"));
  CHECK_FALSE(o->IsSet("steps"));
  CHECK(o->ToString() == "lr=0.5,nesterov=true");
  auto bad = PassOptions::Parse("opt", specs, {{"steps", "2.5"}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message() == "option 'steps' of pass 'opt' expects a int, got '2.5'");
}

TEST_CASE("Passes run in order, are recorded, and --stop-after bisects") {
  auto m = Parse();
  PassManager pm;
  REQUIRE(pm.AddPipeline("validate,infer-shape").ok());
  PassContext ctx{ops::GlobalOpRegistry()};
  REQUIRE(pm.Run(*m, ctx).ok());
  CHECK(m->compiled().passes_applied_size() == 2);
  CHECK(m->compiled().passes_applied(1) == "infer-shape");
  CHECK(pm.timings().size() == 2);
  CHECK(*ir::VarDims(*m->main().global_block().FindVar("y")) == Dims{-1, 4});

  auto m2 = Parse();
  PassManager stop({.stop_after = 1});
  REQUIRE(stop.AddPipeline("validate,infer-shape").ok());
  REQUIRE(stop.Run(*m2, ctx).ok());
  CHECK(m2->compiled().passes_applied_size() == 1);
  CHECK(ir::TensorDescOf(*m2->main().global_block().FindVar("y")) != nullptr);
  CHECK(ir::TensorDescOf(*m2->main().global_block().FindVar("y"))->dims_size() == 0);  // not inferred
}

TEST_CASE("--print-ir-before/after print the listing around the named pass") {
  auto m = Parse();
  std::ostringstream ir;
  PassManager pm({.print_ir_after = {"validate"}, .print_ir_before = {"validate"}, .ir_stream = &ir});
  REQUIRE(pm.AddPipeline("validate,infer-shape,infer-shape").ok());
  PassContext ctx{ops::GlobalOpRegistry()};
  REQUIRE(pm.Run(*m, ctx).ok());
  CHECK(ir.str() ==
        "# ----- IR before validate -----\n"
        "main block 0: 1 var, 1 op\n"
        "  var x: float32[-1, 4]\n"
        "  op 0: softmax(X=x) -> (Out=y)\n"
        "startup block 0: 0 vars, 0 ops\n"
        "# ----- IR after validate -----\n"
        "main block 0: 2 vars, 1 op\n"
        "  var x: float32[-1, 4]\n"
        "  var y: float32[]\n"
        "  op 0: softmax(X=x) -> (Out=y) {axis=-1, data_format=\"AnyLayout\", is_test=false}\n"  // the defaults validate filled in
        "startup block 0: 0 vars, 0 ops\n");

  // "all" prints after every pass and says which ones changed nothing.
  auto m2 = Parse();
  std::ostringstream all;
  PassManager pm2({.print_ir_after = {"all"}, .ir_stream = &all});
  REQUIRE(pm2.AddPipeline("validate,infer-shape,infer-shape").ok());
  REQUIRE(pm2.Run(*m2, ctx).ok());
  std::string s = all.str();
  CHECK(s.find("# ----- IR after validate -----\n") != std::string::npos);
  CHECK(s.find("# ----- IR after infer-shape -----\n") != std::string::npos);
  CHECK(s.find("  var y: float32[-1, 4]\n") != std::string::npos);
  CHECK(s.find("# ----- IR after infer-shape (unchanged) -----\n") != std::string::npos);  // the second one
  CHECK(s.find("IR before") == std::string::npos);
  CHECK(pm2.timings().at(1).changed);
  CHECK_FALSE(pm2.timings().at(2).changed);
}

TEST_CASE("VerifyModule reports problems without changing the module") {
  auto m = Parse(R"pb(
blocks {
  idx: 0
  parent_idx: -1
  ops { type: "softmax" inputs { parameter: "X" arguments: "nope" } outputs { parameter: "Out" arguments: "y" } }
}
)pb");
  Status st = VerifyModule(*m, ops::GlobalOpRegistry());
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message() == "input 'X' names undefined variable 'nope'");
  CHECK(st.error().more().size() == 1);  // 'y' is undeclared too: verify does not declare it
  CHECK(m->main().global_block().desc().ops(0).attrs_size() == 0);
}

}  // namespace
}  // namespace paddlec::passes
