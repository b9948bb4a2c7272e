// Translation of a PIR program (pir_program.h) into a legacy ProgramDesc, driven by the table of
// pir_op_table.cc. The engine itself handles what is structure rather than an op:
//   builtin.parameter      a persistable (parameter) variable named by the op
//   pd_op.data             a feed op + variable (a persistable data op is optimizer state: no feed)
//   pd_op.fetch            a fetch op; the fetched value takes the fetch's name
//   pd_op.full, full_int_array, builtin.combine   constants and vectors: folded into the attribute
//                          of the op that reads them, or materialized when an op needs a tensor
//   builtin.split          names the elements of a vector result
//   builtin.shadow_output, builtin.set_parameter   name the value they store (startup programs)
//   pd_op.shape64, pd_op.full_like                 legacy ops plus a cast / a static shape
// Values have no names in PIR; the rest get `<legacy type>_<n>.tmp_<k>`, as Paddle names them.
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "paddlec/ir/op_role.h"
#include "paddlec/ir/pir_json.h"
#include "pir_op_table.h"
#include "pir_program.h"

namespace paddlec::ir {
namespace {

using pir::Attr;
using pir::AttrForm;
using pir::OpRule;
using pir::Type;

bool IsInteger(const Attr& a) { return a.kind == Attr::Kind::kI32 || a.kind == Attr::Kind::kI64; }
bool IsFloat(const Attr& a) { return a.kind == Attr::Kind::kF32 || a.kind == Attr::Kind::kF64; }
double Number(const Attr& a) {
  return IsInteger(a) ? static_cast<double>(a.i) : a.kind == Attr::Kind::kBool ? a.b : a.f;
}

/// What a value is while translating: a legacy variable, a constant not materialized yet, or a
/// vector of other values.
struct ValueInfo {
  std::string var;  // "" = no variable (yet)
  Type type;
  enum class Const { kNone, kFull, kIntArray } constant = Const::kNone;
  double value = 0;               // kFull
  DType dtype = DType::kFloat32;  // kFull, kIntArray
  std::vector<int64_t> shape;     // kFull
  std::vector<int64_t> ints;      // kIntArray
  bool is_vec = false;
  std::vector<int64_t> elements;          // a combine's operands
  std::vector<std::string> element_vars;  // a vector result's variables (for builtin.split)
  bool poisoned = false;                  // produced by an op that failed to translate: uses are not reported again
  std::string origin;                     // "result 1 of pd_op.rnn", for diagnostics
};

class Translator {
 public:
  explicit Translator(std::string file) : file_(std::move(file)) {
    for (const pir::TableRow& row : pir::OpTable()) {
      auto rule = pir::ParseRow(row);
      if (rule.ok())
        rules_[std::string(row.pir)].push_back(std::move(rule).value());
      else
        table_errors_.push_back(rule.error());
    }
  }

  StatusOr<pb::ProgramDesc> Run(const pir::Program& p) {
    if (!table_errors_.empty()) return table_errors_.front();
    if (p.version < kMinPirVersion || p.version > kMaxPirVersion)
      return MakeError(ErrorCode::kUnimplemented, "PIR version {} is not supported", p.version)
          .At({.file = file_})
          .Note(fmt::format("paddlec reads versions {} to {} (what Paddle 3.0 to 3.3 write)", kMinPirVersion,
                            kMaxPirVersion));
    pb::ProgramDesc out;
    block_ = out.add_blocks();
    block_->set_idx(0);
    block_->set_parent_idx(-1);
    for (const auto& b : p.top.blocks) Prescan(b);
    for (const auto& b : p.top.blocks)
      for (const auto& op : b.ops) Translate(op);
    if (loss_seed_op_ >= 0) AssignRoles();
    if (!errors_.empty()) {
      Error first = std::move(errors_.front());
      for (size_t i = 1; i < errors_.size(); ++i) first.Append(std::move(errors_[i]));
      return first;
    }
    return out;
  }

 private:
  // ---- diagnostics -------------------------------------------------------------------------

  SourceLocation Where(const pir::Op& op) const {
    SourceLocation loc{.file = file_};
    loc.block = op.block;
    loc.op = op.index;
    loc.op_type = op.name;
    return loc;
  }
  void Report(const pir::Op& op, Error e) {
    e.At(Where(op));
    errors_.push_back(std::move(e));
    Poison(op);
  }
  void Poison(const pir::Op& op) {
    for (const auto& r : op.results) values_[r.id].poisoned = true;
  }

  // ---- names and variables -----------------------------------------------------------------

  /// Names that storing ops give their values: shadow_output / set_parameter in startup programs,
  /// fetch in inference programs (the fetched value is called what Paddle's predictor calls it).
  void Prescan(const pir::Block& b) {
    for (const auto& op : b.ops) {
      const char* key = op.name == "builtin.shadow_output"   ? "output_name"
                        : op.name == "builtin.set_parameter" ? "parameter_name"
                        : op.name == "pd_op.fetch"           ? "name"
                                                             : nullptr;
      if (key == nullptr || op.operands.empty()) continue;
      const Attr* name = op.FindAttr(key);
      if (name != nullptr && name->kind == Attr::Kind::kStr) preset_names_.emplace(op.operands[0], name->s);
      if (op.name != "pd_op.fetch") persistable_values_.insert(op.operands[0]);
    }
  }

