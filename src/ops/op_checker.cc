// OpDesc validation against OpProtos and compile-time shape inference.
#include "paddlec/ops/op_checker.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "paddlec/core/suggest.h"

namespace paddlec::ops {
namespace {

using ir::pb::OpDesc;
using ir::pb::OpProto;

std::string JoinSlotNames(const google::protobuf::RepeatedPtrField<OpProto::Var>& vars) {
  std::string s;
  for (const auto& v : vars) s += (s.empty() ? "" : ", ") + v.name();
  return s.empty() ? "none" : s;
}

std::string FormatNumber(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

/// Numeric values of an attribute, for range checks.
std::vector<double> NumericValues(const OpDesc::Attr& a) {
  std::vector<double> v;
  switch (a.type()) {
    case ir::pb::INT: v.push_back(a.i()); break;
    case ir::pb::LONG: v.push_back(static_cast<double>(a.l())); break;
    case ir::pb::FLOAT: v.push_back(a.f()); break;
    case ir::pb::FLOAT64: v.push_back(a.float64()); break;
    case ir::pb::INTS: v.assign(a.ints().begin(), a.ints().end()); break;
    case ir::pb::LONGS: for (int64_t x : a.longs()) v.push_back(static_cast<double>(x)); break;
    case ir::pb::FLOATS: v.assign(a.floats().begin(), a.floats().end()); break;
    case ir::pb::FLOAT64S: v.assign(a.float64s().begin(), a.float64s().end()); break;
    default: break;
  }
  return v;
}

size_t ListSize(const OpDesc::Attr& a) {
  switch (a.type()) {
    case ir::pb::STRING: return a.s().size();
    case ir::pb::INTS: return a.ints_size();
    case ir::pb::LONGS: return a.longs_size();
    case ir::pb::FLOATS: return a.floats_size();
    case ir::pb::FLOAT64S: return a.float64s_size();
    case ir::pb::STRINGS: return a.strings_size();
    case ir::pb::BOOLEANS: return a.bools_size();
    case ir::pb::BLOCKS: return a.blocks_idx_size();
    default: return 1;
  }
}

/// `attr` stored as the compatible type `want` (INT <-> LONG, INTS <-> LONGS, FLOAT <-> FLOAT64 and
/// their lists); an error when a value does not fit.
StatusOr<OpDesc::Attr> ConvertAttrType(const OpDesc::Attr& a, ir::pb::AttrType want) {
  switch (want) {
    case ir::pb::INT: {
      PC_ASSIGN_OR_RETURN(int v, AttrAs<int>(a));
      return MakeAttr(a.name(), v);
    }
    case ir::pb::LONG: {
      PC_ASSIGN_OR_RETURN(int64_t v, AttrAs<int64_t>(a));
      return MakeAttr(a.name(), v);
    }
    case ir::pb::FLOAT: {
      PC_ASSIGN_OR_RETURN(float v, AttrAs<float>(a));
      return MakeAttr(a.name(), v);
    }
    case ir::pb::FLOAT64: {
      PC_ASSIGN_OR_RETURN(double v, AttrAs<double>(a));
      return MakeAttr(a.name(), v);
    }
    case ir::pb::INTS: {
      PC_ASSIGN_OR_RETURN(std::vector<int> v, AttrAs<std::vector<int>>(a));
      return MakeAttr(a.name(), v);
    }
    case ir::pb::LONGS: {
      PC_ASSIGN_OR_RETURN(std::vector<int64_t> v, AttrAs<std::vector<int64_t>>(a));
      return MakeAttr(a.name(), v);
    }
    case ir::pb::FLOATS: {
      PC_ASSIGN_OR_RETURN(std::vector<float> v, AttrAs<std::vector<float>>(a));
      return MakeAttr(a.name(), v);
    }
    case ir::pb::FLOAT64S: {
      PC_ASSIGN_OR_RETURN(std::vector<double> v, AttrAs<std::vector<double>>(a));
      return MakeAttr(a.name(), v);
    }
    default:
      return a;
  }
}

void CheckAttrValue(ir::Op op, int attr_index, const OpDesc::Attr& a, const OpProto::Attr& spec,
                    std::vector<Error>& errors) {
  if (std::string problem = AttrValueProblem(a, spec); !problem.empty())
    errors.push_back(Error(ErrorCode::kValidation, fmt::format("attribute '{}' {}", a.name(), problem))
                         .At(op.AttrLocation(attr_index)));
}

void CheckSubBlocks(ir::Op op, int attr_index, const OpDesc::Attr& a, std::vector<Error>& errors) {
  int n = op.block().program().num_blocks();
  std::vector<int> refs;
  if (a.type() == ir::pb::BLOCK) refs.push_back(a.block_idx());
  if (a.type() == ir::pb::BLOCKS) refs.assign(a.blocks_idx().begin(), a.blocks_idx().end());
  for (int b : refs) {
    if (b < 0 || b >= n) {
      errors.push_back(MakeError(ErrorCode::kValidation,
                                 "attribute '{}' refers to sub-block {}, but the program has {} block{}", a.name(),
                                 b, n, n == 1 ? "" : "s")
                           .At(op.AttrLocation(attr_index)));
    } else if (b == op.block().idx()) {
      errors.push_back(MakeError(ErrorCode::kValidation, "attribute '{}' refers to the op's own block {}",
                                 a.name(), b)
                           .At(op.AttrLocation(attr_index)));
    } else if (int parent = op.block().program().block(b).parent_idx(); parent != op.block().idx()) {
      errors.push_back(MakeError(ErrorCode::kValidation,
                                 "attribute '{}' refers to block {}, whose parent is block {}, but the op is in "
                                 "block {}",
                                 a.name(), b, parent, op.block().idx())
                           .At(op.AttrLocation(attr_index))
                           .Note("a sub-block must be nested in the block of the op that runs it"));
    }
  }
}

void CheckSlots(ir::Op op, bool input, const OpInfo& info, const CheckOptions& options,
                std::vector<Error>& errors) {
  const auto& desc_slots = input ? op.desc().inputs() : op.desc().outputs();
  const auto& proto_slots = input ? info.proto().inputs() : info.proto().outputs();
  const char* kind = input ? "input" : "output";
  std::unordered_set<std::string> seen;
  for (int s = 0; s < desc_slots.size(); ++s) {
    const auto& slot = desc_slots[s];
    if (!seen.insert(slot.parameter()).second) {
      errors.push_back(MakeError(ErrorCode::kValidation, "{} slot '{}' appears twice", kind, slot.parameter())
                           .At(op.SlotLocation(input, s)));
      continue;
    }
    const OpProto::Var* spec = nullptr;
    for (const auto& p : proto_slots)
      if (p.name() == slot.parameter()) spec = &p;
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const auto& p : proto_slots) names.push_back(p.name());
      Error e = MakeError(ErrorCode::kValidation, "op '{}' has no {} slot '{}'", op.type(), kind, slot.parameter())
                    .At(op.SlotLocation(input, s));
      std::string hint = ClosestName(slot.parameter(), names);
      e.Note(hint.empty() ? fmt::format("its {} slots are: {}", kind, JoinSlotNames(proto_slots))
                          : fmt::format("did you mean '{}'?", hint));
      errors.push_back(std::move(e));
      continue;
    }
    if (!spec->duplicable() && slot.arguments_size() > 1) {
      errors.push_back(MakeError(ErrorCode::kValidation, "{} slot '{}' takes one variable, got {}", kind,
                                 slot.parameter(), slot.arguments_size())
                           .At(op.SlotLocation(input, s)));
    }
    for (const auto& arg : slot.arguments()) {
      if (arg == ir::kEmptyVarName) continue;
      if (arg.empty()) {
        errors.push_back(MakeError(ErrorCode::kValidation, "{} slot '{}' names an empty variable", kind,
                                   slot.parameter())
                             .At(op.SlotLocation(input, s)));
        continue;
      }
      if (op.block().FindVar(arg) != nullptr) continue;
      if (!input && options.fix) {
        op.block().AddVar(arg);  // outputs may be declared implicitly; infer-shape fills them in
        continue;
      }
      SourceLocation loc = op.SlotLocation(input, s);
      loc.var = arg;
      Error e = MakeError(ErrorCode::kValidation, "{} '{}' names undefined variable '{}'", kind, slot.parameter(), arg)
                    .At(loc);
      if (op.block().idx() > 0) e.Note("variables are looked up in this block and its enclosing blocks");
      errors.push_back(std::move(e));
    }
  }
  for (const auto& p : proto_slots) {
    if (p.dispensable() || p.intermediate()) continue;
    bool present = false;
    for (const auto& slot : desc_slots)
      if (slot.parameter() == p.name() && slot.arguments_size() > 0) present = true;
    if (!present)
      errors.push_back(MakeError(ErrorCode::kValidation, "missing {} '{}' ({})", kind, p.name(), p.comment())
                           .At(op.Location()));
  }
}

}  // namespace

