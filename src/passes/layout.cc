// Pass "layout": activations passed between oneDNN-capable kernels stay in oneDNN's channel-blocked
// layout, so the reorders to NCHW and back around each convolution disappear: in inference between
// fused convolutions (LeNet: conv1's pooled result, read only by conv2), in training through whole
// residual stages (ResNet: conv2d, batch_norm, relu, the residual add, their gradients and the sums
// of gradients; each 16-channel convolution reordered four to five 4 MB tensors per step).
//
// Requires: validate, infer-shape, the fusions (if any) before it, and plan-memory (if any) after it.
// Guarantees: a float32 variable of the global block with known NCHW dims whose channel count is a
// multiple of 16 holds nChw16c (nChw8c without AVX-512: 16 channels is a whole number of blocks on
// every CPU, so the buffer keeps its NCHW size, see nn/conv_onednn.h) when every op that names it
// reads or writes it through a slot that honours the layout:
//   - conv2d (one group, NCHW) and fused_conv2d_bn_act: Input and Output, flagged by blocked_input
//     and blocked_output; conv2d_grad: Input with Input@GRAD, and Output@GRAD, flagged the same way;
//   - batch_norm (NCHW): X with Y; batch_norm_grad: X with Y@GRAD and X@GRAD; flagged by blocked;
//   - pool2d (NCHW) with 2x2 max windows of stride 2 and no padding over even sizes, or a global
//     average: X and Out; pool2d_grad: X with X@GRAD, and Out with Out@GRAD; flagged by
//     blocked_input and blocked_output (LeNet: conv1's pooled result, conv2's input; ResNet: the
//     last stage's sum, read by the global pooling);
//   - element-wise ops whose tensors all have one shape, known but for the batch (relu,
//     elementwise_add, sum, ..., and their gradients): all of them, with no flag, since position i
//     means the same element in each.
// Tensors an op ties together (the last two cases, and a variable with its own gradient in
// conv2d_grad) are blocked together or not at all, and only groups a convolution reads or writes
// are blocked (elsewhere there is no reorder to save). Since a blocked tensor's bytes are no longer
// NCHW, it is renamed to `<name>@BLOCKED`: fetching the old name after -O2 is an error, never a
// scrambled value. Never blocked: feeds, fetch targets, what the caller keeps (PassContext::kept),
// the loss, persistable variables, variables other blocks name, variables nothing writes (inputs a
// caller feeds) and variables nothing reads (results a caller may fetch). Values are unchanged up
// to float reassociation (the same kernels run on another layout, minus the reorders).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "op_pattern.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

using namespace pattern;  // NOLINT

constexpr int64_t kChannelMultiple = 16;

void SetBool(pb::OpDesc& op, std::string_view name) {
  for (auto& a : *op.mutable_attrs())
    if (a.name() == name) {
      a = ops::MakeAttr(std::string(name), true);
      return;
    }
  *op.add_attrs() = ops::MakeAttr(std::string(name), true);
}

std::string StringAttr(const pb::OpDesc& op, std::string_view name) {
  const auto* a = FindAttr(op, name);
  return a != nullptr && a->type() == pb::STRING ? a->s() : std::string();
}

/// Ops whose tensors are element-wise aligned when they all have one shape, whatever the layout.
bool ElementWise(std::string_view type) {
  constexpr std::string_view kOps[] = {"relu",
                                       "relu_grad",
                                       "elementwise_add",
                                       "elementwise_add_grad",
                                       "sum",
                                       "fused_elemwise_activation",
                                       "fused_elemwise_activation_grad"};
  return std::find(std::begin(kOps), std::end(kOps), type) != std::end(kOps);
}

/// Whether an argument names a variable (not an absent one: "" or @EMPTY@).
bool Named(const std::string& arg) { return !arg.empty() && arg != ir::kEmptyVarName; }

/// Union-find over variable names.
class Groups {
 public:
  int Id(const std::string& name) {
    auto [it, fresh] = ids_.try_emplace(name, static_cast<int>(parent_.size()));
    if (fresh) parent_.push_back(it->second);
    return it->second;
  }
  int Find(int i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  void Join(const std::string& a, const std::string& b) {
    int x = Find(Id(a)), y = Find(Id(b));
    if (x != y) parent_[x] = y;
  }
  int FindName(const std::string& name) { return Find(Id(name)); }

 private:
  std::unordered_map<std::string, int> ids_;
  std::vector<int> parent_;
};

class LayoutPass final : public Pass {
 public:
  std::string_view Name() const override { return "layout"; }
  std::string_view Summary() const override {
    return "keep activations between convolutions, batch norms, poolings and element-wise ops in oneDNN's blocked "
           "layout (reorders only at the edges), in inference and training";
  }

