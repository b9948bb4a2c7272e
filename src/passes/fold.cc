// Pass "fold": constant folding of fill_constant chains at compile time.
//
// Requires: validate (attribute defaults filled in).
// Guarantees: a fill_constant whose output (not persistable, written once) is read only by a scale,
// a cast or an assign is merged with it into one fill_constant writing that op's output: the value
// is computed here (scale's a * v + b or a * (v + b) in float, as the kernel does for float32; a
// cast changes the dtype; integer targets round toward zero as the kernels' casts do) and the
// shape is kept. Repeats, so chains fold to one op. Only static fills take part: no ValueTensor or
// ShapeTensor inputs, and a numeric `str_value` (the exact int64 form) is read as the value.
#include <cmath>
#include <set>

#include "op_pattern.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

using namespace pattern;  // NOLINT

bool StaticFill(const pb::OpDesc& op) {
  if (op.type() != "fill_constant") return false;
  for (const auto& s : op.inputs())
    if (s.arguments_size() > 0) return false;
  const auto* str = FindAttr(op, "str_value");
  return str == nullptr || str->s().empty();
}

void SetAttr(pb::OpDesc& op, pb::OpDesc::Attr attr) {
  for (auto& a : *op.mutable_attrs())
    if (a.name() == attr.name()) {
      a = std::move(attr);
      return;
    }
  *op.add_attrs() = std::move(attr);
}

bool IsIntegerVarType(int64_t t) {  // BOOL 0, INT16 1, INT32 2, INT64 3, UINT8 20, INT8 21
  return t == 0 || t == 1 || t == 2 || t == 3 || t == 20 || t == 21;
}

class FoldPass final : public Pass {
 public:
  std::string_view Name() const override { return "fold"; }
  std::string_view Summary() const override { return "fold fill_constant -> scale / cast / assign chains"; }

  StatusOr<bool> Run(ir::Module& module, PassContext&) override {
    bool changed = false;
    for (int b = 0; b < module.main().num_blocks(); ++b)
      while (FoldOnce(module.main().block(b))) changed = true;
    return changed;
  }

 private:
  static bool FoldOnce(ir::Block& block) {
    ir::DefUse du(block);
    auto& ops = *block.desc().mutable_ops();
    for (int i = 0; i < ops.size(); ++i) {
      const pb::OpDesc& fill = ops[i];
      if (!StaticFill(fill)) continue;
      const std::string* out = Single(fill, false, "Out");
      if (out == nullptr || du.Writers(*out).size() != 1 || du.Readers(*out).size() != 1) continue;
      const pb::VarDesc* v = block.FindVar(*out);
      if (v == nullptr || v->persistable()) continue;
      const int j = du.Readers(*out)[0];
      pb::OpDesc& user = ops[j];
      const std::string* x = Single(user, true, "X");
      const std::string* y = Single(user, false, "Out");
      if (j <= i || x == nullptr || *x != *out || y == nullptr || *y == *out) continue;
      const auto* value_attr = FindAttr(fill, "value");
      double value = value_attr != nullptr ? value_attr->f() : 0.0;
      int64_t dtype = IntAttr(fill, "dtype", 5);
      if (user.type() == "scale") {
        bool has_tensor = false;
        for (const auto& s : user.inputs()) has_tensor |= s.parameter() == "ScaleTensor" && s.arguments_size() > 0;
        if (has_tensor || IsIntegerVarType(dtype)) continue;
        const float a = FindAttr(user, "scale") ? FindAttr(user, "scale")->f() : 1.0f;
        const float bias = FindAttr(user, "bias") ? FindAttr(user, "bias")->f() : 0.0f;
        const bool after = FindAttr(user, "bias_after_scale") == nullptr || FindAttr(user, "bias_after_scale")->b();
        const float f = static_cast<float>(value);
        value = after ? a * f + bias : a * (f + bias);
      } else if (user.type() == "cast") {
        dtype = IntAttr(user, "out_dtype", dtype);
        if (IsIntegerVarType(dtype)) value = std::trunc(value);
        if (dtype == 0) value = value != 0.0 ? 1.0 : 0.0;
      } else if (user.type() != "assign") {
        continue;
      }
      pb::OpDesc folded = fill;
      folded.mutable_outputs(0)->set_arguments(0, *y);
      SetAttr(folded, ops::MakeAttr("value", static_cast<float>(value)));
      SetAttr(folded, ops::MakeAttr("dtype", static_cast<int>(dtype)));
      for (const char* name : {"op_role", "op_namescope"})
        if (const auto* a = FindAttr(user, name)) SetAttr(folded, *a);
      user = std::move(folded);
      block.RemoveOp(i);
      return true;
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFoldPass() { return std::make_unique<FoldPass>(); }

}  // namespace paddlec::passes