  std::string FreshName(const std::string& base) {
    while (true) {
      std::string name = fmt::format("{}_{}.tmp_0", base, counters_[base]++);
      if (!taken_.count(name)) return name;
    }
  }

  pb::VarDesc* Declare(const std::string& name, const Type& t) {
    if (taken_.insert(name).second) {
      pb::VarDesc* v = block_->add_vars();
      v->set_name(name);
      var_index_[name] = block_->vars_size() - 1;
      if (t.kind == Type::Kind::kDense) {
        Dims dims;
        for (int64_t d : t.dims) dims.push_back(d);
        SetVarShape(v, dims, t.dtype);
      } else {
        v->mutable_type()->set_type(pb::VarType::LOD_TENSOR);
      }
      return v;
    }
    return block_->mutable_vars(var_index_[name]);
  }

  /// Gives result `r` of `op` a variable: its preset name, or `<base>_<n>.tmp_<r>`.
  std::string NameResult(const pir::Op& op, int r, const std::string& base, int* group) {
    const pir::Value& res = op.results[r];
    ValueInfo& info = values_[res.id];
    info.type = res.type;
    info.origin = fmt::format("result {} of {}", r, op.name);
    if (auto it = preset_names_.find(res.id); it != preset_names_.end() && !taken_.count(it->second)) {
      info.var = it->second;
    } else {
      if (*group < 0) {
        *group = counters_[base]++;
        while (taken_.count(fmt::format("{}_{}.tmp_0", base, *group))) *group = counters_[base]++;
      }
      info.var = fmt::format("{}_{}.tmp_{}", base, *group, r);
    }
    pb::VarDesc* v = Declare(info.var, res.type);
    v->set_stop_gradient(op.ResultFlag("stop_gradient", r, false));
    if (persistable_values_.count(res.id)) v->set_persistable(true);
    return info.var;
  }

  // ---- constants and vectors ---------------------------------------------------------------

  /// The value of `id` as legacy attribute `name` of `form`, when it is a constant.
  std::optional<pb::OpDesc::Attr> ConstAttr(int64_t id, const std::string& name, AttrForm form) {
    auto it = values_.find(id);
    if (it == values_.end()) return std::nullopt;
    const ValueInfo& v = it->second;
    Attr a;
    if (v.constant == ValueInfo::Const::kFull) {
      int64_t numel = 1;
      for (int64_t d : v.shape) numel *= d;
      if (numel != 1) return std::nullopt;
      bool integral = v.dtype == DType::kInt64 || v.dtype == DType::kInt32;
      Attr scalar{
          .kind = integral ? Attr::Kind::kI64 : Attr::Kind::kF64, .i = static_cast<int64_t>(v.value), .f = v.value};
      if (form == AttrForm::kInts || form == AttrForm::kLongs || form == AttrForm::kFloats ||
          form == AttrForm::kDoubles) {
        a.kind = Attr::Kind::kArray;
        a.array.push_back(scalar);
      } else {
        a = scalar;
      }
    } else if (v.constant == ValueInfo::Const::kIntArray) {
      a.kind = Attr::Kind::kIntArray;
      a.ints = v.ints;
    } else if (v.is_vec) {
      a.kind = Attr::Kind::kArray;
      for (int64_t e : v.elements) {
        auto ei = values_.find(e);
        if (ei == values_.end() || ei->second.constant != ValueInfo::Const::kFull) return std::nullopt;
        a.array.push_back(Attr{.kind = Attr::Kind::kI64, .i = static_cast<int64_t>(ei->second.value)});
      }
    } else {
      return std::nullopt;
    }
    auto converted = ConvertAttr(name, a, form);
    if (!converted.ok()) return std::nullopt;
    return std::move(converted).value();
  }

  /// The variable holding value `id`, materializing a constant (fill_constant / assign_value) on
  /// first use as a tensor.
  StatusOr<std::string> TensorOf(int64_t id) {
    ValueInfo& v = values_[id];
    if (!v.var.empty()) return v.var;
    if (v.poisoned) return Error(ErrorCode::kValidation, "");
    if (v.constant == ValueInfo::Const::kFull) {
      pb::OpDesc* op = block_->add_ops();
      op->set_type("fill_constant");
      auto preset = preset_names_.find(id);
      std::string name =
          preset != preset_names_.end() && !taken_.count(preset->second) ? preset->second : FreshName("fill_constant");
      pb::VarDesc* var = Declare(name, v.type);
      var->set_stop_gradient(true);
      if (persistable_values_.count(id)) var->set_persistable(true);
      AddArgs(op->add_outputs(), "Out", {name});
      AddAttr(op, MakeLongs("shape", v.shape));
      AddAttr(op, MakeInt("dtype", static_cast<int>(v.dtype)));
      pb::OpDesc::Attr value;
      value.set_name("value");
      value.set_type(pb::FLOAT);
      value.set_f(static_cast<float>(v.value));
      AddAttr(op, value);
      if (v.dtype == DType::kInt64 || v.dtype == DType::kInt32) {
        // Integers above 2^24 do not survive `value` (a float): str_value carries them exactly.
        pb::OpDesc::Attr s;
        s.set_name("str_value");
        s.set_type(pb::STRING);
        s.set_s(fmt::format("{}", static_cast<int64_t>(v.value)));
        AddAttr(op, s);
      }
      return v.var = name;
    }
    if (v.constant == ValueInfo::Const::kIntArray) {
      pb::OpDesc* op = block_->add_ops();
      op->set_type("assign_value");
      std::string name = FreshName("assign_value");
      Declare(name, v.type)->set_stop_gradient(true);
      AddArgs(op->add_outputs(), "Out", {name});
      AddAttr(op, MakeInts("shape", {static_cast<int64_t>(v.ints.size())}));
      AddAttr(op, MakeInt("dtype", static_cast<int>(v.dtype)));
      pb::OpDesc::Attr values = MakeLongs(v.dtype == DType::kInt32 ? "int32_values" : "int64_values", v.ints);
      if (v.dtype == DType::kInt32) values = MakeInts("int32_values", v.ints);
      AddAttr(op, values);
      return v.var = name;
    }
    if (v.is_vec) return MakeError(ErrorCode::kValidation, "a vector (builtin.combine) is used where a tensor belongs");
    return MakeError(ErrorCode::kValidation, "value %{} ({}) has no legacy variable", id,
                     v.origin.empty() ? "never defined" : v.origin);
  }

