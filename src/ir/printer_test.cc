// The Graphviz graph of a program: ops and variables with dtype and dims, parameters and inputs
// styled apart, gradient ops tinted, and a sub-block drawn as a cluster hanging off its op.
#include "paddlec/ir/printer.h"

#include <doctest/doctest.h>

#include "paddlec/ir/serialize.h"

namespace paddlec::ir {
namespace {

constexpr std::string_view kProgram = R"pb(
  blocks {
    idx: 0
    parent_idx: -1
    vars {
      name: "x"
      need_check_feed: true
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: -1 dims: 4 } }
      }
    }
    vars {
      name: "w"
      persistable: true
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: 4 dims: 2 } }
      }
    }
    vars {
      name: "y"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: -1 dims: 2 } }
      }
    }
    vars {
      name: "c"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: BOOL dims: 1 } }
      }
    }
    vars {
      name: "y@GRAD"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: -1 dims: 2 } }
      }
    }
    ops {
      type: "mul"
      inputs { parameter: "X" arguments: "x" }
      inputs { parameter: "Y" arguments: "w" }
      outputs { parameter: "Out" arguments: "y" }
    }
    ops {
      type: "conditional_block"
      inputs { parameter: "Cond" arguments: "c" }
      outputs { parameter: "Out" arguments: "y" }
      attrs { name: "sub_block" type: BLOCK block_idx: 1 }
    }
    ops {
      type: "fill_constant"
      outputs { parameter: "Out" arguments: "y@GRAD" }
      attrs { name: "op_role" type: INT i: 257 }
    }
  }
  blocks {
    idx: 1
    parent_idx: 0
    ops {
      type: "relu"
      inputs { parameter: "X" arguments: "y" }
      outputs { parameter: "Out" arguments: "y" }
    }
  }
)pb";

TEST_CASE("a program's graph has its ops, variables, shapes, roles and sub-blocks") {
  auto m = ParseModule(kProgram, Format::kText, "p.pbtxt");
  REQUIRE_MESSAGE(m.ok(), m.error().message());
  std::string dot = FormatDot((*m)->main());
  CHECK(dot.starts_with("digraph program {\n  compound=true;"));
  CHECK(dot.ends_with("}\n"));
  CHECK(dot.find("\"b0op0\" [label=\"mul\", shape=box, style=\"rounded,filled\", fillcolor=\"#d5e5f7\"];") !=
        std::string::npos);
  CHECK(dot.find("\"v0:x\" [label=\"x\\nfloat32 [-1, 4]\", shape=ellipse, style=\"filled\", fillcolor=\"#cdebc5\"];") !=
        std::string::npos);
  CHECK(dot.find("\"v0:w\" [label=\"w\\nfloat32 [4, 2]\", shape=box, style=\"filled\", fillcolor=\"#fde3b5\"];") !=
        std::string::npos);
  CHECK(dot.find("\"v0:w\" -> \"b0op0\";") != std::string::npos);
  CHECK(dot.find("\"b0op0\" -> \"v0:y\";") != std::string::npos);
  // The backward op (op_role backward | loss) is tinted; its output is a gradient.
  CHECK(dot.find("\"b0op2\" [label=\"fill_constant\", shape=box, style=\"rounded,filled\", fillcolor=\"#f6d3d3\"];") !=
        std::string::npos);
  CHECK(dot.find("\"v0:y@GRAD\" [label=\"y@GRAD\\nfloat32 [-1, 2]\", shape=ellipse, color=\"#b04a4a\"];") !=
        std::string::npos);
  // Block 1 is a cluster; its op reads block 0's y (one node, not a copy), and the edge from the
  // conditional_block op enters the cluster.
  CHECK(dot.find("subgraph cluster_b1 {") != std::string::npos);
  CHECK(dot.find("label=\"block 1 (conditional_block sub_block)\"") != std::string::npos);
  CHECK(dot.find("\"v0:y\" -> \"b1op0\";") != std::string::npos);
  CHECK(dot.find("\"b0op1\" -> \"b1op0\" [style=dashed, lhead=cluster_b1];") != std::string::npos);
  CHECK(dot.find("\"v1:y\"") == std::string::npos);
}

TEST_CASE("quotes in names are escaped") {
  auto m = ParseModule(R"pb(blocks {
                              idx: 0
                              parent_idx: -1
                              ops {
                                type: "relu"
                                inputs { parameter: "X" arguments: "a\"b" }
                                outputs { parameter: "Out" arguments: "c" }
                              }
                            })pb",
                       Format::kText, "q.pbtxt");
  REQUIRE(m.ok());
  CHECK(FormatDot((*m)->main()).find("\"v0:a\\\"b\" [label=\"a\\\"b\"") != std::string::npos);
}

}  // namespace
}  // namespace paddlec::ir