std::string AttrBoundsText(const OpProto::Attr& spec, std::string (*number)(double)) {
  if (spec.has_min() && spec.has_max())
    return fmt::format("{}{}, {}{}", spec.min_exclusive() ? "(" : "[", number(spec.min()), number(spec.max()),
                       spec.max_exclusive() ? ")" : "]");
  if (spec.has_min()) return fmt::format("{} {}", spec.min_exclusive() ? ">" : ">=", number(spec.min()));
  if (spec.has_max()) return fmt::format("{} {}", spec.max_exclusive() ? "<" : "<=", number(spec.max()));
  return "";
}

std::string AttrValueProblem(const OpDesc::Attr& a, const OpProto::Attr& spec) {
  if (!AttrTypeCompatible(a.type(), spec.type()))
    return fmt::format("has type {}, expected {}", ir::AttrTypeName(a.type()), ir::AttrTypeName(spec.type()));
  // A FLOAT attribute is compared in float: PaddlePaddle stores epsilon = 1e-3 as the float
  // 0.0010000000474974513, which must pass a [0, 0.001] range as it does in PaddlePaddle.
  bool in_float = spec.type() == ir::pb::FLOAT || spec.type() == ir::pb::FLOATS;
  auto below = [&](double v, double bound, bool or_equal) {
    if (in_float)
      return or_equal ? static_cast<float>(v) <= static_cast<float>(bound)
                      : static_cast<float>(v) < static_cast<float>(bound);
    return or_equal ? v <= bound : v < bound;
  };
  for (double v : NumericValues(a)) {
    if (std::isnan(v) && (spec.has_min() || spec.has_max())) return "is NaN";
    if ((spec.has_min() && below(v, spec.min(), spec.min_exclusive())) ||
        (spec.has_max() && below(spec.max(), v, spec.max_exclusive()))) {
      // A float is shown as written (0.0011, not its double expansion 0.0010999999940395355).
      std::string shown = in_float ? fmt::format("{}", static_cast<float>(v)) : FormatNumber(v);
      return fmt::format("value {} is out of range: must be {}", shown, AttrBoundsText(spec, FormatNumber));
    }
  }
  if (spec.allowed_strings_size() > 0) {
    std::vector<std::string> values;
    if (a.type() == ir::pb::STRING) values.push_back(a.s());
    if (a.type() == ir::pb::STRINGS) values.assign(a.strings().begin(), a.strings().end());
    for (const auto& v : values) {
      if (std::find(spec.allowed_strings().begin(), spec.allowed_strings().end(), v) == spec.allowed_strings().end()) {
        std::string allowed;
        for (const auto& s : spec.allowed_strings()) allowed += (allowed.empty() ? "'" : ", '") + s + "'";
        return fmt::format("value '{}' is not allowed: expected one of {}", v, allowed);
      }
    }
  }
  if (spec.allowed_ints_size() > 0) {
    for (double v : NumericValues(a)) {
      if (std::find(spec.allowed_ints().begin(), spec.allowed_ints().end(), static_cast<int64_t>(v)) ==
          spec.allowed_ints().end()) {
        std::string allowed;
        for (int64_t s : spec.allowed_ints()) allowed += (allowed.empty() ? "" : ", ") + std::to_string(s);
        return fmt::format("value {} is not allowed: expected one of {}", FormatNumber(v), allowed);
      }
    }
  }
  if (spec.non_empty() && ListSize(a) == 0) return "must not be empty";
  return "";
}