  // ---- attributes --------------------------------------------------------------------------

  static pb::OpDesc::Attr MakeInt(const std::string& n, int v) {
    pb::OpDesc::Attr a;
    a.set_name(n), a.set_type(pb::INT), a.set_i(v);
    return a;
  }
  static pb::OpDesc::Attr MakeInts(const std::string& n, const std::vector<int64_t>& v) {
    pb::OpDesc::Attr a;
    a.set_name(n), a.set_type(pb::INTS);
    for (int64_t x : v) a.add_ints(static_cast<int32_t>(x));
    return a;
  }
  static pb::OpDesc::Attr MakeLongs(const std::string& n, const std::vector<int64_t>& v) {
    pb::OpDesc::Attr a;
    a.set_name(n), a.set_type(pb::LONGS);
    for (int64_t x : v) a.add_longs(x);
    return a;
  }
  static void AddAttr(pb::OpDesc* op, pb::OpDesc::Attr a) { *op->add_attrs() = std::move(a); }
  static void AddArgs(pb::OpDesc::Var* slot, const std::string& name, const std::vector<std::string>& args) {
    slot->set_parameter(name);
    for (const auto& a : args) slot->add_arguments(a);
  }

  /// Converts a PIR attribute to legacy attribute `name`; kNatural keeps PIR's width.
  static StatusOr<pb::OpDesc::Attr> ConvertAttr(const std::string& name, const Attr& a, AttrForm form) {
    pb::OpDesc::Attr out;
    out.set_name(name);
    auto bad = [&] {
      return MakeError(ErrorCode::kValidation, "attribute '{}' cannot be written as {}", name, pir::AttrFormName(form));
    };
    std::vector<const Attr*> elems;
    std::vector<Attr> int_elems;
    if (a.kind == Attr::Kind::kArray) {
      for (const auto& e : a.array) elems.push_back(&e);
    } else if (a.kind == Attr::Kind::kIntArray) {
      for (int64_t x : a.ints) int_elems.push_back(Attr{.kind = Attr::Kind::kI64, .i = x});
      for (const auto& e : int_elems) elems.push_back(&e);
    }
    bool list = a.kind == Attr::Kind::kArray || a.kind == Attr::Kind::kIntArray;
    if (form == AttrForm::kNatural) {
      switch (a.kind) {
        case Attr::Kind::kBool:
          form = AttrForm::kBool;
          break;
        case Attr::Kind::kI32:
          form = AttrForm::kInt;
          break;
        case Attr::Kind::kI64:
          form = AttrForm::kLong;
          break;
        case Attr::Kind::kF32:
          form = AttrForm::kFloat;
          break;
        case Attr::Kind::kF64:
          form = AttrForm::kDouble;
          break;
        case Attr::Kind::kStr:
          form = AttrForm::kStr;
          break;
        case Attr::Kind::kDType:
          form = AttrForm::kVarType;
          break;
        case Attr::Kind::kIntArray:
          form = AttrForm::kLongs;
          break;
        case Attr::Kind::kArray: {
          Attr::Kind k = elems.empty() ? Attr::Kind::kI32 : elems.front()->kind;
          form = k == Attr::Kind::kBool  ? AttrForm::kBool
                 : k == Attr::Kind::kI64 ? AttrForm::kLongs
                 : k == Attr::Kind::kF32 ? AttrForm::kFloats
                 : k == Attr::Kind::kF64 ? AttrForm::kDoubles
                 : k == Attr::Kind::kStr ? AttrForm::kStrs
                                         : AttrForm::kInts;
          if (k == Attr::Kind::kBool) {
            out.set_type(pb::BOOLEANS);
            for (const Attr* e : elems) out.add_bools(e->b);
            return out;
          }
          break;
        }
        default:
          return MakeError(ErrorCode::kValidation, "attribute '{}' has a PIR type ('{}') with no legacy form", name,
                           a.s);
      }
    }
    bool numeric_list =
        list && std::all_of(elems.begin(), elems.end(), [](const Attr* e) { return IsInteger(*e) || IsFloat(*e); });
    switch (form) {
      case AttrForm::kBool:
        if (a.kind != Attr::Kind::kBool) return bad();
        out.set_type(pb::BOOLEAN), out.set_b(a.b);
        break;
      case AttrForm::kInt:
      case AttrForm::kLong: {
        if (!IsInteger(a) && !IsFloat(a)) return bad();
        double v = Number(a);
        if (v != static_cast<double>(static_cast<int64_t>(v))) return bad();
        if (form == AttrForm::kInt) {
          if (v < INT32_MIN || v > INT32_MAX) return bad();
          out.set_type(pb::INT), out.set_i(static_cast<int32_t>(v));
        } else {
          out.set_type(pb::LONG), out.set_l(IsInteger(a) ? a.i : static_cast<int64_t>(v));
        }
        break;
      }
      case AttrForm::kFloat:
        if (!IsInteger(a) && !IsFloat(a)) return bad();
        out.set_type(pb::FLOAT), out.set_f(static_cast<float>(Number(a)));
        break;
      case AttrForm::kDouble:
        if (!IsInteger(a) && !IsFloat(a)) return bad();
        out.set_type(pb::FLOAT64), out.set_float64(Number(a));
        break;
      case AttrForm::kStr:
        if (a.kind != Attr::Kind::kStr && a.kind != Attr::Kind::kDType) return bad();
        out.set_type(pb::STRING), out.set_s(a.s);
        break;
      case AttrForm::kVarType: {
        if (IsInteger(a)) {
          out.set_type(pb::INT), out.set_i(static_cast<int32_t>(a.i));
          break;
        }
        if (a.kind != Attr::Kind::kDType && a.kind != Attr::Kind::kStr) return bad();
        DType t = pir::DTypeFromPirName(a.s);
        // "Undefined(ALL_DTYPE)" (sum's default) is legacy's -1: keep the input's type.
        if (t == DType::kUndefined && !a.s.starts_with("Undefined"))
          return MakeError(ErrorCode::kValidation, "attribute '{}' names unknown dtype '{}'", name, a.s);
        out.set_type(pb::INT), out.set_i(static_cast<int>(t));
        break;
      }
      case AttrForm::kInts:
      case AttrForm::kLongs:
        if (!list || !numeric_list) return bad();
        out.set_type(form == AttrForm::kInts ? pb::INTS : pb::LONGS);
        for (const Attr* e : elems) {
          double v = Number(*e);
          int64_t iv = IsInteger(*e) ? e->i : static_cast<int64_t>(v);
          if (form == AttrForm::kInts) {
            // INT64_MAX-style "to the end" markers become INT32_MAX, as Paddle's legacy ops expect.
            out.add_ints(static_cast<int32_t>(std::clamp<int64_t>(iv, INT32_MIN, INT32_MAX)));
          } else {
            out.add_longs(iv);
          }
        }
        break;
      case AttrForm::kFloats:
      case AttrForm::kDoubles:
        if (!list || !numeric_list) return bad();
        out.set_type(form == AttrForm::kFloats ? pb::FLOATS : pb::FLOAT64S);
        for (const Attr* e : elems) {
          if (form == AttrForm::kFloats)
            out.add_floats(static_cast<float>(Number(*e)));
          else
            out.add_float64s(Number(*e));
        }
        break;
      case AttrForm::kStrs:
        if (!list) return bad();
        out.set_type(pb::STRINGS);
        for (const Attr* e : elems) out.add_strings(e->s);
        break;
      case AttrForm::kNatural:
        return bad();
    }
    return out;
  }

