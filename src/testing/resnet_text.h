// ResNet-style programs as ProgramDesc textprotos, for benchmarks and tests of convolutional
// training: a 3x3 stem, stages of basic blocks (two 3x3 convolutions with batch norm, the first
// relu'd, added to the shortcut and relu'd), a stride 2 and a 1x1 projection where a stage changes the
// channels, global average pooling and a softmax cross-entropy classifier. Header-only, so that
// tools without the test library (paddlec_bench) share it.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

namespace paddlec::testing {

struct ResNetSpec {
  int64_t image = 32;                      // input images are 3 x image x image
  std::vector<int> stages = {16, 32, 64};  // each stage's channels
  int blocks = 3;                          // basic blocks per stage
  int classes = 10;
};

/// The network of `spec` with a batch of -1: feeds "img" (float32 [N, 3, image, image]) and "label"
/// (int64 [N, 1]); the loss is "loss". Layers are named l0, l1, ... (their filter `.w`, batch-norm
/// `.s .b .m .v`, outputs `.c .y .r`).
inline std::string ResNetText(const ResNetSpec& spec = {}) {
  std::string vars, ops;
  auto var = [&](const std::string& n, const std::vector<int64_t>& d, bool param = false, const char* t = "FP32") {
    std::string dims;
    for (int64_t x : d) dims += fmt::format(" dims: {}", x);
    vars += fmt::format(
        "  vars {{ name: \"{}\" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: {}{} }} }} }}{} }}\n", n, t,
        dims, param ? " persistable: true" : "");
  };
  auto op = [&](const std::string& text) { ops += "  ops { " + text + " }\n"; };
  int id = 0;
  auto conv_bn = [&](const std::string& x, int cin, int cout, int k, int stride, bool relu) {
    std::string p = fmt::format("l{}", id++);
    var(p + ".w", {cout, cin, k, k}, true);
    for (const char* s : {".s", ".b", ".m", ".v"}) var(p + s, {cout}, true);
    op(fmt::format(
        R"(type: "conv2d" inputs {{ parameter: "Input" arguments: "{0}" }} inputs {{ parameter: "Filter" arguments: "{1}.w" }} outputs {{ parameter: "Output" arguments: "{1}.c" }} attrs {{ name: "strides" type: INTS ints: {2} ints: {2} }} attrs {{ name: "paddings" type: INTS ints: {3} ints: {3} }})",
        x, p, stride, k / 2));
    op(fmt::format(
        R"(type: "batch_norm" inputs {{ parameter: "X" arguments: "{0}.c" }} inputs {{ parameter: "Scale" arguments: "{0}.s" }} inputs {{ parameter: "Bias" arguments: "{0}.b" }} inputs {{ parameter: "Mean" arguments: "{0}.m" }} inputs {{ parameter: "Variance" arguments: "{0}.v" }} outputs {{ parameter: "Y" arguments: "{0}.y" }} outputs {{ parameter: "MeanOut" arguments: "{0}.m" }} outputs {{ parameter: "VarianceOut" arguments: "{0}.v" }} outputs {{ parameter: "SavedMean" arguments: "{0}.sm" }} outputs {{ parameter: "SavedVariance" arguments: "{0}.sv" }})",
        p));
    if (!relu) return p + ".y";
    op(fmt::format(
        R"(type: "relu" inputs {{ parameter: "X" arguments: "{0}.y" }} outputs {{ parameter: "Out" arguments: "{0}.r" }})",
        p));
    return p + ".r";
  };
  var("img", {-1, 3, spec.image, spec.image});
  var("label", {-1, 1}, false, "INT64");
  int cin = spec.stages.empty() ? 3 : spec.stages.front();
  std::string x = conv_bn("img", 3, cin, 3, 1, true);
  for (size_t stage = 0; stage < spec.stages.size(); ++stage) {
    const int cout = spec.stages[stage];
    for (int block = 0; block < spec.blocks; ++block) {
      const int stride = (stage > 0 && block == 0) ? 2 : 1;
      std::string a = conv_bn(x, cin, cout, 3, stride, true);
      std::string b = conv_bn(a, cout, cout, 3, 1, false);
      std::string shortcut = stride == 1 && cin == cout ? x : conv_bn(x, cin, cout, 1, stride, false);
      std::string sum = fmt::format("add{}", id++);
      op(fmt::format(
          R"(type: "elementwise_add" inputs {{ parameter: "X" arguments: "{}" }} inputs {{ parameter: "Y" arguments: "{}" }} outputs {{ parameter: "Out" arguments: "{}" }})",
          b, shortcut, sum));
      op(fmt::format(
          R"(type: "relu" inputs {{ parameter: "X" arguments: "{0}" }} outputs {{ parameter: "Out" arguments: "{0}.r" }})",
          sum));
      x = sum + ".r";
      cin = cout;
    }
  }
  op(fmt::format(
      R"(type: "pool2d" inputs {{ parameter: "X" arguments: "{}" }} outputs {{ parameter: "Out" arguments: "gap" }} attrs {{ name: "pooling_type" type: STRING s: "avg" }} attrs {{ name: "ksize" type: INTS ints: 1 ints: 1 }} attrs {{ name: "global_pooling" type: BOOLEAN b: true }})",
      x));
  var("fc.w", {cin, spec.classes}, true);
  op(R"(type: "mul" inputs { parameter: "X" arguments: "gap" } inputs { parameter: "Y" arguments: "fc.w" } outputs { parameter: "Out" arguments: "logits" })");
  op(R"(type: "softmax_with_cross_entropy" inputs { parameter: "Logits" arguments: "logits" } inputs { parameter: "Label" arguments: "label" } outputs { parameter: "Softmax" arguments: "prob" } outputs { parameter: "Loss" arguments: "loss_vec" })");
  op(R"(type: "mean" inputs { parameter: "X" arguments: "loss_vec" } outputs { parameter: "Out" arguments: "loss" })");
  return "blocks { idx: 0 parent_idx: -1\n" + vars + ops + "}\n";
}

}  // namespace paddlec::testing
