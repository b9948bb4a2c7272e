// -O1 and -O2 must not change what a program computes: MLP and LeNet, for inference and for
// training (three Adam steps), give the same outputs and parameters with fuse-fc and plan-memory as
// without, up to float reassociation; and they do fuse and share what they claim to.
#include <doctest/doctest.h>

#include <set>

#include "paddlec/driver/driver.h"
#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/passes/signature.h"
#include "paddlec/runtime/threads.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"
#include "testing/resnet_text.h"

namespace paddlec::passes {
namespace {

/// A residual block as in ResNet: relu(x * w1 + x * w2), then a classifier.
constexpr char kResidual[] = R"pb(
  blocks {
    idx: 0
    parent_idx: -1
    vars {
      name: "img"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: -1 dims: 16 } }
      }
    }
    vars {
      name: "label"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: INT64 dims: -1 dims: 1 } }
      }
    }
    vars {
      name: "w1"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: 16 dims: 16 } }
      }
      persistable: true
    }
    vars {
      name: "w2"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: 16 dims: 16 } }
      }
      persistable: true
    }
    vars {
      name: "w3"
      type {
        type: LOD_TENSOR
        lod_tensor { tensor { data_type: FP32 dims: 16 dims: 10 } }
      }
      persistable: true
    }
    ops {
      type: "mul"
      inputs { parameter: "X" arguments: "img" }
      inputs { parameter: "Y" arguments: "w1" }
      outputs { parameter: "Out" arguments: "h" }
    }
    ops {
      type: "mul"
      inputs { parameter: "X" arguments: "img" }
      inputs { parameter: "Y" arguments: "w2" }
      outputs { parameter: "Out" arguments: "g" }
    }
    ops {
      type: "elementwise_add"
      inputs { parameter: "X" arguments: "h" }
      inputs { parameter: "Y" arguments: "g" }
      outputs { parameter: "Out" arguments: "s" }
    }
    ops {
      type: "relu"
      inputs { parameter: "X" arguments: "s" }
      outputs { parameter: "Out" arguments: "r" }
    }
    ops {
      type: "mul"
      inputs { parameter: "X" arguments: "r" }
      inputs { parameter: "Y" arguments: "w3" }
      outputs { parameter: "Out" arguments: "logits" }
    }
    ops {
      type: "softmax_with_cross_entropy"
      inputs { parameter: "Logits" arguments: "logits" }
      inputs { parameter: "Label" arguments: "label" }
      outputs { parameter: "Softmax" arguments: "prob" }
      outputs { parameter: "Loss" arguments: "loss_vec" }
    }
    ops {
      type: "mean"
      inputs { parameter: "X" arguments: "loss_vec" }
      outputs { parameter: "Out" arguments: "loss" }
    }
  }
)pb";

/// A small ResNet on 3 x 8 x 8 images: a 16-channel stage and a 32-channel one of one block each.
/// The layout pass blocks both stages, up to the global pooling's input; the 1x1 projection and the
/// stride-2 convolution run on oneDNN, the 32-channel 3x3 one on Winograd.
const testing::ResNetSpec kSmallResNet{.image = 8, .stages = {16, 32}, .blocks = 1};

std::unique_ptr<ir::Module> Compile(const std::string& config, bool train, bool inference, int opt_level,
                                    const std::string& optimizer = "adam", double adam_epsilon = 1e-8) {
  auto m = config == "residual" ? ir::ParseModule(kResidual, ir::Format::kText, "residual.pbtxt")
           : config == "resnet" ? ir::ParseModule(testing::ResNetText(kSmallResNet), ir::Format::kText, "resnet.pbtxt")
                                : ir::LoadModule(std::string(PADDLEC_SOURCE_DIR) + "/configs/" + config);
  REQUIRE(m.ok());
  driver::CompileOptions o;
  o.train = train;
  o.inference = inference;
  o.opt_level = opt_level;
  o.optimizer = optimizer;
  o.epsilon = adam_epsilon;
  o.lr = 0.01;
  o.loss = train ? "loss" : "";
  PassManager pm({.verify_each = true});  // whatever a pass emits must still validate
  REQUIRE(pm.AddPipeline(driver::CompilePipeline(o)).ok());
  PassContext ctx{ops::GlobalOpRegistry()};
  Status st = pm.Run(**m, ctx);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
  // Every name resolves to its own declaration (passes that delete declarations rebuild the index),
  // and the program's interface is what it was: the feeds are the data inputs, not a parameter.
  ir::Block& block = (*m)->main().global_block();
  for (const auto& v : block.desc().vars()) CHECK(block.FindVar(v.name())->name() == v.name());
  ComputeSignature(**m);
  std::set<std::string> feeds;
  for (const auto& f : (*m)->compiled().feed_targets()) feeds.insert(f.name());
  CHECK(feeds == std::set<std::string>{"img", "label"});
  return std::move(m).value();
}