  // ---- ops -----------------------------------------------------------------------------------

  void Translate(const pir::Op& op) {
    const std::string& n = op.name;
    if (n == "builtin.parameter") return Parameter(op);
    if (n == "pd_op.data") return Data(op);
    if (n == "pd_op.fetch") return Fetch(op);
    if (n == "pd_op.full") return Full(op);
    if (n == "pd_op.full_int_array") return FullIntArray(op);
    if (n == "builtin.combine") return Combine(op);
    if (n == "builtin.split") return SplitVector(op);
    if (n == "builtin.shadow_output" || n == "builtin.set_parameter") return Store(op);
    if (n == "pd_op.shape64") return Shape64(op);
    if (n == "pd_op.full_like") return FullLike(op);
    if (n == "pd_op.if" || n == "pd_op.while" || n == "cf.yield")
      return Report(op,
                    MakeError(ErrorCode::kUnimplemented, "control flow ({}) is not supported by the PIR translator", n)
                        .Note("save the model with FLAGS_enable_pir_api=0 (a legacy .pdmodel) to use it"));
    auto it = rules_.find(n);
    if (it == rules_.end()) {
      return Report(op, MakeError(ErrorCode::kUnimplemented, "no translation for PIR op '{}'", n)
                            .Note("`paddlec dump-opprotos --format=paddle-md` lists the PIR ops paddlec reads"));
    }
    const OpRule* rule = &it->second.front();
    for (const OpRule& r : it->second)
      if (r.operands.size() == op.operands.size()) rule = &r;
    if (rule->operands.size() != op.operands.size())
      return Report(op, MakeError(ErrorCode::kValidation, "{} has {} operands; paddlec's translation expects {}", n,
                                  op.operands.size(), rule->operands.size()));
    Emit(op, *rule);
  }