void CheckOp(ir::Op op, const OpRegistry& registry, const CheckOptions& options, std::vector<Error>& errors) {
  const OpInfo* info = registry.Find(op.type());
  if (info == nullptr) {
    std::vector<std::string> names;
    for (const OpInfo* i : registry.All()) names.push_back(i->type());
    Error e = op.type().empty() ? MakeError(ErrorCode::kValidation, "op has an empty type")
                                : MakeError(ErrorCode::kValidation, "unknown op type '{}'", op.type());
    e.At(op.Location());
    std::string hint = ClosestName(op.type(), names);
    if (!hint.empty()) e.Note(fmt::format("did you mean '{}'?", hint));
    else e.Note("`paddlec dump-opprotos` lists the registered ops");
    errors.push_back(std::move(e));
    return;
  }
  CheckSlots(op, true, *info, options, errors);
  CheckSlots(op, false, *info, options, errors);

  // An attribute set again to the same value is a repeat (PaddlePaddle 3 writes some backend hints
  // twice); compared before any attribute is converted below.
  const auto& attrs = op.desc().attrs();
  std::unordered_map<std::string, int> seen;
  std::vector<int> repeats;
  for (int i = 0; i < attrs.size(); ++i) {
    auto [it, first] = seen.emplace(attrs[i].name(), i);
    if (first) continue;
    repeats.push_back(i);
    if (attrs[it->second].SerializeAsString() != attrs[i].SerializeAsString())
      errors.push_back(
          MakeError(ErrorCode::kValidation, "attribute '{}' is set twice, to different values", attrs[i].name())
              .At(op.AttrLocation(i)));
  }
  for (int i = 0; i < attrs.size(); ++i) {
    const OpDesc::Attr& a = attrs[i];
    if (std::find(repeats.begin(), repeats.end(), i) != repeats.end()) continue;
    const OpProto::Attr* spec = info->FindAttr(a.name());
    if (spec == nullptr) spec = registry.FindCommonAttr(a.name());
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const auto& p : info->proto().attrs()) names.push_back(p.name());
      Error e = MakeError(ErrorCode::kValidation, "unknown attribute '{}' for op '{}'", a.name(), op.type())
                    .At(op.AttrLocation(i));
      std::string hint = ClosestName(a.name(), names);
      if (!hint.empty()) e.Note(fmt::format("did you mean '{}'?", hint));
      else if (names.empty()) e.Note(fmt::format("op '{}' takes no attributes", op.type()));
      errors.push_back(std::move(e));
      continue;
    }
    if (a.type() == ir::pb::BLOCK || a.type() == ir::pb::BLOCKS) CheckSubBlocks(op, i, a, errors);
    size_t before = errors.size();
    CheckAttrValue(op, i, a, *spec, errors);
    // Store the declared width (INTS for LONGS, FLOAT for FLOAT64, ...): what PaddlePaddle's op
    // reads with Attr<T>, so the programs paddlec writes load there.
    if (errors.size() == before && a.type() != spec->type()) {
      auto converted = ConvertAttrType(a, spec->type());
      if (!converted.ok())
        errors.push_back(std::move(converted).status().TakeError().At(op.AttrLocation(i)));
      else if (options.fix)
        *op.desc().mutable_attrs(i) = std::move(converted).value();
    }
  }
  if (options.fix)
    for (auto it = repeats.rbegin(); it != repeats.rend(); ++it) op.desc().mutable_attrs()->DeleteSubrange(*it, 1);
  for (const auto& spec : info->proto().attrs()) {
    if (seen.count(spec.name())) continue;
    if (!spec.has_default_value()) {
      errors.push_back(MakeError(ErrorCode::kValidation, "missing required attribute '{}' ({}, {})", spec.name(),
                                 ir::AttrTypeName(spec.type()), spec.comment())
                           .At(op.Location()));
    } else if (options.fix) {
      *op.desc().add_attrs() = spec.default_value();
    }
  }
}