  StatusOr<bool> Run(ir::Module& module, PassContext& ctx) override {
    ir::Program& program = module.main();
    if (program.num_blocks() == 0) return false;
    std::set<std::string, std::less<>> fixed;
    for (const auto& f : module.compiled().feed_targets()) fixed.insert(f.name());
    for (const auto& f : module.compiled().fetch_targets()) fixed.insert(f);
    fixed.insert(ctx.kept.begin(), ctx.kept.end());
    fixed.insert(module.compiled().loss());
    for (int b = 1; b < program.num_blocks(); ++b)
      for (const auto& op : program.block(b).desc().ops())
        for (const auto* slots : {&op.inputs(), &op.outputs()})
          for (const auto& s : *slots)
            for (const auto& a : s.arguments()) fixed.insert(a);
    return RunBlock(program.global_block(), fixed);
  }

 private:
  /// How an op meets the layout: for each of its slots, the name of the side it belongs to ("in",
  /// "out", "x"; slots with the same side share one layout), or none when the slot needs NCHW.
  struct Sides {
    std::vector<std::pair<std::string_view, std::string_view>> slots;  // (slot, side)
    std::string_view Of(std::string_view slot) const {
      for (const auto& [s, side] : slots)
        if (s == slot) return side;
      return {};
    }
  };

  static std::optional<Sides> SidesOf(const pb::OpDesc& op, const ir::Block& block) {
    const std::string& t = op.type();
    if (t == "fused_conv2d_bn_act") return Sides{{{"Input", "in"}, {"Output", "out"}}};
    if (t == "conv2d" || t == "conv2d_grad") {
      if (IntAttr(op, "groups", 1) != 1 || StringAttr(op, "data_format") == "NHWC") return std::nullopt;
      if (t == "conv2d") return Sides{{{"Input", "in"}, {"Output", "out"}}};
      return Sides{{{"Input", "in"}, {"Input@GRAD", "in"}, {"Output@GRAD", "out"}}};
    }
    if (t == "batch_norm" || t == "batch_norm_grad") {
      if (StringAttr(op, "data_layout") == "NHWC") return std::nullopt;
      if (t == "batch_norm") return Sides{{{"X", "x"}, {"Y", "x"}}};
      return Sides{{{"X", "x"}, {"Y@GRAD", "x"}, {"X@GRAD", "x"}}};
    }
    if (t == "pool2d" || t == "pool2d_grad") {
      if (!LanePool(op, block)) return std::nullopt;
      if (t == "pool2d") return Sides{{{"X", "in"}, {"Out", "out"}}};
      return Sides{{{"X", "in"}, {"X@GRAD", "in"}, {"Out", "out"}, {"Out@GRAD", "out"}}};
    }
    if (ElementWise(t)) {
      // Aligned only when every tensor has the same dims (no broadcast). Unknown channel or spatial
      // dims could turn out 1 at run time and broadcast, which the blocked layout would scramble; a
      // batch broadcast keeps each image's blocks aligned.
      std::optional<Dims> shape;
      Sides sides;
      for (const auto* slots : {&op.inputs(), &op.outputs()})
        for (const auto& s : *slots) {
          for (const auto& a : s.arguments()) {
            if (!Named(a)) continue;
            const pb::VarDesc* v = block.FindVar(a);
            auto dims = v != nullptr && ir::IsTensorVar(*v) ? ir::VarDims(*v) : StatusOr<Dims>(Dims{});
            if (!dims.ok() || dims->rank() != 4 || (shape && !(*shape == *dims))) return std::nullopt;
            if ((*dims)[1] < 0 || (*dims)[2] < 0 || (*dims)[3] < 0) return std::nullopt;
            shape = *dims;
          }
          sides.slots.emplace_back(s.parameter(), "x");
        }
      return sides;
    }
    return std::nullopt;
  }

  /// Whether the pooling of `op` has kernels for blocked tensors (nn/pool.cc's LanePoolOf).
  static bool LanePool(const pb::OpDesc& op, const ir::Block& block) {
    if (StringAttr(op, "data_format") == "NHWC" || BoolAttr(op, "adaptive")) return false;
    const bool max = StringAttr(op, "pooling_type") != "avg";
    if (BoolAttr(op, "global_pooling")) return !max;
    const std::string alg = StringAttr(op, "padding_algorithm");
    auto ints = [&](std::string_view name) {
      const auto* a = FindAttr(op, name);
      return a == nullptr ? std::vector<int>() : std::vector<int>(a->ints().begin(), a->ints().end());
    };
    const std::vector<int> paddings = ints("paddings");
    if (!max || ints("ksize") != std::vector<int>{2, 2} || ints("strides") != std::vector<int>{2, 2} ||
        (alg != "" && alg != "EXPLICIT" && alg != "VALID") ||
        std::any_of(paddings.begin(), paddings.end(), [](int p) { return p != 0; }))
      return false;
    const std::string* x = Single(op, true, "X");
    const pb::VarDesc* v = x != nullptr ? block.FindVar(*x) : nullptr;
    auto dims = v != nullptr && ir::IsTensorVar(*v) ? ir::VarDims(*v) : StatusOr<Dims>(Dims{});
    return dims.ok() && dims->rank() == 4 && (*dims)[2] > 0 && (*dims)[3] > 0 && (*dims)[2] % 2 == 0 &&
           (*dims)[3] % 2 == 0;
  }