  void Parameter(const pir::Op& op) {
    const Attr* name = op.FindAttr("parameter_name");
    if (name == nullptr || op.results.size() != 1)
      return Report(op, MakeError(ErrorCode::kValidation, "builtin.parameter without a parameter_name and one result"));
    ValueInfo& v = values_[op.results[0].id];
    v.var = name->s;
    v.type = op.results[0].type;
    pb::VarDesc* var = Declare(v.var, v.type);
    // Weights are persistable; rnn's dropout_state__non_persistable is not, and has no .pdiparams record.
    // Nor is it a parameter: PaddlePaddle's loader makes every is_parameter variable a persistable
    // Parameter and rejects a .pdmodel that declares one non-persistable.
    const bool persistable = op.ResultFlag("persistable", 0, true);
    var->set_persistable(persistable);
    const Attr* is_param = op.FindAttr("is_parameter");
    var->set_is_parameter(persistable && (is_param == nullptr || is_param->b));
    var->set_stop_gradient(op.ResultFlag("stop_gradient", 0, false));
  }

  void Data(const pir::Op& op) {
    const Attr* name = op.FindAttr("name");
    if (name == nullptr || name->kind != Attr::Kind::kStr || op.results.size() != 1)
      return Report(op, MakeError(ErrorCode::kValidation, "pd_op.data without a name and one result"));
    ValueInfo& v = values_[op.results[0].id];
    v.var = name->s;
    v.type = op.results[0].type;
    pb::VarDesc* var = Declare(v.var, v.type);
    if (op.ResultFlag("persistable", 0, false)) {  // optimizer state, the learning rate: not a feed
      var->set_persistable(true);
      return;
    }
    var->set_need_check_feed(true);
    var->set_stop_gradient(op.ResultFlag("stop_gradient", 0, true));
    HolderVar("feed", pb::VarType::FEED_MINIBATCH);
    pb::OpDesc* feed = block_->add_ops();
    feed->set_type("feed");
    AddArgs(feed->add_inputs(), "X", {"feed"});
    AddArgs(feed->add_outputs(), "Out", {v.var});
    AddAttr(feed, MakeInt("col", feed_col_++));
  }

  void Fetch(const pir::Op& op) {
    if (op.operands.size() != 1) return Report(op, MakeError(ErrorCode::kValidation, "pd_op.fetch needs one operand"));
    auto x = TensorOf(op.operands[0]);
    if (!x.ok()) return ReportUse(op, 0, x.error());
    const Attr* col = op.FindAttr("col");
    HolderVar("fetch", pb::VarType::FETCH_LIST);
    pb::OpDesc* fetch = block_->add_ops();
    fetch->set_type("fetch");
    AddArgs(fetch->add_inputs(), "X", {*x});
    AddArgs(fetch->add_outputs(), "Out", {"fetch"});
    AddAttr(fetch, MakeInt("col", col != nullptr ? static_cast<int>(col->i) : fetch_col_));
    ++fetch_col_;
    // The fetch's own result is the value in the fetch holder; nothing reads it.
    for (const auto& r : op.results) values_[r.id].var = *x;
  }

  void HolderVar(const std::string& name, pb::VarType::Type type) {
    if (taken_.count(name)) return;
    taken_.insert(name);
    pb::VarDesc* v = block_->add_vars();
    v->set_name(name);
    v->mutable_type()->set_type(type);
    v->set_persistable(true);
    var_index_[name] = block_->vars_size() - 1;
  }

  void Full(const pir::Op& op) {
    if (op.results.size() != 1) return Report(op, MakeError(ErrorCode::kValidation, "pd_op.full needs one result"));
    ValueInfo& v = values_[op.results[0].id];
    v.type = op.results[0].type;
    v.origin = "pd_op.full";
    v.constant = ValueInfo::Const::kFull;
    const Attr* value = op.FindAttr("value");
    const Attr* shape = op.FindAttr("shape");
    const Attr* dtype = op.FindAttr("dtype");
    v.value = value != nullptr ? Number(*value) : 0;
    if (shape != nullptr) v.shape = shape->ints;
    v.dtype = dtype != nullptr ? pir::DTypeFromPirName(dtype->s) : v.type.dtype;
    if (v.dtype == DType::kUndefined) v.dtype = v.type.dtype;
    if (persistable_values_.count(op.results[0].id)) {
      // A startup initializer: materialized at once, under the name its store gives it.
      if (auto name = TensorOf(op.results[0].id); !name.ok()) Report(op, name.error());
    }
  }

  void FullIntArray(const pir::Op& op) {
    if (op.results.size() != 1)
      return Report(op, MakeError(ErrorCode::kValidation, "pd_op.full_int_array needs one result"));
    ValueInfo& v = values_[op.results[0].id];
    v.type = op.results[0].type;
    v.origin = "pd_op.full_int_array";
    v.constant = ValueInfo::Const::kIntArray;
    const Attr* value = op.FindAttr("value");
    if (value != nullptr)
      for (const auto& e : value->array) v.ints.push_back(static_cast<int64_t>(Number(e)));
    const Attr* dtype = op.FindAttr("dtype");
    v.dtype = dtype != nullptr ? pir::DTypeFromPirName(dtype->s) : DType::kInt64;
    if (v.dtype == DType::kUndefined) v.dtype = DType::kInt64;
  }