void CheckVars(ir::Block& block, std::vector<Error>& errors) {
  const ir::SourceMap& src = block.program().source_map();
  std::unordered_set<std::string> seen;
  for (int i = 0; i < block.num_vars(); ++i) {
    const auto& v = block.desc().vars(i);
    SourceLocation loc = block.program().positions_valid() ? src.Var(block.idx(), i) : SourceLocation{.file = src.file()};
    loc.block = block.idx();
    loc.var = v.name();
    if (v.name().empty()) {
      errors.push_back(MakeError(ErrorCode::kValidation, "variable {} of block {} has an empty name", i, block.idx()).At(loc));
      continue;
    }
    if (!seen.insert(v.name()).second) {
      errors.push_back(MakeError(ErrorCode::kValidation, "variable '{}' is declared twice", v.name()).At(loc));
      continue;
    }
    const auto* t = ir::TensorDescOf(v);
    if (t == nullptr) continue;
    if (!DTypeFromProto(t->data_type()).ok()) {
      errors.push_back(MakeError(ErrorCode::kValidation, "variable '{}' has data_type {}, which is not an element type",
                                 v.name(), ir::pb::VarType::Type_Name(t->data_type()))
                           .At(loc));
      continue;
    }
    auto dims = ir::VarDims(v);
    Status st = dims.ok() ? CheckDims(*dims) : dims.status();
    if (!st.ok())
      errors.push_back(MakeError(ErrorCode::kValidation, "variable '{}': {}", v.name(), st.error().message()).At(loc));
  }
}

