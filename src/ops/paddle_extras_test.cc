// What PaddlePaddle 3.x writes on the ops of its legacy programs is accepted: its extra (backend)
// attributes, attribute widths that differ from the declared ones, float ranges compared in float,
// and the slots it writes empty (scale's BiasTensor, adam's Moment2Max).
#include <doctest/doctest.h>

#include "paddlec/ops/op_registry.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::ops {
std::vector<std::string> RegisterPaddleExtraAttrsChecked(OpRegistry& registry);  // paddle_extras.cc

namespace {

using testing::CompileText;
using testing::MakeTensor;

const pb::OpDesc& OnlyOp(ir::Module& m) { return m.main().global_block().desc().ops(0); }

const pb::OpDesc::Attr* FindAttr(const pb::OpDesc& op, const std::string& name) {
  for (const auto& a : op.attrs())
    if (a.name() == name) return &a;
  return nullptr;
}

/// The message of the first error of compiling `text`.
std::string CompileErrorOf(const std::string& text) {
  auto m = CompileText(text);
  REQUIRE_FALSE(m.ok());
  return m.error().message();
}

TEST_CASE("Paddle's extra attributes are declared from one table, on ops and their gradients, as ignored") {
  OpRegistry fresh;
  RegisterAllOps(fresh);
  // Applying the table again finds every row well formed and every attribute declared already.
  CHECK(RegisterPaddleExtraAttrsChecked(fresh) == std::vector<std::string>{});
  for (const char* type : {"elementwise_add", "elementwise_add_grad", "elementwise_mul"}) {
    CAPTURE(type);
    const OpInfo* info = fresh.Find(type);
    REQUIRE(info != nullptr);
    const pb::OpProto::Attr* scale_x = info->FindAttr("Scale_x");
    REQUIRE(scale_x != nullptr);
    CHECK(scale_x->extra());
    CHECK(scale_x->type() == pb::FLOAT);
    CHECK(scale_x->comment().find("ignored") != std::string::npos);
  }
  // An attribute paddlec reads keeps its own declaration (conv2d's `is_test` is not re-declared).
  const pb::OpProto::Attr* use_addto = fresh.Find("conv2d")->FindAttr("use_addto");
  REQUIRE(use_addto != nullptr);
  CHECK(use_addto->extra());
}

// Attributes as Paddle 3.3 writes them on a legacy conv2d + elementwise_add (from a real
// save_inference_model file), with LONGS where paddlec declares INTS.
constexpr char kPaddleConv[] = R"pb(
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
    vars {
      name: "w"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: 4 dims: 3 dims: 3 dims: 3 } }
      }
      persistable: true
    }
    vars {
      name: "b"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: 4 } }
      }
      persistable: true
    }
    ops {
      type: "conv2d"
      inputs { parameter: "Input" arguments: "x" }
      inputs { parameter: "Filter" arguments: "w" }
      outputs { parameter: "Output" arguments: "c" }
      attrs { name: "strides" type: LONGS longs: 1 longs: 1 }
      attrs { name: "paddings" type: INTS ints: 1 ints: 1 }
      attrs { name: "use_onednn" type: BOOLEAN b: false }
      attrs { name: "onednn_data_type" type: STRING s: "float32" }
      attrs { name: "exhaustive_search" type: BOOLEAN b: false }
      attrs { name: "force_fp32_output" type: BOOLEAN b: false }
      attrs { name: "use_addto" type: BOOLEAN b: false }
      attrs { name: "workspace_size_MB" type: INT i: 512 }
    }
    ops {
      type: "elementwise_add"
      inputs { parameter: "X" arguments: "c" }
      inputs { parameter: "Y" arguments: "b" }
      outputs { parameter: "Out" arguments: "y" }
      attrs { name: "axis" type: INT i: 1 }
      attrs { name: "Scale_x" type: FLOAT f: 1 }
      attrs { name: "Scale_y" type: FLOAT f: 1 }
      attrs { name: "Scale_out" type: FLOAT f: 1 }
    }
  }
)pb";

TEST_CASE("A legacy program with Paddle's attributes validates; each attribute is stored in its declared width") {
  auto m = CompileText(kPaddleConv);
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().Render()));
  const pb::OpDesc::Attr* strides = FindAttr(OnlyOp(**m), "strides");
  REQUIRE(strides != nullptr);
  CHECK(strides->type() == pb::INTS);  // what Paddle's conv2d reads with Attr<std::vector<int>>
  CHECK(strides->ints_size() == 2);
}