  void Combine(const pir::Op& op) {
    if (op.results.size() != 1)
      return Report(op, MakeError(ErrorCode::kValidation, "builtin.combine needs one result"));
    ValueInfo& v = values_[op.results[0].id];
    v.type = op.results[0].type;
    v.is_vec = true;
    v.origin = "builtin.combine";
    v.elements = op.operands;
  }

  void SplitVector(const pir::Op& op) {
    if (op.operands.size() != 1)
      return Report(op, MakeError(ErrorCode::kValidation, "builtin.split needs one operand"));
    ValueInfo& vec = values_[op.operands[0]];
    if (vec.poisoned) return Poison(op);
    for (size_t r = 0; r < op.results.size(); ++r) {
      ValueInfo& v = values_[op.results[r].id];
      v.type = op.results[r].type;
      if (r < vec.element_vars.size()) {
        v.var = vec.element_vars[r];
      } else if (r < vec.elements.size()) {  // splitting a combine: the combined values themselves
        v = values_[vec.elements[r]];
      } else {
        return Report(op, MakeError(ErrorCode::kValidation, "builtin.split of a vector with {} elements has {} results",
                                    vec.element_vars.size(), op.results.size()));
      }
    }
  }

  /// shadow_output / set_parameter: the stored value took the store's name when it was produced;
  /// a value that already had another name (a block argument, a parameter) is copied by assign.
  void Store(const pir::Op& op) {
    if (op.operands.empty()) return;
    auto it = preset_names_.find(op.operands[0]);
    ValueInfo& v = values_[op.operands[0]];
    if (v.poisoned || it == preset_names_.end() || v.var == it->second) return;
    auto src = TensorOf(op.operands[0]);
    if (!src.ok()) return ReportUse(op, 0, src.error());
    if (*src == it->second) return;
    pb::VarDesc* dst = Declare(it->second, v.type);
    dst->set_persistable(true);
    pb::OpDesc* assign = block_->add_ops();
    assign->set_type("assign");
    AddArgs(assign->add_inputs(), "X", {*src});
    AddArgs(assign->add_outputs(), "Out", {it->second});
  }

  /// shape64 = legacy shape (int32) + cast to int64, so the values keep PIR's type downstream.
  void Shape64(const pir::Op& op) {
    if (op.operands.size() != 1 || op.results.size() != 1)
      return Report(op, MakeError(ErrorCode::kValidation, "pd_op.shape64 needs one operand and one result"));
    auto x = TensorOf(op.operands[0]);
    if (!x.ok()) return ReportUse(op, 0, x.error());
    std::string shape32 = FreshName("shape");
    Type t32 = op.results[0].type;
    t32.dtype = DType::kInt32;
    Declare(shape32, t32)->set_stop_gradient(true);
    pb::OpDesc* shape = block_->add_ops();
    shape->set_type("shape");
    AddArgs(shape->add_inputs(), "Input", {*x});
    AddArgs(shape->add_outputs(), "Out", {shape32});
    int group = -1;
    std::string out = NameResult(op, 0, "cast", &group);
    pb::OpDesc* cast = block_->add_ops();
    cast->set_type("cast");
    AddArgs(cast->add_inputs(), "X", {shape32});
    AddArgs(cast->add_outputs(), "Out", {out});
    AddAttr(cast, MakeInt("in_dtype", static_cast<int>(DType::kInt32)));
    AddAttr(cast, MakeInt("out_dtype", static_cast<int>(DType::kInt64)));
  }

  /// full_like(x, value) with x's static shape: fill_constant (what legacy programs write for the
  /// loss gradient's seed). A dynamic shape needs fill_any_like, which paddlec does not have.
  void FullLike(const pir::Op& op) {
    if (op.operands.size() != 2 || op.results.size() != 1)
      return Report(op, MakeError(ErrorCode::kValidation, "pd_op.full_like needs two operands and one result"));
    const Type& t = op.results[0].type;
    for (int64_t d : t.dims)
      if (d < 0)
        return Report(op, MakeError(ErrorCode::kUnimplemented, "pd_op.full_like of a tensor with unknown dims [{}]",
                                    fmt::join(t.dims, ", ")));
    auto value = ConstAttr(op.operands[1], "value", AttrForm::kFloat);
    if (!value) return Report(op, MakeError(ErrorCode::kUnimplemented, "pd_op.full_like with a computed fill value"));
    int group = -1;
    std::string out = NameResult(op, 0, "fill_constant", &group);
    auto loss = TensorOf(op.operands[0]);
    if (loss.ok()) {  // full_like(loss, 1) seeds PIR's autodiff: this is a training program
      loss_var_ = *loss;
      loss_seed_op_ = block_->ops_size();
    }
    pb::OpDesc* fill = block_->add_ops();
    fill->set_type("fill_constant");
    AddArgs(fill->add_outputs(), "Out", {out});
    AddAttr(fill, MakeLongs("shape", t.dims));
    AddAttr(fill, MakeInt("dtype", static_cast<int>(t.dtype)));
    AddAttr(fill, *value);
  }