int Count(const ir::Module& m, const std::string& type) {
  int n = 0;
  for (const auto& op : m.main().global_block().desc().ops()) n += op.type() == type;
  return n;
}

/// Runs `steps` steps of `m` on fixed inputs from the same initial parameters and returns the
/// named variables' final values (and bytes the executor's allocator had in use at its peak).
struct Outcome {
  std::map<std::string, testing::Tensor> values;
  uint64_t peak_bytes = 0;
};
/// With `halve`, that (CPU, float32) variable is halved in place after the first step, as a user
/// loading new weights into the same buffers would.
Outcome RunSteps(ir::Module& m, const Dims& img_dims, int steps, const std::vector<std::string>& fetch,
                 const std::string& halve = "") {
  // Both programs run their products on two threads whatever else the machine runs: with fewer
  // threads while it is busy (runtime/threads.h), oneDNN splits some sums differently, and Adam,
  // which divides each gradient by its own magnitude, turns a rounding-level gradient's difference
  // into a visible step.
  runtime::OverrideMachineBusyForTesting(0);
  struct Unpin {
    ~Unpin() { runtime::OverrideMachineBusyForTesting(-1); }
  } unpin;
  auto exec = exec::Executor::Create(Place::CPU(), {.num_threads = 2, .seed = 3});
  REQUIRE(exec.ok());
  runtime::Scope root;
  REQUIRE((*exec)->RunOnce(m.startup().global_block(), root).ok());
  runtime::Scope& s = root.NewChild();
  REQUIRE((*exec)
              ->device()
              .CopyFromHost(testing::RandomTensor(DType::kFloat32, img_dims, 11, 0, 1), s.Var("img").tensor())
              .ok());
  testing::Tensor label =
      testing::Cast(testing::RandomTensor(DType::kFloat64, {img_dims[0], 1}, 5, 0, 9.99), DType::kInt64);
  REQUIRE((*exec)->device().CopyFromHost(label, s.Var("label").tensor()).ok());
  auto plan = (*exec)->Prepare(m.main().global_block(), s);
  REQUIRE(plan.ok());
  for (int i = 0; i < steps; ++i) {
    REQUIRE((*plan)->Run().ok());
    if (i == 0 && !halve.empty()) {
      runtime::Tensor& t = s.Find(halve)->tensor();
      for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] *= 0.5f;
    }
  }
  Outcome out;
  auto alloc = runtime::CpuCachingAllocator::Create();
  for (const auto& name : fetch) {
    runtime::Variable* v = s.Find(name);
    REQUIRE_MESSAGE(v != nullptr, name);
    testing::Tensor t;
    REQUIRE((*exec)->device().CopyToHost(v->tensor(), t, *alloc).ok());
    out.values[name] = std::move(t);
  }
  out.peak_bytes = (*exec)->device().allocator().stats().peak_bytes_in_use;
  return out;
}

void ExpectSame(const Outcome& got, const Outcome& want, testing::Tolerance tol) {
  for (const auto& [name, t] : want.values) testing::ExpectClose(got.values.at(name), t, tol, name);
}

TEST_CASE("fuse-fc keeps the MLP's inference outputs, with three fc ops instead of nine") {
  auto plain = Compile("mlp.pbtxt", false, true, 0);
  auto fused = Compile("mlp.pbtxt", false, true, 1);
  CHECK(Count(*fused, "fc") == 3);
  CHECK(Count(*fused, "mul") == 0);
  CHECK(Count(*fused, "relu") == 0);
  CHECK(Count(*fused, "elementwise_add") == 0);
  ExpectSame(RunSteps(*fused, {6, 784}, 1, {"prob", "loss"}), RunSteps(*plain, {6, 784}, 1, {"prob", "loss"}),
             {1e-5, 1e-4});
}

