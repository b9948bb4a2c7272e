// Tests of the PIR JSON translator on small hand-written programs (testdata/pir/): the layout Paddle
// 3.3 writes, the attribute widths of older versions, constants folded into attributes, and the
// diagnostics for what it cannot translate. Files written by the real PaddlePaddle are tested by the
// interop suite (tools/python/tests/interop).
#include <doctest/doctest.h>

#include <algorithm>

#include "paddlec/core/file.h"
#include "paddlec/ir/pir_json.h"
#include "paddlec/ir/serialize.h"
#include "pir_op_table.h"

namespace paddlec::ir {
namespace {

std::string Fixture(const std::string& name) { return std::string(PADDLEC_SOURCE_DIR) + "/testdata/pir/" + name; }

pb::ProgramDesc MustTranslate(const std::string& name) {
  auto bytes = ReadFile(Fixture(name));
  REQUIRE(bytes.ok());
  auto p = TranslatePirJson(*bytes, name);
  REQUIRE_MESSAGE(p.ok(), (p.ok() ? "" : p.error().Render()));
  return std::move(p).value();
}

const pb::OpDesc& OpOfType(const pb::ProgramDesc& p, const std::string& type) {
  for (const auto& op : p.blocks(0).ops())
    if (op.type() == type) return op;
  FAIL("no op of type " << type);
  return p.blocks(0).ops(0);
}

const pb::OpDesc::Attr* AttrOf(const pb::OpDesc& op, const std::string& name) {
  for (const auto& a : op.attrs())
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<std::string> Args(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& slots, const std::string& s) {
  for (const auto& v : slots)
    if (v.parameter() == s) return {v.arguments().begin(), v.arguments().end()};
  return {};
}

const pb::VarDesc* VarOf(const pb::ProgramDesc& p, const std::string& name) {
  for (const auto& v : p.blocks(0).vars())
    if (v.name() == name) return &v;
  return nullptr;
}

TEST_CASE("PIR JSON is recognised by its content, not by the .json extension") {
  CHECK(LooksLikePirJson(R"({"base_code":{"magic":"pir","version":4},"program":{}})"));
  CHECK(LooksLikePirJson("  {\n    \"base_code\": {}"));
  CHECK_FALSE(LooksLikePirJson(R"({"blocks": [{"idx": 0, "parent_idx": -1}]})"));  // our protobuf JSON
  CHECK_FALSE(LooksLikePirJson(R"({"compiled_format_version": 1})"));
}

TEST_CASE("A Paddle 3.3 program: parameters, feed and fetch ops, constants folded, names kept") {
  pb::ProgramDesc p = MustTranslate("mlp_v4.json");
  std::vector<std::string> types;
  for (const auto& op : p.blocks(0).ops()) types.push_back(op.type());
  // pd_op.full feeds scale's `scale` operand: folded into the attribute, no fill_constant.
  CHECK(types == std::vector<std::string>{"feed", "matmul_v2", "elementwise_add", "scale", "softmax", "fetch"});
  const pb::VarDesc* w = VarOf(p, "fc_0.w_0");
  REQUIRE(w != nullptr);
  CHECK(w->persistable());
  CHECK(w->is_parameter());
  CHECK(VarOf(p, "feed")->type().type() == pb::VarType::FEED_MINIBATCH);
  const pb::OpDesc& mm = OpOfType(p, "matmul_v2");
  CHECK(Args(mm.inputs(), "X") == std::vector<std::string>{"x"});
  CHECK(Args(mm.inputs(), "Y") == std::vector<std::string>{"fc_0.w_0"});
  REQUIRE(AttrOf(mm, "trans_x") != nullptr);  // transpose_x renamed
  CHECK(AttrOf(mm, "struct_name") == nullptr);
  const pb::OpDesc& scale = OpOfType(p, "scale");
  REQUIRE(AttrOf(scale, "scale") != nullptr);
  CHECK(AttrOf(scale, "scale")->type() == pb::FLOAT);
  CHECK(AttrOf(scale, "scale")->f() == 2.0f);
  CHECK(Args(scale.inputs(), "ScaleTensor").empty());
  // The fetched value is called what Paddle's predictor calls it.
  const pb::OpDesc& fetch = OpOfType(p, "fetch");
  CHECK(Args(fetch.inputs(), "X") == std::vector<std::string>{"fetch_name_0"});
  CHECK(Args(OpOfType(p, "softmax").outputs(), "Out") == std::vector<std::string>{"fetch_name_0"});
  CHECK(AttrOf(fetch, "col")->i() == 0);
  CHECK(VarOf(p, "fetch_name_0")->type().lod_tensor().tensor().dims_size() == 2);
}

// rnn's dropout_state__non_persistable is a builtin.parameter with persistable = 0: it has no record in
// the .pdiparams, so it must not be declared persistable (the params loader would expect one).
TEST_CASE("A builtin.parameter flagged non-persistable is not declared persistable") {
  auto bytes = ReadFile(Fixture("mlp_v4.json"));
  REQUIRE(bytes.ok());
  std::string text = *bytes;
  const std::string weight =
      R"("A":[0,1,1,"fc_0.b_0"],"DA":[],"O":{"%":1,"TT":{"#":"0.t_dtensor","D":[{"#":"0.t_f32"},[3],"NCHW",[],0]}},"OA":[1,0,1])";
  size_t at = text.find(weight);
  REQUIRE(at != std::string::npos);
  text.replace(at + weight.size() - 7, 7, "[0,1,0]");
  auto p = TranslatePirJson(text, "mlp_v4.json");
  REQUIRE_MESSAGE(p.ok(), (p.ok() ? "" : p.error().Render()));
  REQUIRE(VarOf(*p, "fc_0.b_0") != nullptr);
  CHECK_FALSE(VarOf(*p, "fc_0.b_0")->persistable());
  CHECK_FALSE(VarOf(*p, "fc_0.b_0")->is_parameter());  // Paddle's loader requires parameters persistable
  CHECK(VarOf(*p, "fc_0.w_0")->is_parameter());
  CHECK(VarOf(*p, "fc_0.w_0")->persistable());
}

TEST_CASE("Paddle 3.0's and 3.3's attribute widths translate to the same legacy attributes") {
  for (const char* file : {"pool_leaky_v1.json", "pool_leaky_v4.json"}) {
    CAPTURE(file);
    pb::ProgramDesc p = MustTranslate(file);
    const pb::OpDesc& pool = OpOfType(p, "pool2d");
    REQUIRE(AttrOf(pool, "strides") != nullptr);
    CHECK(AttrOf(pool, "strides")->type() == pb::INTS);
    CHECK(AttrOf(pool, "strides")->ints_size() == 2);
    CHECK(AttrOf(pool, "ksize")->type() == pb::INTS);  // from the full_int_array operand
    const pb::OpDesc& leaky = OpOfType(p, "leaky_relu");
    REQUIRE(AttrOf(leaky, "alpha") != nullptr);
    CHECK(AttrOf(leaky, "alpha")->type() == pb::FLOAT);
    CHECK(AttrOf(leaky, "alpha")->f() == 0.1f);
  }
}

int RoleOf(const pb::OpDesc& op) {
  const pb::OpDesc::Attr* a = AttrOf(op, "op_role");
  return a == nullptr ? -1 : a->i();
}

// Paddle 3.3's training program of an MLP with Adam (paddle_side.py train --format pir), as written.
TEST_CASE("A PIR training program gets the legacy op roles: forward, loss, backward, optimize") {
  pb::ProgramDesc p = MustTranslate("train_mlp_v4.json");
  const auto& ops = p.blocks(0).ops();
  int seed = -1;
  for (int i = 0; i < ops.size(); ++i)
    if (ops[i].type() == "fill_constant" && RoleOf(ops[i]) == 0x101) seed = i;
  REQUIRE(seed > 0);  // full_like(loss, 1): the gradient seed, Backward|Loss
  // The op before it that writes the loss is Forward|Loss; the rest of the forward ops Forward.
  CHECK(ops[seed - 1].type() == "reduce_mean");
  CHECK(RoleOf(ops[seed - 1]) == 0x100);
  CHECK(RoleOf(OpOfType(p, "matmul_v2")) == 0);
  CHECK(RoleOf(OpOfType(p, "softmax_with_cross_entropy_grad")) == 1);
  int adams = 0;
  for (const auto& op : ops) {
    if (op.type() != "adam") continue;
    ++adams;
    CHECK(RoleOf(op) == 2);
    const pb::OpDesc::Attr* role_var = AttrOf(op, "op_role_var");
    REQUIRE(role_var != nullptr);
    REQUIRE(role_var->strings_size() == 2);
    CHECK(role_var->strings(0) == Args(op.inputs(), "Param").front());
    CHECK(role_var->strings(1) == Args(op.inputs(), "Grad").front());
    // In place, as Paddle's adam_ is: the outputs are the input variables.
    CHECK(Args(op.outputs(), "Moment1Out") == Args(op.inputs(), "Moment1"));
  }
  CHECK(adams == 4);
  // Optimizer state is a persistable pd_op.data: a variable, not a feed; the learning rate is 0-D.
  const pb::VarDesc* lr = VarOf(p, "learning_rate_0");
  REQUIRE(lr != nullptr);
  CHECK(lr->persistable());
  CHECK(lr->type().lod_tensor().tensor().dims_size() == 0);
  std::vector<std::string> fed;
  for (const auto& op : ops)
    if (op.type() == "feed") fed.push_back(Args(op.outputs(), "Out").front());
  CHECK(fed == std::vector<std::string>{"x", "y"});
}

TEST_CASE("Every op without a translation is reported at once, with its block and position") {
  auto bytes = ReadFile(Fixture("unsupported_ops.json"));
  REQUIRE(bytes.ok());
  auto p = TranslatePirJson(*bytes, "unsupported_ops.json");
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().Render() ==
        "error: unsupported_ops.json: block 0, op 1 (pd_op.frobnicate): no translation for PIR op "
        "'pd_op.frobnicate'\n"
        "note: `paddlec dump-opprotos --format=paddle-md` lists the PIR ops paddlec reads\n"
        "error: unsupported_ops.json: block 0, op 3 (pd_op.tesselate): no translation for PIR op "
        "'pd_op.tesselate'\n"
        "note: `paddlec dump-opprotos --format=paddle-md` lists the PIR ops paddlec reads\n");
}

TEST_CASE("Not a PIR program, or a PIR version paddlec does not know") {
  auto magic = TranslatePirJson(R"({"base_code":{"magic":"mlir","version":4},"program":{"regions":[]}})", "m.json");
  REQUIRE_FALSE(magic.ok());
  CHECK(magic.error().message() == "not a PIR program: base_code.magic is 'mlir', expected 'pir'");
  auto version = TranslatePirJson(
      R"({"base_code":{"magic":"pir","version":9},"program":{"regions":[{"#":"region_0","blocks":[]}]}})", "v.json");
  REQUIRE_FALSE(version.ok());
  CHECK(version.error().message() == "PIR version 9 is not supported");
  auto broken = TranslatePirJson(R"({"base_code": {"magic": "pir",)", "b.json");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message().starts_with("invalid PIR JSON: syntax error"));
}

TEST_CASE("LoadModule translates PIR JSON; our own JSON still loads as protobuf JSON") {
  auto m = LoadModule(Fixture("mlp_v4.json"));
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().Render()));
  CHECK((*m)->main().global_block().num_ops() == 6);
  auto own = ParseModule(R"({"blocks": [{"idx": 0, "parent_idx": -1}]})", Format::kJson, "own.json");
  REQUIRE(own.ok());
  CHECK((*own)->main().global_block().num_ops() == 0);
}

TEST_CASE("Every row of the translation table parses, and every pd_op is mapped once") {
  std::vector<std::string> names;
  for (const auto& row : pir::OpTable()) {
    CAPTURE(row.pir);
    auto rule = pir::ParseRow(row);
    CHECK_MESSAGE(rule.ok(), (rule.ok() ? "" : rule.error().message()));
    names.emplace_back(row.pir);
  }
  std::sort(names.begin(), names.end());
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  auto bad = pir::ParseRow({"pd_op.x", "x", "X Y"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message() == "PIR translation table row pd_op.x (x): the signature has no '->'");
}

}  // namespace
}  // namespace paddlec::ir