  /// PIR has no op roles; legacy programs mark them (op_role, ir/op_role.h), and paddlec's
  /// training tools read them: ops before the gradient seed are forward (the one writing the loss
  /// also Loss), the seed Backward|Loss, update ops Optimize with op_role_var [param, grad], and the
  /// rest Backward.
  void AssignRoles() {
    auto set_role = [](pb::OpDesc& op, int role) {
      for (auto& a : *op.mutable_attrs())
        if (a.name() == "op_role") return a.set_i(role);
      AddAttr(&op, MakeInt("op_role", role));
    };
    auto writes = [](const pb::OpDesc& op, const std::string& var) {
      for (const auto& s : op.outputs())
        for (const auto& a : s.arguments())
          if (a == var) return true;
      return false;
    };
    auto single_input = [](const pb::OpDesc& op, const std::string& slot) {
      for (const auto& s : op.inputs())
        if (s.parameter() == slot && s.arguments_size() == 1) return s.arguments(0);
      return std::string();
    };
    int loss_writer = -1;
    for (int i = 0; i < loss_seed_op_; ++i)
      if (writes(block_->ops(i), loss_var_)) loss_writer = i;
    for (int i = 0; i < block_->ops_size(); ++i) {
      pb::OpDesc& op = *block_->mutable_ops(i);
      if (op.type() == "feed" || op.type() == "fetch") continue;
      if (i < loss_seed_op_) {
        set_role(op, i == loss_writer ? kOpRoleForward | kOpRoleLoss : kOpRoleForward);
      } else if (i == loss_seed_op_) {
        set_role(op, kOpRoleBackward | kOpRoleLoss);
      } else if (op.type() == "sgd" || op.type() == "momentum" || op.type() == "adam") {
        set_role(op, kOpRoleOptimize);
        std::string param = single_input(op, "Param"), grad = single_input(op, "Grad");
        if (!param.empty() && !grad.empty()) {
          pb::OpDesc::Attr role_var;
          role_var.set_name("op_role_var");
          role_var.set_type(pb::STRINGS);
          role_var.add_strings(param);
          role_var.add_strings(grad);
          AddAttr(&op, std::move(role_var));
        }
      } else {
        set_role(op, kOpRoleBackward);
      }
    }
  }

  void ReportUse(const pir::Op& op, int operand, const Error& why) {
    if (why.message().empty()) return Poison(op);  // the producer's failure was reported already
    Report(op, MakeError(ErrorCode::kValidation, "operand {}: {}", operand, why.message()));
  }