TEST_CASE("-O2 keeps LeNet's inference outputs with fewer bytes allocated") {
  auto plain = Compile("lenet.pbtxt", false, true, 0);
  auto opt = Compile("lenet.pbtxt", false, true, 2);
  CHECK(Count(*opt, "fused_conv2d_bn_act") == 2);
  CHECK(Count(*opt, "pool2d") == 0);  // fuse-conv-pool: pooled in oneDNN's blocked layout
  CHECK(Count(*opt, "fc") == 2);
  // layout: conv1's pooled result goes to conv2 in oneDNN's blocked layout, under a name of its own.
  int blocked_out = 0, blocked_in = 0;
  for (const auto& op : opt->main().global_block().desc().ops())
    for (const auto& attr : op.attrs()) {
      blocked_out += attr.name() == "blocked_output" && attr.b();
      blocked_in += attr.name() == "blocked_input" && attr.b();
    }
  CHECK(blocked_out == 1);
  CHECK(blocked_in == 1);
  CHECK(opt->main().global_block().FindVar("conv1.pool@BLOCKED") != nullptr);
  auto a = RunSteps(*plain, {5, 1, 28, 28}, 2, {"prob", "loss"});
  auto b = RunSteps(*opt, {5, 1, 28, 28}, 2, {"prob", "loss"});
  ExpectSame(b, a, {1e-5, 1e-4});
  CHECK(b.peak_bytes < a.peak_bytes);
  // The fused convolutions fold and reorder their weights once and reuse them while they are
  // unchanged; new values in the same buffers must be seen (batch norm's scale and the filter).
  for (const char* param : {"conv2.w", "conv1.bn.scale"}) {
    CAPTURE(param);
    auto c = RunSteps(*plain, {5, 1, 28, 28}, 2, {"prob", "loss"}, param);
    auto d = RunSteps(*opt, {5, 1, 28, 28}, 2, {"prob", "loss"}, param);
    ExpectSame(d, c, {1e-5, 1e-4});
    // ... and they changed the outputs, or the case proves nothing.
    const std::vector<double> changed = testing::ToDoubles(c.values.at("prob")),
                              before = testing::ToDoubles(a.values.at("prob"));
    double diff = 0;
    for (size_t k = 0; k < before.size(); ++k) diff = std::max(diff, std::abs(changed[k] - before[k]));
    CHECK(diff > 1e-4);
  }
}

std::vector<std::string> Parameters(const ir::Module& m) {
  std::vector<std::string> names(m.compiled().parameters().begin(), m.compiled().parameters().end());
  names.push_back("loss");
  return names;
}

TEST_CASE("-O2 training (fuse-fc, plan-memory) gives the -O0 parameters after three SGD and three Adam steps") {
  for (const char* config : {"mlp.pbtxt", "lenet.pbtxt"}) {
    CAPTURE(config);
    const bool lenet = std::string(config) == "lenet.pbtxt";
    const Dims img = lenet ? Dims{8, 1, 28, 28} : Dims{8, 784};
    // SGD moves each weight by lr times its gradient, so the parameters compare the gradients
    // themselves: equal but for float reassociation (different kernels and layouts at -O2).
    auto sgd_plain = Compile(config, true, false, 0, "sgd");
    auto sgd_opt = Compile(config, true, false, 2, "sgd");
    ExpectSame(RunSteps(*sgd_opt, img, 3, Parameters(*sgd_plain)), RunSteps(*sgd_plain, img, 3, Parameters(*sgd_plain)),
               {1e-7, 1e-5});
    // Adam divides each gradient by its own running magnitude plus epsilon. With the default 1e-8, a
    // weight whose gradient is rounding noise steps by a sizeable fraction of lr (0.01) in a
    // direction the noise decides: LeNet's fc1.w has such a weight, 2.2e-5 apart after three steps
    // (2.0e-4 in the ASan build). With epsilon 1e-4 a step differs by at most lr / epsilon = 100
    // times the gradients' difference, which is rounding (under 1e-7 for fc1.w): 1.8e-5 after three
    // steps, 4.3e-5 in the ASan build.
    auto plain = Compile(config, true, false, 0, "adam", 1e-4);
    auto opt = Compile(config, true, false, 2, "adam", 1e-4);
    CHECK(opt->main().global_block().desc().vars_size() < plain->main().global_block().desc().vars_size());
    // fuse-fc in training: every layer (the bias gradients read the fc outputs for their dims).
    CHECK(Count(*opt, "fc") == (lenet ? 2 : 3));
    CHECK(Count(*opt, "mul") == 0);
    auto a = RunSteps(*plain, img, 3, Parameters(*plain));
    auto b = RunSteps(*opt, img, 3, Parameters(*plain));
    ExpectSame(b, a, {1e-4, 1e-4});
    CHECK(b.peak_bytes < a.peak_bytes);
  }
}