TEST_CASE("An attribute set twice to one value is accepted once; to two values it is an error") {
  // Paddle 3.3 writes reshape2's mkldnn_data_type and use_quantizer twice in its training programs.
  auto program = [](const std::string& second) {
    return std::string(R"pb(
             blocks { idx: 0 parent_idx: -1
                      vars {
                        name: "x"
                        type {
                          type: LOD_TENSOR
                          lod_tensor { tensor { data_type: FP32 dims: 6 } }
                        }
                      }
                      ops { type: "reshape2"
                            inputs { parameter: "X" arguments: "x" }
                            outputs { parameter: "Out" arguments: "y" }
                            attrs { name: "shape" type: INTS ints: 2 ints: 3 }
                            attrs { name: "use_quantizer" type: BOOLEAN b: false }
                            attrs { name: "use_quantizer" type: BOOLEAN b:)pb") +
           second + " } }\n}\n";
  };
  auto m = CompileText(program("false"));
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().Render()));
  int count = 0;
  for (const auto& a : OnlyOp(**m).attrs()) count += a.name() == "use_quantizer";
  CHECK(count == 1);
  CHECK(CompileErrorOf(program("true")) == "attribute 'use_quantizer' is set twice, to different values");
}

std::string BatchNormWithEpsilon(const std::string& epsilon_attr) {
  return R"pb(
           blocks { idx: 0 parent_idx: -1
                    vars {
                      name: "x"
                      type {
                        type: LOD_TENSOR
                        lod_tensor { tensor { data_type: FP32 dims: -1 dims: 2 dims: 4 dims: 4 } }
                      }
                    }
                    vars {
                      name: "s"
                      type {
                        type: LOD_TENSOR
                        lod_tensor { tensor { data_type: FP32 dims: 2 } }
                      }
                      persistable: true
                    }
                    vars {
                      name: "m"
                      type {
                        type: LOD_TENSOR
                        lod_tensor { tensor { data_type: FP32 dims: 2 } }
                      }
                      persistable: true
                    }
                    vars {
                      name: "v"
                      type {
                        type: LOD_TENSOR
                        lod_tensor { tensor { data_type: FP32 dims: 2 } }
                      }
                      persistable: true
                    }
                    ops { type: "batch_norm"
                          inputs { parameter: "X" arguments: "x" }
                          inputs { parameter: "Scale" arguments: "s" }
                          inputs { parameter: "Bias" arguments: "s" }
                          inputs { parameter: "Mean" arguments: "m" }
                          inputs { parameter: "Variance" arguments: "v" }
                          outputs { parameter: "Y" arguments: "y" }
                          outputs { parameter: "MeanOut" arguments: "m" }
                          outputs { parameter: "VarianceOut" arguments: "v" }
                          attrs { name: "is_test" type: BOOLEAN b: true })pb" +
         epsilon_attr + R"pb(}
                             }
)pb";
}

TEST_CASE("Float ranges are compared in the attribute's own precision") {
  // MobileNetV3's epsilon 1e-3, stored by Paddle as the float 0.0010000000474974513: inside [0, 0.001]
  // in float, as Paddle checks it, though above 0.001 as a double.
  CHECK(CompileText(BatchNormWithEpsilon(R"(attrs { name: "epsilon" type: FLOAT f: 0.001 })")).ok());
  // Written as a FLOAT64, it is still checked (and stored) as the declared FLOAT.
  auto wide =
      CompileText(BatchNormWithEpsilon(R"(attrs { name: "epsilon" type: FLOAT64 float64: 0.0010000000474974513 })"));
  REQUIRE_MESSAGE(wide.ok(), (wide.ok() ? "" : wide.error().Render()));
  CHECK(FindAttr(OnlyOp(**wide), "epsilon")->type() == pb::FLOAT);
  // A value the float comparison puts outside the range still fails.
  CHECK(CompileErrorOf(BatchNormWithEpsilon(R"(attrs { name: "epsilon" type: FLOAT f: 0.0011 })")) ==
        "attribute 'epsilon' value 0.0011 is out of range: must be [0, 0.001]");
}

