// Shape, op and program listings.
#include "paddlec/ir/printer.h"

#include <algorithm>
#include <vector>

#include "paddlec/ir/op_role.h"

namespace paddlec::ir {
namespace {

std::string Role(const pb::VarDesc& v) {
  switch (v.type().type()) {
    case pb::VarType::FEED_MINIBATCH: return "feed holder";
    case pb::VarType::FETCH_LIST: return "fetch holder";
    default: break;
  }
  if (v.persistable()) return "persistable";
  if (v.name().find("@GRAD") != std::string::npos) return "gradient";
  if (v.need_check_feed()) return "data";
  return "";
}

}  // namespace

std::string FormatShapes(const Program& program) {
  std::string out;
  for (int b = 0; b < program.num_blocks(); ++b) {
    const Block& block = program.block(b);
    const auto& vars = block.desc().vars();
    out += fmt::format("block {}{} ({} ops, {} vars)\n", b,
                       b == 0 ? std::string() : fmt::format(" (parent {})", block.parent_idx()), block.num_ops(),
                       vars.size());
    size_t name_w = 4, type_w = 5, dims_w = 4;
    std::vector<std::array<std::string, 4>> rows;
    for (const auto& v : vars) {
      std::string dtype, dims;
      if (IsTensorVar(v)) {
        dtype = std::string(DTypeName(VarDType(v)));
        auto d = VarDims(v);
        dims = d.ok() ? d->ToString() : "?";
      } else {
        dtype = pb::VarType::Type_Name(v.type().type());
      }
      rows.push_back({v.name(), dtype, dims, Role(v)});
      name_w = std::max(name_w, v.name().size());
      type_w = std::max(type_w, dtype.size());
      dims_w = std::max(dims_w, dims.size());
    }
    for (const auto& r : rows) {
      std::string line = fmt::format("  {:<{}}  {:<{}}  {:<{}}  {}", r[0], name_w, r[1], type_w, r[2], dims_w, r[3]);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
  }
  return out;
}

std::string FormatOps(const Program& program) {
  std::string out;
  for (int b = 0; b < program.num_blocks(); ++b) {
    const auto& ops = program.block(b).desc().ops();
    out += fmt::format("block {}\n", b);
    for (int i = 0; i < ops.size(); ++i) {
      auto slots = [](const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& vs) {
        std::string s;
        for (const auto& v : vs) {
          if (!s.empty()) s += ", ";
          s += v.parameter() + "=";
          for (int k = 0; k < v.arguments_size(); ++k) s += (k ? "|" : "") + v.arguments(k);
        }
        return s;
      };
      out += fmt::format("  {:>4}  {}({}) -> ({})\n", i, ops[i].type(), slots(ops[i].inputs()), slots(ops[i].outputs()));
    }
  }
  return out;
}

namespace {

// Paddle's bookkeeping attributes: where an op came from, not what it computes.
bool IsBookkeepingAttr(std::string_view name) {
  return name == "op_callstack" || name == "op_namescope" || name == "op_device";
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

template <class Range, class F>
std::string List(const Range& r, F item) {
  std::string s = "[";
  bool first = true;
  for (const auto& v : r) {
    if (!first) s += ", ";
    first = false;
    s += item(v);
  }
  return s + "]";
}

// Shortest text that reads back to the same value ({} in fmt is round-trip exact).
template <class T>
std::string Num(T v) {
  return fmt::format("{}", v);
}

std::string ScalarValue(const pb::Scalar& s) {
  switch (s.type()) {
    case pb::Scalar::BOOLEAN:
      return s.b() ? "true" : "false";
    case pb::Scalar::LONG:
      return Num(s.i());
    case pb::Scalar::FLOAT64:
      return Num(s.r());
    case pb::Scalar::COMPLEX128:
      return fmt::format("({}, {})", s.c().r(), s.c().i());
  }
  return "?";
}

std::string AttrValue(const pb::OpDesc::Attr& a) {
  auto block_ref = [](int32_t b) { return fmt::format("<block {}>", b); };
  auto boolean = [](bool b) { return std::string(b ? "true" : "false"); };
  switch (a.type()) {
    case pb::INT:
      return Num(a.i());
    case pb::LONG:
      return Num(a.l());
    case pb::FLOAT:
      return Num(a.f());
    case pb::FLOAT64:
      return Num(a.float64());
    case pb::STRING:
      return Quote(a.s());
    case pb::BOOLEAN:
      return boolean(a.b());
    case pb::INTS:
      return List(a.ints(), Num<int32_t>);
    case pb::LONGS:
      return List(a.longs(), Num<int64_t>);
    case pb::FLOATS:
      return List(a.floats(), Num<float>);
    case pb::FLOAT64S:
      return List(a.float64s(), Num<double>);
    case pb::STRINGS:
      return List(a.strings(), Quote);
    case pb::BOOLEANS:
      return List(a.bools(), boolean);
    case pb::BLOCK:
      return block_ref(a.block_idx());
    case pb::BLOCKS:
      return List(a.blocks_idx(), block_ref);
    case pb::VAR:
      return a.var_name();
    case pb::VARS:
      return List(a.vars_name(), [](const std::string& v) { return v; });
    case pb::SCALAR:
      return ScalarValue(a.scalar());
    case pb::SCALARS:
      return List(a.scalars(), ScalarValue);
  }
  return "?";
}

// op_role's bit flags by name (ir/op_role.h): "backward|loss".
std::string OpRole(int32_t role) {
  static constexpr std::pair<int32_t, std::string_view> kRoles[] = {
      {kOpRoleBackward, "backward"}, {kOpRoleOptimize, "optimize"},    {kOpRoleRPC, "rpc"},
      {kOpRoleDist, "dist"},         {kOpRoleLRSched, "lrsched"},      {kOpRoleLoss, "loss"},
      {kOpRoleNotSpecified, "not_specified"}};
  constexpr int32_t kNotForward =
      kOpRoleBackward | kOpRoleOptimize | kOpRoleRPC | kOpRoleDist | kOpRoleLRSched | kOpRoleNotSpecified;
  std::string s = (role & kNotForward) == 0 ? "forward" : "";
  for (const auto& [bit, name] : kRoles) {
    if (!(role & bit)) continue;
    s += (s.empty() ? "" : "|") + std::string(name);
    role &= ~bit;
  }
  if (role != 0) s += fmt::format("|{:#x}", role);
  return s;
}

std::string Slots(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& slots) {
  std::string s;
  for (const auto& v : slots) {
    if (!s.empty()) s += ", ";
    s += v.parameter() + "=";
    if (v.arguments_size() == 1)
      s += v.arguments(0);
    else
      s += List(v.arguments(), [](const std::string& a) { return a; });
  }
  return s;
}

std::string OpLine(const pb::OpDesc& op, int index) {
  std::string line = fmt::format("op {}: {}({}) -> ({})", index, op.type(), Slots(op.inputs()), Slots(op.outputs()));
  if (op.is_target()) line += " target";
  std::vector<const pb::OpDesc::Attr*> attrs;
  for (const auto& a : op.attrs())
    if (!IsBookkeepingAttr(a.name())) attrs.push_back(&a);
  std::stable_sort(attrs.begin(), attrs.end(), [](auto* x, auto* y) { return x->name() < y->name(); });
  if (!attrs.empty()) {
    line += " {";
    for (size_t i = 0; i < attrs.size(); ++i)
      line +=
          (i ? ", " : "") + attrs[i]->name() + "=" +
          (attrs[i]->name() == "op_role" && attrs[i]->type() == pb::INT ? OpRole(attrs[i]->i()) : AttrValue(*attrs[i]));
    line += "}";
  }
  return line;
}

std::string TensorType(const pb::VarType::TensorDesc& t) {
  auto dtype = DTypeFromProto(t.data_type());
  std::string name = dtype.ok() ? std::string(DTypeName(*dtype))
                                : pb::VarType::Type_Name(static_cast<pb::VarType::Type>(t.data_type()));
  return name + List(t.dims(), Num<int64_t>);
}

std::string VarLine(const pb::VarDesc& v) {
  const pb::VarType& t = v.type();
  std::string type;
  int lod_level = 0;
  if (t.type() == pb::VarType::LOD_TENSOR && t.has_lod_tensor()) {
    type = TensorType(t.lod_tensor().tensor());
    lod_level = t.lod_tensor().lod_level();
  } else if (t.type() == pb::VarType::SELECTED_ROWS && t.has_selected_rows()) {
    type = "selected_rows " + TensorType(t.selected_rows());
  } else if (t.type() == pb::VarType::LOD_TENSOR_ARRAY && t.has_tensor_array()) {
    type = "tensor_array " + TensorType(t.tensor_array().tensor());
    lod_level = t.tensor_array().lod_level();
  } else {
    type = pb::VarType::Type_Name(t.type());
  }
  std::string line = fmt::format("var {}: {}", v.name(), type);
  if (lod_level != 0) line += fmt::format(" lod_level={}", lod_level);
  if (v.persistable()) line += " persistable";
  if (v.is_parameter()) line += " parameter";
  if (v.need_check_feed()) line += " data";
  if (v.stop_gradient()) line += " stop_gradient";
  if (v.attrs_size() > 0) {
    std::vector<const pb::VarDesc::Attr*> attrs;
    for (const auto& a : v.attrs()) attrs.push_back(&a);
    std::stable_sort(attrs.begin(), attrs.end(), [](auto* x, auto* y) { return x->name() < y->name(); });
    line += " {";
    for (size_t i = 0; i < attrs.size(); ++i) {
      const pb::VarDesc::Attr& a = *attrs[i];
      std::string value = a.type() == pb::INT    ? Num(a.i())
                          : a.type() == pb::INTS ? List(a.ints(), Num<int32_t>)
                                                 : Quote(a.s());
      line += (i ? ", " : "") + a.name() + "=" + value;
    }
    line += "}";
  }
  return line;
}

std::string Count(int n, std::string_view what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); }

}  // namespace

std::string FormatListing(const Program& program, std::string_view label) {
  std::string out;
  if (program.num_blocks() == 0) return fmt::format("{}: no blocks\n", label);
  for (int b = 0; b < program.num_blocks(); ++b) {
    const pb::BlockDesc& block = program.block(b).desc();
    out += fmt::format("{} block {}:", label, b);
    if (b != 0) out += fmt::format(" parent {},", block.parent_idx());
    if (block.forward_block_idx() >= 0) out += fmt::format(" forward block {},", block.forward_block_idx());
    out += fmt::format(" {}, {}\n", Count(block.vars_size(), "var"), Count(block.ops_size(), "op"));
    for (const auto& v : block.vars()) out += "  " + VarLine(v) + "\n";
    for (int i = 0; i < block.ops_size(); ++i) out += "  " + OpLine(block.ops(i), i) + "\n";
  }
  return out;
}

std::string FormatListing(const Module& module) {
  return FormatListing(module.main(), "main") + FormatListing(module.startup(), "startup");
}

}  // namespace paddlec::ir