TEST_CASE("fuse-elementwise fuses a residual add and relu in training and keeps the parameters") {
  auto plain = Compile("residual", true, false, 0);
  auto opt = Compile("residual", true, false, 1);
  CHECK(Count(*opt, "fused_elemwise_activation") == 1);
  CHECK(Count(*opt, "relu") == 0);
  CHECK(Count(*opt, "relu_grad") == 1);  // the gradient reads the fused op's output
  ExpectSame(RunSteps(*opt, {8, 16}, 3, Parameters(*plain)), RunSteps(*plain, {8, 16}, 3, Parameters(*plain)),
             {1e-6, 1e-5});
}

/// How many ops of `m` have the boolean attribute `attr` set.
int Flagged(const ir::Module& m, const std::string& attr) {
  int n = 0;
  for (const auto& op : m.main().global_block().desc().ops())
    for (const auto& a : op.attrs()) n += a.name() == attr && a.b();
  return n;
}

TEST_CASE("layout keeps a ResNet's activations blocked in training, with the -O0 parameters") {
  auto plain = Compile("resnet", true, false, 0);
  auto opt = Compile("resnet", true, false, 2);
  // Layers: l0 the stem, l1 and l2 the first block, l4 and l5 the second with l6 its projection.
  // Blocked, with their gradients: every tensor from the stem's output to the global pooling's
  // input (the pooling reads blocked and writes NCHW). Not: the image and the pooled result.
  int blocked_vars = 0;
  for (const auto& v : opt->main().global_block().desc().vars()) blocked_vars += v.name().ends_with("@BLOCKED");
  CHECK(blocked_vars > 0);
  CHECK(Flagged(*opt, "blocked_input") == 12);   // conv2d l1, l2, l4, l5, l6, pool2d, and their gradients
  CHECK(Flagged(*opt, "blocked_output") == 12);  // conv2d l0, l1, l2, l4, l5, l6 and their gradients
  CHECK(Flagged(*opt, "blocked") == 12);         // batch_norm l0, l1, l2, l4, l5, l6 and their gradients
  auto a = RunSteps(*plain, {4, 3, 8, 8}, 3, Parameters(*plain));
  auto b = RunSteps(*opt, {4, 3, 8, 8}, 3, Parameters(*plain));
  // Blocked, the 8x8 stage runs on Winograd's 4x4 tiles (nn/winograd.h: rounding up to about 4e-6
  // of the largest value per convolution), plain on oneDNN; three steps compound the difference
  // (2.5e-5 on a weight of 0.12 in the ASan build).
  ExpectSame(b, a, {1e-5, 3e-4});
}

TEST_CASE("layout keeps a ResNet's inference outputs, blocked through the residual add") {
  auto plain = Compile("resnet", false, true, 0);
  auto opt = Compile("resnet", false, true, 2);
  CHECK(Flagged(*opt, "blocked_output") >= 2);
  ExpectSame(RunSteps(*opt, {4, 3, 8, 8}, 1, {"prob"}), RunSteps(*plain, {4, 3, 8, 8}, 1, {"prob"}), {1e-5, 1e-4});
}