TEST_CASE("scale accepts Paddle's empty BiasTensor slot and rejects a bound one") {
  constexpr char kScale[] = R"pb(
    blocks {
      idx: 0
      parent_idx: -1
      vars {
        name: "x"
        type {
          type: LOD_TENSOR
          lod_tensor { tensor { data_type: FP32 dims: 3 } }
        }
      }
      vars {
        name: "t"
        type {
          type: LOD_TENSOR
          lod_tensor { tensor { data_type: FP32 dims: 1 } }
        }
      }
      ops {
        type: "scale"
        inputs { parameter: "X" arguments: "x" }
        inputs { parameter: "BiasTensor" %s }
        inputs { parameter: "ScaleTensor" }
        outputs { parameter: "Out" arguments: "y" }
        attrs { name: "scale" type: FLOAT f: 2 }
        attrs { name: "bias" type: FLOAT f: 1 }
      }
    }
  )pb";
  auto replace = [](std::string s, const std::string& with) { return s.replace(s.find("%s"), 2, with); };
  auto m = CompileText(replace(kScale, ""));
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().Render()));
  auto out = testing::RunModule(**m, {{"x", MakeTensor<float>({3}, {1, 2, 3})}}, {"y"});
  REQUIRE(out.ok());
  CHECK(testing::ToVector<float>(out->at("y")) == std::vector<float>{3, 5, 7});
  CHECK(CompileErrorOf(replace(kScale, R"(arguments: "t")")) ==
        "a bound BiasTensor is not supported: paddlec takes the bias from the `bias` attribute");
}

TEST_CASE("adam accepts Paddle 3's amsgrad=false and empty Moment2Max; amsgrad=true is refused") {
  auto program = [](const std::string& amsgrad) {
    std::string s = R"pb(
      blocks { idx: 0 parent_idx: -1
               vars {
                 name: "p"
                 type {
                   type: LOD_TENSOR
                   lod_tensor { tensor { data_type: FP32 dims: 2 } }
                 }
                 persistable: true
               }
               vars {
                 name: "g"
                 type {
                   type: LOD_TENSOR
                   lod_tensor { tensor { data_type: FP32 dims: 2 } }
                 }
               }
               vars {
                 name: "lr"
                 type {
                   type: LOD_TENSOR
                   lod_tensor { tensor { data_type: FP32 } }
                 }
                 persistable: true
               }
               vars {
                 name: "m1"
                 type {
                   type: LOD_TENSOR
                   lod_tensor { tensor { data_type: FP32 dims: 2 } }
                 }
                 persistable: true
               }
               vars {
                 name: "m2"
                 type {
                   type: LOD_TENSOR
                   lod_tensor { tensor { data_type: FP32 dims: 2 } }
                 }
                 persistable: true
               }
               vars {
                 name: "b1"
                 type {
                   type: LOD_TENSOR
                   lod_tensor { tensor { data_type: FP32 dims: 1 } }
                 }
                 persistable: true
               }
               vars {
                 name: "b2"
                 type {
                   type: LOD_TENSOR
                   lod_tensor { tensor { data_type: FP32 dims: 1 } }
                 }
                 persistable: true
               }
               ops { type: "adam"
                     inputs { parameter: "Param" arguments: "p" }
                     inputs { parameter: "Grad" arguments: "g" }
                     inputs { parameter: "LearningRate" arguments: "lr" }
                     inputs { parameter: "Moment1" arguments: "m1" }
                     inputs { parameter: "Moment2" arguments: "m2" }
                     inputs { parameter: "Moment2Max" }
                     inputs { parameter: "Beta1Pow" arguments: "b1" }
                     inputs { parameter: "Beta2Pow" arguments: "b2" }
                     outputs { parameter: "ParamOut" arguments: "p" }
                     outputs { parameter: "Moment1Out" arguments: "m1" }
                     outputs { parameter: "Moment2Out" arguments: "m2" }
                     outputs { parameter: "Moment2MaxOut" }
                     outputs { parameter: "Beta1PowOut" arguments: "b1" }
                     outputs { parameter: "Beta2PowOut" arguments: "b2" }
                     attrs { name: "amsgrad" type: BOOLEAN b:)pb";
    return s + amsgrad + " } }\n}\n";
  };
  auto m = CompileText(program("false"));
  CHECK_MESSAGE(m.ok(), (m.ok() ? "" : m.error().Render()));
  CHECK(CompileErrorOf(program("true")) == "amsgrad is not supported: paddlec's adam keeps no Moment2Max");
}

}  // namespace
}  // namespace paddlec::ops