  static bool IsConv(const pb::OpDesc& op) {
    return op.type() == "conv2d" || op.type() == "conv2d_grad" || op.type() == "fused_conv2d_bn_act";
  }

  static bool Blockable(const pb::VarDesc* v) {
    if (v == nullptr || v->persistable() || !ir::IsTensorVar(*v) || ir::VarDType(*v) != DType::kFloat32) return false;
    auto dims = ir::VarDims(*v);
    return dims.ok() && dims->rank() == 4 && (*dims)[1] > 0 && (*dims)[1] % kChannelMultiple == 0;
  }

  static bool RunBlock(ir::Block& block, const std::set<std::string, std::less<>>& fixed) {
    ir::DefUse du(block);
    auto& ops = *block.desc().mutable_ops();
    std::vector<std::optional<Sides>> sides(ops.size());
    Groups groups;
    // 1. Tie together what an op needs in one layout.
    for (int i = 0; i < ops.size(); ++i) {
      sides[i] = SidesOf(ops[i], block);
      if (!sides[i]) continue;
      std::map<std::string_view, std::string> first;  // side -> its first variable
      for (const auto* slots : {&ops[i].inputs(), &ops[i].outputs()})
        for (const auto& s : *slots) {
          std::string_view side = sides[i]->Of(s.parameter());
          if (side.empty()) continue;
          for (const auto& a : s.arguments()) {
            if (!Named(a)) continue;
            auto [it, fresh] = first.try_emplace(side, a);
            if (!fresh) groups.Join(it->second, a);
          }
        }
    }
    // 2. A group stays NCHW when any variable in it cannot be blocked or is named through a slot that
    // needs NCHW; it is worth blocking only when a convolution reads or writes it.
    std::set<int> plain, convolved;
    for (int i = 0; i < ops.size(); ++i)
      for (const auto* slots : {&ops[i].inputs(), &ops[i].outputs()})
        for (const auto& s : *slots) {
          std::string_view side = sides[i] ? sides[i]->Of(s.parameter()) : std::string_view();
          for (const auto& a : s.arguments()) {
            if (!Named(a)) continue;
            const int g = groups.FindName(a);
            const bool ok = !side.empty() && !fixed.count(a) && !du.Readers(a).empty() && !du.Writers(a).empty() &&
                            block.FindVarBlock(a) == &block && Blockable(block.FindVar(a)) &&
                            block.FindVar(a + "@BLOCKED") == nullptr;
            if (!ok) plain.insert(g);
            if (!side.empty() && IsConv(ops[i])) convolved.insert(g);
          }
        }
    auto blocked = [&](const std::string* name) {
      if (name == nullptr) return false;
      const int g = groups.FindName(*name);
      return convolved.count(g) > 0 && plain.count(g) == 0;
    };
    // 3. Flag the ops and rename the blocked variables.
    std::set<std::string> renamed;
    for (int i = 0; i < ops.size(); ++i) {
      if (!sides[i]) continue;
      pb::OpDesc& op = ops[i];
      for (const auto* slots : {&op.inputs(), &op.outputs()})
        for (const auto& s : *slots)
          for (const auto& a : s.arguments())
            if (!sides[i]->Of(s.parameter()).empty() && blocked(&a)) renamed.insert(a);
      if (op.type() == "batch_norm" || op.type() == "batch_norm_grad") {
        if (blocked(Single(op, true, "X"))) SetBool(op, "blocked");
      } else if (op.type() == "pool2d" || op.type() == "pool2d_grad") {
        const bool grad = op.type() == "pool2d_grad";
        if (blocked(Single(op, true, "X"))) SetBool(op, "blocked_input");
        if (blocked(Single(op, grad, grad ? "Out@GRAD" : "Out"))) SetBool(op, "blocked_output");
      } else if (IsConv(op)) {
        if (blocked(Single(op, true, "Input"))) SetBool(op, "blocked_input");
        if (blocked(Single(op, op.type() == "conv2d_grad", op.type() == "conv2d_grad" ? "Output@GRAD" : "Output")))
          SetBool(op, "blocked_output");
      }
    }
    if (renamed.empty()) return false;
    for (const std::string& name : renamed) block.FindVar(name)->set_name(name + "@BLOCKED");
    for (auto& op : ops)
      for (auto* slots : {op.mutable_inputs(), op.mutable_outputs()})
        for (auto& s : *slots)
          for (auto& a : *s.mutable_arguments())
            if (renamed.count(a)) a = a + "@BLOCKED";
    block.RebuildIndex();  // the name index holds the old names
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateLayoutPass() { return std::make_unique<LayoutPass>(); }

}  // namespace paddlec::passes