TEST_CASE("fold and dce compute what the unfolded chain computes") {
  constexpr char kChain[] = R"pb(
    blocks {
      idx: 0
      parent_idx: -1
      vars {
        name: "x"
        type {
          type: LOD_TENSOR
          lod_tensor { tensor { data_type: FP32 dims: 2 dims: 3 } }
        }
      }
      ops {
        type: "fill_constant"
        outputs { parameter: "Out" arguments: "c" }
        attrs { name: "shape" type: LONGS longs: 2 longs: 3 }
        attrs { name: "value" type: FLOAT f: 0.3 }
      }
      ops {
        type: "scale"
        inputs { parameter: "X" arguments: "c" }
        outputs { parameter: "Out" arguments: "s" }
        attrs { name: "scale" type: FLOAT f: 3 }
        attrs { name: "bias" type: FLOAT f: 0.1 }
        attrs { name: "bias_after_scale" type: BOOLEAN b: false }
      }
      ops {
        type: "assign"
        inputs { parameter: "X" arguments: "s" }
        outputs { parameter: "Out" arguments: "a" }
      }
      ops {
        type: "elementwise_mul"
        inputs { parameter: "X" arguments: "x" }
        inputs { parameter: "Y" arguments: "a" }
        outputs { parameter: "Out" arguments: "y" }
      }
    }
  )pb";
  auto plain = testing::CompileText(kChain, "validate,infer-shape");
  auto folded = testing::CompileText(kChain, "validate,infer-shape,fold,dce");
  REQUIRE(plain.ok());
  REQUIRE(folded.ok());
  CHECK(Count(**folded, "fill_constant") == 1);
  CHECK((*folded)->main().global_block().num_ops() == 2);
  const std::map<std::string, testing::Tensor> feeds{{"x", testing::RandomTensor(DType::kFloat32, {2, 3}, 4)}};
  auto a = testing::RunModule(**plain, feeds, {"y"});
  auto b = testing::RunModule(**folded, feeds, {"y"});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  testing::ExpectClose(b->at("y"), a->at("y"), {0, 0}, "y");
}

TEST_CASE("fuse-conv-bias-act keeps a conv + bias + relu network's outputs") {
  constexpr char kConvBias[] = R"pb(
    blocks {
      idx: 0
      parent_idx: -1
      vars {
        name: "x"
        type {
          type: LOD_TENSOR
          lod_tensor { tensor { data_type: FP32 dims: -1 dims: 3 dims: 9 dims: 9 } }
        }
      }
      vars {
        name: "w"
        type {
          type: LOD_TENSOR
          lod_tensor { tensor { data_type: FP32 dims: 8 dims: 3 dims: 3 dims: 3 } }
        }
        persistable: true
      }
      vars {
        name: "b"
        type {
          type: LOD_TENSOR
          lod_tensor { tensor { data_type: FP32 dims: 8 } }
        }
        persistable: true
      }
      ops {
        type: "conv2d"
        inputs { parameter: "Input" arguments: "x" }
        inputs { parameter: "Filter" arguments: "w" }
        outputs { parameter: "Output" arguments: "c" }
        attrs { name: "paddings" type: INTS ints: 1 ints: 1 }
        attrs { name: "strides" type: INTS ints: 2 ints: 2 }
      }
      ops {
        type: "elementwise_add"
        inputs { parameter: "X" arguments: "c" }
        inputs { parameter: "Y" arguments: "b" }
        outputs { parameter: "Out" arguments: "a" }
        attrs { name: "axis" type: INT i: 1 }
      }
      ops {
        type: "relu"
        inputs { parameter: "X" arguments: "a" }
        outputs { parameter: "Out" arguments: "y" }
      }
    }
  )pb";
  auto plain = testing::CompileText(kConvBias, "validate,infer-shape");
  auto fused = testing::CompileText(kConvBias, "validate,infer-shape,fuse-conv-bias-act,dce");
  REQUIRE(plain.ok());
  REQUIRE(fused.ok());
  CHECK(Count(**fused, "fused_conv2d_bn_act") == 1);
  CHECK((*fused)->main().global_block().num_ops() == 1);
  const std::map<std::string, testing::Tensor> feeds{{"x", testing::RandomTensor(DType::kFloat32, {4, 3, 9, 9}, 4)},
                                                     {"w", testing::RandomTensor(DType::kFloat32, {8, 3, 3, 3}, 5)},
                                                     {"b", testing::RandomTensor(DType::kFloat32, {8}, 6)}};
  auto a = testing::RunModule(**plain, feeds, {"y"});
  auto b = testing::RunModule(**fused, feeds, {"y"});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  testing::ExpectClose(b->at("y"), a->at("y"), {1e-5, 1e-5}, "y");
}

TEST_CASE("plan-memory leaves feeds, the loss, gradients and program outputs under their names") {
  auto m = Compile("lenet.pbtxt", true, false, 2);
  std::set<std::string> vars;
  for (const auto& v : m->main().global_block().desc().vars()) vars.insert(v.name());
  for (const char* name : {"img", "label", "loss", "prob"}) CHECK_MESSAGE(vars.count(name), name);
  for (const auto& pg : m->compiled().param_grads()) CHECK_MESSAGE(vars.count(pg.grad()), pg.grad());
}

}  // namespace
}  // namespace paddlec::passes
