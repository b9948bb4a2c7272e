// Tests of the IR layer: program views, the three formats, PaddlePaddle wire compatibility and
// source positions.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "paddlec/core/file.h"
#include "paddlec/driver/driver.h"
#include "paddlec/ir/printer.h"
#include "paddlec/ir/program.h"
#include "paddlec/ir/serialize.h"

namespace paddlec::ir {
namespace {

std::string Repo(const std::string& rel) { return std::string(PADDLEC_SOURCE_DIR) + "/" + rel; }

std::unique_ptr<Module> MustParse(std::string_view text, Format f = Format::kText) {
  auto m = ParseModule(text, f, "test.pbtxt");
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().Render()));
  return std::move(m).value();
}

constexpr char kNested[] = R"pb(
blocks {
  idx: 0
  parent_idx: -1
  vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: -1 dims: 4 } } } }
  ops { type: "relu" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "y" } }
  ops { type: "relu" inputs { parameter: "X" arguments: "y" } outputs { parameter: "Out" arguments: "z" } }
}
blocks {
  idx: 1
  parent_idx: 0
  vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 dims: 2 } } } }
  vars { name: "w" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 3 } } } }
}
blocks {
  idx: 2
  parent_idx: 1
}
)pb";

TEST_CASE("Variable lookup walks parent blocks, innermost first") {
  auto m = MustParse(kNested);
  Program& p = m->main();
  REQUIRE(p.num_blocks() == 3);
  CHECK(p.block(2).FindLocalVar("w") == nullptr);
  REQUIRE(p.block(2).FindVar("w") != nullptr);
  CHECK(p.block(2).FindVarBlock("w")->idx() == 1);
  CHECK(VarDType(*p.block(2).FindVar("x")) == DType::kInt64);  // block 1 shadows block 0
  CHECK(VarDType(*p.block(0).FindVar("x")) == DType::kFloat32);
  CHECK(p.block(0).FindVar("w") == nullptr);
  CHECK(*VarDims(*p.block(0).FindVar("x")) == Dims{-1, 4});
}

TEST_CASE("Def-use queries") {
  auto m = MustParse(kNested);
  DefUse du(m->main().block(0));
  CHECK(std::vector<int>(du.Readers("y").begin(), du.Readers("y").end()) == std::vector<int>{1});
  CHECK(std::vector<int>(du.Writers("y").begin(), du.Writers("y").end()) == std::vector<int>{0});
  CHECK(du.Readers("z").empty());
  CHECK(du.Writers("x").empty());
}

TEST_CASE("Block edits: insert, remove and implicit declarations") {
  auto m = MustParse(kNested);
  Block& b = m->main().block(0);
  b.InsertOp(0)->set_type("fill_constant");
  CHECK(b.num_ops() == 3);
  CHECK(b.op(0).type() == "fill_constant");
  CHECK(b.op(1).type() == "relu");
  CHECK_FALSE(m->main().positions_valid());  // positions recorded at parse time no longer hold
  b.RemoveOp(0);
  CHECK(b.op(0).Input("X")[0] == "x");
  pb::VarDesc* v = b.AddVar("fresh");
  CHECK(b.FindLocalVar("fresh") == v);
  CHECK(b.AddVar("fresh") == v);
}

TEST_CASE("Source positions of ops, attributes and variables") {
  auto m = MustParse(kNested);
  Op op = m->main().block(0).op(1);
  SourceLocation loc = op.Location();
  CHECK(loc.file == "test.pbtxt");
  CHECK(loc.line == 7);
  CHECK(loc.column == 3);
  CHECK(loc.block == 0);
  CHECK(loc.op == 1);
  CHECK(loc.op_type == "relu");
  CHECK(m->main().source_map().Var(1, 1).line == 13);
}

TEST_CASE("Structural checks make parent chains safe") {
  auto self_parent = ParseModule("blocks { idx: 0 parent_idx: -1 } blocks { idx: 1 parent_idx: 1 }",
                                 Format::kText, "p.pbtxt");
  REQUIRE_FALSE(self_parent.ok());
  CHECK(self_parent.error().message() == "block 1 has parent_idx 1; a parent must be an earlier block (0..0)");
  auto wrong_idx = ParseModule("blocks { idx: 3 parent_idx: -1 }", Format::kText, "p.pbtxt");
  REQUIRE_FALSE(wrong_idx.ok());
  CHECK(wrong_idx.error().message() == "block at position 0 has idx 3");
  auto empty = ParseModule("", Format::kText, "p.pbtxt");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message() == "the file is empty");
}