  void Emit(const pir::Op& op, const OpRule& rule) {
    pb::OpDesc desc;
    desc.set_type(rule.legacy);
    std::map<std::string, std::vector<std::string>> inputs;
    std::vector<std::string> input_order;
    auto bind = [&](const std::string& slot, std::vector<std::string> args) {
      if (!inputs.count(slot)) input_order.push_back(slot);
      auto& dst = inputs[slot];
      dst.insert(dst.end(), args.begin(), args.end());
    };
    std::vector<pb::OpDesc::Attr> attrs;
    for (size_t i = 0; i < rule.operands.size(); ++i) {
      const pir::OperandRule& r = rule.operands[i];
      int64_t id = op.operands[i];
      if (r.ignore || id == 0) continue;
      ValueInfo& v = values_[id];
      if (v.poisoned) return Poison(op);
      if (!r.attr.empty()) {
        if (auto a = ConstAttr(id, r.attr, r.form)) {
          attrs.push_back(std::move(*a));
          continue;
        }
        if (r.slot.empty() && r.list_slot.empty())
          return Report(op, MakeError(ErrorCode::kUnimplemented,
                                      "operand {} must be a constant (pd_op.full / full_int_array) to become attribute "
                                      "'{}' of {}, but it is {}",
                                      i, r.attr, rule.legacy, v.origin.empty() ? "computed" : v.origin));
      }
      if (v.is_vec && (r.slot_is_list || !r.list_slot.empty())) {
        std::vector<std::string> args;
        for (int64_t e : v.elements) {
          auto name = TensorOf(e);
          if (!name.ok()) return ReportUse(op, static_cast<int>(i), name.error());
          args.push_back(*name);
        }
        bind(r.slot_is_list ? r.slot : r.list_slot, std::move(args));
        continue;
      }
      if (r.slot.empty()) {
        return Report(op, MakeError(ErrorCode::kUnimplemented,
                                    "operand {} is a single tensor, but {} takes a list there", i, rule.legacy));
      }
      auto name = TensorOf(id);
      if (!name.ok()) return ReportUse(op, static_cast<int>(i), name.error());
      bind(r.slot, {*name});
    }

    for (const auto& a : op.attrs) {
      if (a.name == "struct_name" || a.name == "place" || a.value.kind == Attr::Kind::kPlace) continue;
      const pir::AttrRule* ar = rule.FindAttrRule(a.name);
      if (ar != nullptr && ar->legacy.empty()) continue;
      auto converted =
          ConvertAttr(ar != nullptr ? ar->legacy : a.name, a.value, ar != nullptr ? ar->form : AttrForm::kNatural);
      if (!converted.ok()) return Report(op, converted.error());
      attrs.push_back(std::move(converted).value());
    }
    for (const auto& f : rule.fixed) {
      Attr literal;
      if (f.source == pir::FixedAttr::Source::kOperandDType) {
        int64_t id = f.operand < static_cast<int>(op.operands.size()) ? op.operands[f.operand] : 0;
        literal = Attr{.kind = Attr::Kind::kI32, .i = static_cast<int64_t>(values_[id].type.dtype)};
      } else if (f.literal == "true" || f.literal == "false") {
        literal = Attr{.kind = Attr::Kind::kBool, .b = f.literal == "true"};
      } else if (f.form == AttrForm::kStr) {
        literal = Attr{.kind = Attr::Kind::kStr, .s = f.literal};
      } else {
        literal = Attr{.kind = Attr::Kind::kF64, .f = std::strtod(f.literal.c_str(), nullptr)};
      }
      auto converted = ConvertAttr(f.legacy, literal, f.form);
      if (!converted.ok()) return Report(op, converted.error());
      attrs.push_back(std::move(converted).value());
    }

    // Results: fresh variables, or the variable of the input they overwrite.
    std::map<std::string, std::vector<std::string>> outputs;
    std::vector<std::string> output_order;
    int group = -1;
    for (size_t r = 0; r < op.results.size() && r < rule.results.size(); ++r) {
      const pir::ResultRule& rr = rule.results[r];
      const pir::Value& res = op.results[r];
      if (rr.drop || res.type.kind == Type::Kind::kNull) continue;
      std::vector<std::string> names;
      if (rr.list) {
        ValueInfo& v = values_[res.id];
        v.type = res.type;
        v.origin = fmt::format("result {} of {}", r, op.name);
        if (group < 0) group = counters_[rule.legacy]++;
        for (size_t e = 0; e < res.type.elements.size(); ++e) {
          std::string name = fmt::format("{}_{}.tmp_{}_{}", rule.legacy, group, r, e);
          Declare(name, res.type.elements[e]);
          names.push_back(name);
        }
        v.element_vars = names;
      } else if (!rr.inplace_of.empty() && inputs.count(rr.inplace_of) && inputs[rr.inplace_of].size() == 1) {
        ValueInfo& v = values_[res.id];
        v.type = res.type;
        v.var = inputs[rr.inplace_of].front();
        names.push_back(v.var);
      } else {
        names.push_back(NameResult(op, static_cast<int>(r), rule.legacy, &group));
      }
      if (!outputs.count(rr.slot)) output_order.push_back(rr.slot);
      auto& dst = outputs[rr.slot];
      dst.insert(dst.end(), names.begin(), names.end());
    }
    for (size_t r = rule.results.size(); r < op.results.size(); ++r)
      if (op.results[r].type.kind != Type::Kind::kNull)
        return Report(op, MakeError(ErrorCode::kValidation, "{} has {} results; paddlec's translation knows {}",
                                    op.name, op.results.size(), rule.results.size()));

    for (const auto& s : input_order) AddArgs(desc.add_inputs(), s, inputs[s]);
    for (const auto& s : output_order) AddArgs(desc.add_outputs(), s, outputs[s]);
    for (auto& a : attrs) AddAttr(&desc, std::move(a));
    *block_->add_ops() = std::move(desc);
  }

  std::string file_;
  std::map<std::string, std::vector<OpRule>> rules_;
  std::vector<Error> table_errors_;
  pb::BlockDesc* block_ = nullptr;
  std::unordered_map<int64_t, ValueInfo> values_;
  std::unordered_map<int64_t, std::string> preset_names_;
  std::unordered_set<int64_t> persistable_values_;
  std::unordered_map<std::string, int> counters_;
  std::unordered_set<std::string> taken_;
  std::unordered_map<std::string, int> var_index_;
  std::vector<Error> errors_;
  int feed_col_ = 0, fetch_col_ = 0;
  int loss_seed_op_ = -1;  // the fill_constant that full_like (the gradient seed) became
  std::string loss_var_;
};

}  // namespace

bool LooksLikePirJson(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  if (i >= bytes.size() || bytes[i] != '{') return false;
  ++i;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  return bytes.substr(i).starts_with("\"base_code\"");
}

StatusOr<pb::ProgramDesc> TranslatePirJson(std::string_view bytes, const std::string& file) {
  PC_ASSIGN_OR_RETURN(pir::Program program, pir::ReadPirProgram(bytes, file));
  return Translator(file).Run(program);
}

std::vector<PirOpMapping> PirOpMappings() {
  std::map<std::string, std::string> m = {{"pd_op.data", "feed"},          {"pd_op.fetch", "fetch"},
                                          {"pd_op.full", "fill_constant"}, {"pd_op.full_int_array", "assign_value"},
                                          {"pd_op.shape64", "shape"},      {"pd_op.full_like", "fill_constant"}};
  for (const auto& row : pir::OpTable()) m.emplace(std::string(row.pir), std::string(row.legacy));
  std::vector<PirOpMapping> out;
  for (auto& [p, l] : m) out.push_back({p, l});
  return out;
}

}  // namespace paddlec::ir