Status ToStatus(std::vector<Error> errors) {
  if (errors.empty()) return Status::OK();
  Error first = std::move(errors.front());
  for (size_t i = 1; i < errors.size(); ++i) first.Append(std::move(errors[i]));
  return first;
}

// ---- Compile-time shape inference -----------------------------------------------------------

namespace {

class CompileTimeContext final : public InferShapeContext {
 public:
  CompileTimeContext(ir::Op op, const AttrReader& attrs) : InferShapeContext(attrs), op_(op) {}

  std::string_view op_type() const override { return op_.type(); }
  int NumInputs(InSlot s) const override { return op_.Input(s.name).size(); }
  int NumOutputs(OutSlot s) const override { return op_.Output(s.name).size(); }
  std::string_view InputName(InSlot s, int i) const override { return op_.Input(s.name)[i]; }
  std::string_view OutputName(OutSlot s, int i) const override { return op_.Output(s.name)[i]; }

  Dims InputDims(InSlot s, int i) const override {
    const auto* v = FindIn(s, i);
    if (v == nullptr) return Dims();
    auto d = ir::VarDims(*v);
    return d.ok() ? *d : Dims();
  }
  DType InputDType(InSlot s, int i) const override {
    const auto* v = FindIn(s, i);
    return v ? ir::VarDType(*v) : DType::kUndefined;
  }
  void SetOutput(OutSlot s, int i, const Dims& dims, DType dtype) override {
    const auto& args = op_.Output(s.name);
    if (i >= args.size() || args[i] == ir::kEmptyVarName) return;
    pending_.push_back({args[i], dims, dtype});
  }

  struct Pending {
    std::string var;
    Dims dims;
    DType dtype;
  };
  std::vector<Pending> pending_;