/// A ProgramDesc whose block i > 0 nests in block parents[i - 1]; `declares` lists (block, var) pairs.
pb::ProgramDesc Tree(const std::vector<int>& parents, const std::vector<std::pair<int, std::string>>& declares = {}) {
  pb::ProgramDesc desc;
  for (int i = 0; i <= static_cast<int>(parents.size()); ++i) {
    pb::BlockDesc* b = desc.add_blocks();
    b->set_idx(i);
    b->set_parent_idx(i == 0 ? -1 : parents[i - 1]);
  }
  for (const auto& [block, name] : declares) desc.mutable_blocks(block)->add_vars()->set_name(name);
  return desc;
}

std::vector<int> Chain(int blocks) {
  std::vector<int> parents;
  for (int i = 1; i < blocks; ++i) parents.push_back(i - 1);
  return parents;
}

TEST_CASE("Blocks nest at most kMaxBlockDepth deep; deeper programs are rejected up front") {
  pb::ProgramDesc deepest = Tree(Chain(kMaxBlockDepth + 1), {{0, "x"}});
  auto ok = Program::Create(&deepest);
  REQUIRE(ok.ok());
  CHECK((*ok)->depth(kMaxBlockDepth) == kMaxBlockDepth);
  CHECK((*ok)->block(kMaxBlockDepth).FindVarBlock("x")->idx() == 0);
  pb::ProgramDesc deeper = Tree(Chain(kMaxBlockDepth + 2));
  auto p = Program::Create(&deeper);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().message() == "block 1001 is nested 1001 blocks deep; paddlec accepts at most 1000");
  CHECK(p.error().location().block == 1001);
}

TEST_CASE("Lookups through enclosing blocks follow the block tree and its edits") {
  // 0 -> 1 -> 3 and 0 -> 2 -> 4: "v" in 0, 2 and 3; "s" only in 1.
  pb::ProgramDesc desc = Tree({0, 0, 1, 2}, {{0, "v"}, {2, "v"}, {3, "v"}, {1, "s"}});
  auto made = Program::Create(&desc);
  REQUIRE(made.ok());
  Program& p = **made;
  CHECK(p.block(4).FindVarBlock("v")->idx() == 2);
  CHECK(p.block(3).FindVarBlock("v")->idx() == 3);
  CHECK(p.block(1).FindVarBlock("v")->idx() == 0);
  CHECK(p.block(3).FindVarBlock("s")->idx() == 1);
  CHECK(p.block(4).FindVar("s") == nullptr);  // a sibling's variable is not visible
  CHECK(p.block(2).FindVar("s") == nullptr);
  CHECK(p.Encloses(0, 4));
  CHECK_FALSE(p.Encloses(1, 4));
  // Edits keep the index: appended blocks, added variables, rebuilt indexes.
  Block& b5 = p.AppendBlock(3);
  CHECK(p.depth(5) == 3);
  CHECK(b5.FindVarBlock("v")->idx() == 3);
  CHECK(b5.FindVarBlock("s")->idx() == 1);
  b5.AddVar("s");
  CHECK(b5.FindVarBlock("s")->idx() == 5);
  CHECK(p.block(3).FindVarBlock("s")->idx() == 1);
  p.block(3).desc().mutable_vars()->RemoveLast();
  p.block(3).RebuildIndex();
  CHECK(b5.FindVarBlock("v")->idx() == 0);
  // A name declared in many siblings: the lookup walks up instead of scanning them.
  std::vector<int> parents(60, 0);
  std::vector<std::pair<int, std::string>> declares{{0, "w"}};
  for (int i = 1; i < 60; ++i) declares.emplace_back(i, "w");
  pb::ProgramDesc wide = Tree(parents, declares);
  auto w = Program::Create(&wide);
  REQUIRE(w.ok());
  CHECK((*w)->block(60).FindVarBlock("w")->idx() == 0);
  CHECK((*w)->block(59).FindVarBlock("w")->idx() == 59);
}

