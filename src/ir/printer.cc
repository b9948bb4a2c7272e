// Shape and op listings.
#include "paddlec/ir/printer.h"

#include <algorithm>

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

}  // namespace paddlec::ir