 private:
  const ir::pb::VarDesc* FindIn(InSlot s, int i) const {
    const auto& args = op_.Input(s.name);
    if (i >= args.size()) return nullptr;
    return op_.block().FindVar(args[i]);
  }
  ir::Op op_;
};

int LoDLevelOf(const ir::pb::VarDesc& v) {
  const auto& t = v.type();
  if (t.type() == ir::pb::VarType::LOD_TENSOR) return t.lod_tensor().lod_level();
  if (t.type() == ir::pb::VarType::LOD_TENSOR_ARRAY) return t.tensor_array().lod_level();
  return 0;
}

/// The op's LoD rule (OpInfo::lod_rule) at compile time: the lod_level of each output it shaped.
/// Shared levels go to outputs with the source's leading dim (an fc keeps its rows' sequences, a
/// mean over them does not).
void ApplyLoDLevels(ir::Op op, const OpInfo& info, const std::vector<CompileTimeContext::Pending>& outs,
                    bool* changed) {
  const LoDRule& rule = info.lod_rule();
  const ir::pb::VarDesc* src = nullptr;
  if (rule.kind != LoDRule::kNone && rule.slot < info.num_inputs()) {
    const auto& args = op.Input(info.proto().inputs(rule.slot).name());
    if (!args.empty()) src = op.block().FindVar(args[0]);
  }
  int level = src ? LoDLevelOf(*src) : 0;
  Dims src_dims;
  if (src != nullptr)
    if (auto d = ir::VarDims(*src); d.ok()) src_dims = *d;
  for (const auto& p : outs) {
    ir::pb::VarDesc* v = op.block().FindVar(p.var);
    if (v == nullptr || v->type().type() != ir::pb::VarType::LOD_TENSOR) continue;
    int want = 0;
    if (rule.kind == LoDRule::kKernel) want = std::max(0, level + rule.delta);
    if (rule.kind == LoDRule::kShareInput && level > 0 && p.dims.rank() > 0 && src_dims.rank() > 0 &&
        p.dims[0] == src_dims[0])
      want = level;
    if (LoDLevelOf(*v) == want) continue;
    v->mutable_type()->mutable_lod_tensor()->set_lod_level(want);
    if (changed != nullptr) *changed = true;
  }
}

/// Scalars are [] in newer PaddlePaddle and [1] in older files; treat them as the same shape.
bool BothScalars(const Dims& a, const Dims& b) { return a.Numel() == 1 && b.Numel() == 1 && a.rank() <= 1 && b.rank() <= 1; }

}  // namespace

Status InferShapeAtCompileTime(ir::Op op, const OpRegistry& registry, bool* changed) {
  const OpInfo* info = registry.Find(op.type());
  if (info == nullptr) return MakeError(ErrorCode::kValidation, "unknown op type '{}'", op.type()).At(op.Location());
  if (info->infer_shape() == nullptr) return Status::OK();
  AttrReader attrs(op.desc(), info);
  CompileTimeContext ctx(op, attrs);
  Status st = info->infer_shape()(ctx);
  if (!st.ok()) {
    Error e = std::move(st).TakeError();
    if (e.location().op < 0) e.At(op.Location());
    return e;
  }
  for (auto& p : ctx.pending_) {
    ir::pb::VarDesc* v = op.block().FindVar(p.var);
    if (v == nullptr) continue;
    SourceLocation loc = op.Location();
    loc.var = p.var;
    if (Status c = CheckDims(p.dims); !c.ok())
      return MakeError(ErrorCode::kShape, "output '{}' would have shape {}: {}", p.var, p.dims.ToString(),
                       c.error().message())
          .At(loc);
    Dims merged = p.dims;
    const auto* declared_t = ir::TensorDescOf(*v);
    if (declared_t != nullptr && declared_t->dims_size() > 0) {
      auto declared = ir::VarDims(*v);
      if (declared.ok() && !BothScalars(*declared, p.dims)) {
        if (!DimsMatch(*declared, p.dims))
          return MakeError(ErrorCode::kShape, "output '{}' is declared with shape {} but the op produces {}", p.var,
                           declared->ToString(), p.dims.ToString())
              .At(loc);
        for (int d = 0; d < merged.rank(); ++d) merged[d] = DimMerge(p.dims[d], (*declared)[d]);
      }
    }
    if (changed != nullptr && !*changed) {
      auto now = ir::VarDims(*v);
      *changed = ir::TensorDescOf(*v) == nullptr || ir::VarDType(*v) != p.dtype || !now.ok() || !(*now == merged);
    }
    ir::SetVarShape(v, merged, p.dtype);
  }
  ApplyLoDLevels(op, *info, ctx.pending_, changed);
  return Status::OK();
}

}  // namespace paddlec::ops