TEST_CASE("Round trips text -> binary -> JSON -> text are byte-identical") {
  for (const char* config : {"configs/mlp.pbtxt", "configs/lenet.pbtxt"}) {
    CAPTURE(config);
    auto m = LoadModule(Repo(config));
    REQUIRE(m.ok());
    auto text1 = Serialize((*m)->compiled().main_program(), Format::kText);
    auto bin = Serialize((*m)->compiled().main_program(), Format::kBinary);
    REQUIRE(text1.ok());
    REQUIRE(bin.ok());
    auto m2 = ParseModule(*bin, Format::kBinary, "x.pb");
    REQUIRE(m2.ok());
    auto json = Serialize((*m2)->compiled().main_program(), Format::kJson);
    REQUIRE(json.ok());
    auto m3 = ParseModule(*json, Format::kJson, "x.json");
    REQUIRE(m3.ok());
    auto text2 = Serialize((*m3)->compiled().main_program(), Format::kText);
    REQUIRE(text2.ok());
    CHECK(*text1 == *text2);
    // And the binary form is stable too.
    CHECK(*Serialize((*m3)->compiled().main_program(), Format::kBinary) == *bin);
  }
}

TEST_CASE("Compiled programs are recognized in every format") {
  auto m = MustParse(kNested);
  m->compiled().add_fetch_targets("z");
  for (Format f : {Format::kText, Format::kBinary, Format::kJson}) {
    CAPTURE(FormatName(f));
    auto bytes = Serialize(m->compiled(), f);
    REQUIRE(bytes.ok());
    auto back = ParseModule(*bytes, f, "c");
    REQUIRE_MESSAGE(back.ok(), (back.ok() ? "" : back.error().Render()));
    CHECK((*back)->was_compiled());
    CHECK((*back)->compiled().fetch_targets(0) == "z");
    CHECK((*back)->main().num_blocks() == 3);
    // The bare main program is read as a ProgramDesc, not mistaken for a compiled program.
    auto bare = Serialize(m->compiled().main_program(), f);
    auto desc = ParseModule(*bare, f, "d");
    REQUIRE(desc.ok());
    CHECK_FALSE((*desc)->was_compiled());
    CHECK((*desc)->main().num_blocks() == 3);
  }
}

/// A minimal protobuf wire encoder, so the PaddlePaddle layout below is spelled out by field number
/// independently of our generated classes.
struct Wire {
  std::string bytes;
  Wire& Varint(int field, uint64_t v) {
    Tag(field, 0);
    Raw(v);
    return *this;
  }
  Wire& Bytes(int field, const std::string& s) {
    Tag(field, 2);
    Raw(s.size());
    bytes += s;
    return *this;
  }
  Wire& Msg(int field, const Wire& w) { return Bytes(field, w.bytes); }
  void Tag(int field, int type) { Raw(static_cast<uint64_t>(field) << 3 | type); }
  void Raw(uint64_t v) {
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      bytes += static_cast<char>(v ? b | 0x80 : b);
    } while (v);
  }
};

