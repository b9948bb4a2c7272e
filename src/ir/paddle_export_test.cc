// ExportForPaddle: what a .pdmodel needs for PaddlePaddle's loaders. The interop suite
// (tools/python/tests/interop/test_reverse.py) runs the result in the real Paddle.
#include "paddlec/ir/paddle_export.h"

#include <doctest/doctest.h>
#include <google/protobuf/text_format.h>

namespace paddlec::ir {
namespace {

pb::ProgramDesc Parse(const std::string& text) {
  pb::ProgramDesc p;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &p));
  return p;
}

std::vector<std::string> Types(const pb::ProgramDesc& p) {
  std::vector<std::string> out;
  for (const auto& op : p.blocks(0).ops()) out.push_back(op.type());
  return out;
}

constexpr char kConvBn[] = R"pb(
  blocks {
    idx: 0
    parent_idx: -1
    vars {
      name: "x"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 dims: 8 dims: 8 } }
      }
    }
    ops {
      type: "conv2d"
      inputs { parameter: "Input" arguments: "x" }
      inputs { parameter: "Filter" arguments: "w" }
      outputs { parameter: "Output" arguments: "c" }
    }
    ops {
      type: "batch_norm"
      inputs { parameter: "X" arguments: "c" }
      outputs { parameter: "Y" arguments: "y" }
      outputs { parameter: "MeanOut" arguments: "m" }
    }
  }
)pb";

TEST_CASE("Feed and fetch ops are added for the signature, with their holders; ReserveSpace is bound") {
  pb::ProgramDesc p = Parse(kConvBn);
  REQUIRE(ExportForPaddle(p, {"x"}, {"y", "m"}).ok());
  CHECK(Types(p) == std::vector<std::string>{"feed", "conv2d", "batch_norm", "fetch", "fetch"});
  const pb::OpDesc& feed = p.blocks(0).ops(0);
  CHECK(feed.inputs(0).arguments(0) == "feed");
  CHECK(feed.outputs(0).arguments(0) == "x");
  CHECK(feed.attrs(0).name() == "col");
  CHECK(feed.attrs(0).i() == 0);
  const pb::OpDesc& fetch = p.blocks(0).ops(4);
  CHECK(fetch.inputs(0).arguments(0) == "m");
  CHECK(fetch.outputs(0).arguments(0) == "fetch");
  CHECK(fetch.attrs(0).i() == 1);
  bool feed_holder = false, fetch_holder = false;
  for (const auto& v : p.blocks(0).vars()) {
    if (v.name() == "feed") feed_holder = v.type().type() == pb::VarType::FEED_MINIBATCH && v.persistable();
    if (v.name() == "fetch") fetch_holder = v.type().type() == pb::VarType::FETCH_LIST && v.persistable();
    if (v.name() == "x") CHECK(v.need_check_feed());
  }
  CHECK(feed_holder);
  CHECK(fetch_holder);
  // Paddle's batch_norm kernel writes ReserveSpace in training mode: the slot names a variable.
  const pb::OpDesc& bn = p.blocks(0).ops(2);
  std::string reserve;
  for (const auto& o : bn.outputs())
    if (o.parameter() == "ReserveSpace" && o.arguments_size() == 1) reserve = o.arguments(0);
  CHECK(reserve == "y.reserve_space");

  // A program that has feed and fetch ops keeps them as they are.
  pb::ProgramDesc again = p;
  REQUIRE(ExportForPaddle(again, {"x"}, {"y"}).ok());
  CHECK(Types(again) == Types(p));
}

TEST_CASE("Ops PaddlePaddle does not have are refused, every one, with its position") {
  pb::ProgramDesc p = Parse(R"pb(
    blocks {
      idx: 0
      parent_idx: -1
      ops { type: "fused_conv2d_bn_act" }
      ops { type: "relu" }
      ops { type: "my_op" }
    }
  )pb");
  Status st = ExportForPaddle(p, {}, {});
  REQUIRE_FALSE(st.ok());
  std::string r = st.error().Render();
  CHECK(r.find("block 0, op 0 (fused_conv2d_bn_act): 'fused_conv2d_bn_act' is paddlec's own op") != std::string::npos);
  CHECK(r.find("block 0, op 2 (my_op): 'my_op' is paddlec's own op") != std::string::npos);
  CHECK(r.find("op 1 (relu)") == std::string::npos);
}

TEST_CASE("IsPaddleOp: the translation table's legacy ops, legacy-only ops and their gradients") {
  for (const char* op : {"conv2d", "matmul_v2", "batch_norm", "batch_norm_grad", "mul", "mul_grad", "feed",
                         "fill_constant", "fill_zeros_like", "softmax_with_cross_entropy_grad", "lookup_table_v2"})
    CHECK_MESSAGE(IsPaddleOp(op), op);
  for (const char* op : {"fused_conv2d_bn_act", "fused_conv2d_bn_act_grad", "_grad", "relu__grad", ""})
    CHECK_FALSE_MESSAGE(IsPaddleOp(op), op);
}

}  // namespace
}  // namespace paddlec::ir