TEST_CASE("A binary ProgramDesc with PaddlePaddle's field numbers parses and compiles") {
  // VarDesc{name=1, type=2: VarType{type=1 LOD_TENSOR(7), lod_tensor=3: {tensor=1: {data_type=1 FP32(5),
  // dims=2 (unpacked)}}}, need_check_feed=4}.
  auto var = [](const std::string& name, bool feed) {
    Wire tensor;
    tensor.Varint(1, 5).Varint(2, static_cast<uint64_t>(int64_t{-1})).Varint(2, 4);
    Wire lod;
    lod.Msg(1, tensor);
    Wire type;
    type.Varint(1, 7).Msg(3, lod);
    Wire v;
    v.Bytes(1, name).Msg(2, type);
    if (feed) v.Varint(4, 1);
    return v;
  };
  // OpDesc{inputs=1: Var{parameter=1, arguments=2}, outputs=2, type=3, attrs=4: Attr{name=1, type=2, i=3}}.
  Wire in, out, attr, op;
  in.Bytes(1, "X").Bytes(2, "x");
  out.Bytes(1, "Out").Bytes(2, "y");
  attr.Bytes(1, "op_role").Varint(2, 0).Varint(3, 0);
  op.Msg(1, in).Msg(2, out).Bytes(3, "relu").Msg(4, attr);
  // BlockDesc{idx=1, parent_idx=2, vars=3, ops=4}; ProgramDesc{blocks=1, version=4: Version{version=1}}.
  Wire block;
  block.Varint(1, 0).Varint(2, static_cast<uint64_t>(int64_t{-1})).Msg(3, var("x", true)).Msg(3, var("y", false)).Msg(4, op);
  Wire version;
  version.Varint(1, 2006000);
  Wire program;
  program.Msg(1, block).Msg(4, version);

  auto m = ParseModule(program.bytes, Format::kBinary, "paddle.pdmodel");
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().Render()));
  CHECK_FALSE((*m)->was_compiled());
  const pb::ProgramDesc& p = (*m)->compiled().main_program();
  CHECK(p.version().version() == 2006000);
  REQUIRE(p.blocks(0).ops_size() == 1);
  CHECK(p.blocks(0).ops(0).type() == "relu");
  CHECK(p.blocks(0).vars(0).need_check_feed());
  CHECK(*VarDims(p.blocks(0).vars(1)) == Dims{-1, 4});
  // Our writer produces exactly PaddlePaddle's bytes (unpacked repeated scalars, fields in order).
  CHECK(*Serialize(p, Format::kBinary) == program.bytes);
  // And it compiles: validation accepts PaddlePaddle's op_role attribute, shapes are inferred.
  std::string path = std::filesystem::temp_directory_path() / ("paddle_" + std::to_string(::getpid()) + ".pdmodel");
  REQUIRE(WriteFileAtomic(path, program.bytes).ok());
  driver::CompileOptions o;
  o.input = path;
  o.print_shapes = true;
  std::ostringstream printed;
  Status st = driver::RunCompile(o, printed);
  std::filesystem::remove(path);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  CHECK(printed.str().find("  y     float32  [-1, 4]") != std::string::npos);
}

TEST_CASE("TensorDesc bytes match the worked example of the params format") {
  pb::VarType::TensorDesc t;
  t.set_data_type(pb::VarType::FP32);
  t.add_dims(784);
  t.add_dims(10);
  CHECK(*Serialize(t, Format::kBinary) == std::string("\x08\x05\x10\x90\x06\x10\x0a", 7));
}

TEST_CASE("Formats from names and paths") {
  CHECK(*ParseFormat("json") == Format::kJson);
  CHECK_FALSE(ParseFormat("yaml").ok());
  CHECK(*FormatFromPath("a/model.pdmodel") == Format::kBinary);
  CHECK(*FormatFromPath("m.PBTXT") == Format::kText);
  CHECK(*FormatFromPath("x/__model__") == Format::kBinary);
  CHECK_FALSE(FormatFromPath("m.onnx"));
}

TEST_CASE("Parse errors carry positions") {
  auto bad = ParseModule("blocks {\n  idx: 0\n  parent_idx: -1\n  ops { typo: 1 }\n}\n", Format::kText, "e.pbtxt");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().Render() ==
        "error: e.pbtxt:4:13: Message type \"paddle.framework.proto.OpDesc\" has no field named \"typo\".\n");
  auto missing = ParseModule("blocks {\n  idx: 0\n  parent_idx: -1\n  ops { inputs { parameter: \"X\" } }\n}\n",
                             Format::kText, "e.pbtxt");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().Render() == "error: e.pbtxt:4:3: missing required field 'blocks[0].ops[0].type'\n");
}

TEST_CASE("Printers list shapes and ops") {
  auto m = MustParse(kNested);
  std::string shapes = FormatShapes(m->main());
  CHECK(shapes.find("block 0 (2 ops, 1 vars)") != std::string::npos);
  CHECK(shapes.find("  x     float32  [-1, 4]") != std::string::npos);
  std::string ops = FormatOps(m->main());
  CHECK(ops.find("     1  relu(X=y) -> (Out=z)") != std::string::npos);
}

TEST_CASE("The listing: one line per block, var and op, attributes sorted, bookkeeping left out") {
  auto m = MustParse(R"pb(
    main_program {
      blocks {
        idx: 0
        parent_idx: -1
        vars {
          name: "feed"
          type { type: FEED_MINIBATCH }
          persistable: true
        }
        vars {
          name: "x"
          type {
            type: LOD_TENSOR
            lod_tensor {
              tensor { data_type: FP32 dims: -1 dims: 4 }
              lod_level: 1
            }
          }
          need_check_feed: true
        }
        vars {
          name: "w"
          type {
            type: LOD_TENSOR
            lod_tensor { tensor { data_type: FP32 dims: 4 } }
          }
          persistable: true
          is_parameter: true
          stop_gradient: true
          attrs { name: "regularizer" type: STRING s: "l2:0.5" }
          attrs { name: "initializer" type: STRING s: "constant:1" }
        }
        vars {
          name: "rows"
          type {
            type: SELECTED_ROWS
            selected_rows { data_type: INT64 dims: 3 }
          }
        }
        vars {
          name: "arr"
          type {
            type: LOD_TENSOR_ARRAY
            tensor_array { tensor { data_type: FP64 } }
          }
        }
        ops {
          type: "custom"
          inputs { parameter: "X" arguments: "x" arguments: "w" }
          inputs { parameter: "Empty" }
          outputs { parameter: "Out" arguments: "y" }
          attrs { name: "op_callstack" type: STRINGS strings: "model.py:3" }
          attrs { name: "z_ints" type: INTS ints: 1 ints: -2 }
          attrs { name: "op_role" type: INT i: 257 }
          attrs { name: "name" type: STRING s: "say \"hi\"\n" }
          attrs { name: "f" type: FLOAT f: 0.1 }
          attrs { name: "d" type: FLOAT64 float64: 1e-300 }
          attrs { name: "flags" type: BOOLEANS bools: true bools: false }
          attrs { name: "sub_block" type: BLOCK block_idx: 1 }
          attrs { name: "op_namescope" type: STRING s: "/fc/" }
          attrs { name: "op_device" type: STRING s: "gpu" }
          attrs { name: "l" type: LONG l: 8589934592 }
          attrs { name: "strs" type: STRINGS strings: "a" strings: "b" }
          attrs { name: "v" type: VARS vars_name: "x" vars_name: "w" }
          attrs {
            name: "s"
            type: SCALAR
            scalar { type: FLOAT64 r: 2.5 }
          }
          is_target: true
        }
      }
      blocks {
        idx: 1
        parent_idx: 0
        forward_block_idx: 0
        ops {
          type: "relu"
          inputs { parameter: "X" arguments: "x" }
          outputs { parameter: "Out" arguments: "z" }
          attrs { name: "op_role" type: INT i: 18 }
        }
      }
    }
    startup_program { blocks { idx: 0 parent_idx: -1 } }
  )pb");
  CHECK(FormatListing(*m) ==
        "main block 0: 5 vars, 1 op\n"
        "  var feed: FEED_MINIBATCH persistable\n"
        "  var x: float32[-1, 4] lod_level=1 data\n"
        "  var w: float32[4] persistable parameter stop_gradient {initializer=\"constant:1\", regularizer=\"l2:0.5\"}\n"
        "  var rows: selected_rows int64[3]\n"
        "  var arr: tensor_array float64[]\n"
        "  op 0: custom(X=[x, w], Empty=[]) -> (Out=y) target {d=1e-300, f=0.1, flags=[true, false], l=8589934592, "
        "name=\"say \\\"hi\\\"\\n\", op_role=backward|loss, s=2.5, strs=[\"a\", \"b\"], sub_block=<block 1>, v=[x, w], "
        "z_ints=[1, -2]}\n"
        "main block 1: parent 0, forward block 0, 0 vars, 1 op\n"
        "  op 0: relu(X=x) -> (Out=z) {op_role=optimize|lrsched}\n"
        "startup block 0: 0 vars, 0 ops\n");
}

}  // namespace
}  // namespace paddlec::ir
