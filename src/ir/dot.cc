// Graphviz graphs of programs (`paddlec compile --emit=dot`).
#include <set>

#include "paddlec/ir/op_role.h"
#include "paddlec/ir/printer.h"

namespace paddlec::ir {
namespace {

/// A string as a quoted DOT identifier or label (a newline becomes DOT's line break).
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct DotWriter {
  const Program& program;
  std::string out;
  std::set<std::string> drawn;  // variable node ids already written

  /// The block that declares `name` as seen from block `b` (-1: undeclared).
  int DeclaringBlock(int b, const std::string& name) const {
    for (int x = b; x >= 0; x = program.block(x).parent_idx())
      for (const auto& v : program.block(x).desc().vars())
        if (v.name() == name) return x;
    return -1;
  }

  std::string VarNode(int b, const std::string& name, const std::string& indent) {
    int decl = DeclaringBlock(b, name);
    std::string id = Quote(fmt::format("v{}:{}", std::max(decl, 0), name));
    if (!drawn.insert(id).second) return id;
    std::string label = name, style = "shape=ellipse";
    if (decl >= 0) {
      const pb::VarDesc* v = nullptr;
      for (const auto& x : program.block(decl).desc().vars())
        if (x.name() == name) v = &x;
      if (IsTensorVar(*v)) {
        auto d = VarDims(*v);
        label += fmt::format("\n{} {}", DTypeName(VarDType(*v)), d.ok() ? d->ToString() : "?");
      }
      if (v->persistable())
        style = "shape=box, style=\"filled\", fillcolor=\"#fde3b5\"";
      else if (v->need_check_feed())
        style = "shape=ellipse, style=\"filled\", fillcolor=\"#cdebc5\"";
      else if (name.find("@GRAD") != std::string::npos)
        style = "shape=ellipse, color=\"#b04a4a\"";
    }
    out += fmt::format("{}{} [label={}, {}];\n", indent, id, Quote(label), style);
    return id;
  }

  void WriteBlock(int b, const std::string& indent) {
    const Block& block = program.block(b);
    for (int i = 0; i < block.num_ops(); ++i) {
      const pb::OpDesc& op = block.desc().ops(i);
      std::string id = Quote(fmt::format("b{}op{}", b, i));
      int role = OpRoleOf(op);
      const char* fill = (role & kOpRoleOptimize) ? "#dddddd" : (role & kOpRoleBackward) ? "#f6d3d3" : "#d5e5f7";
      out += fmt::format("{}{} [label={}, shape=box, style=\"rounded,filled\", fillcolor=\"{}\"];\n", indent, id,
                         Quote(op.type()), fill);
      for (const auto& slot : op.inputs())
        for (const auto& a : slot.arguments())
          if (!a.empty() && a != kEmptyVarName) out += fmt::format("{}{} -> {};\n", indent, VarNode(b, a, indent), id);
      for (const auto& slot : op.outputs())
        for (const auto& a : slot.arguments())
          if (!a.empty() && a != kEmptyVarName) out += fmt::format("{}{} -> {};\n", indent, id, VarNode(b, a, indent));
      for (const auto& attr : op.attrs()) {
        std::vector<int> subs;
        if (attr.type() == pb::BLOCK) subs.push_back(attr.block_idx());
        if (attr.type() == pb::BLOCKS) subs.assign(attr.blocks_idx().begin(), attr.blocks_idx().end());
        for (int s : subs) {
          if (s <= 0 || s >= program.num_blocks()) continue;
          out += fmt::format("{}subgraph cluster_b{} {{\n{}  label={}; style=\"rounded,dashed\"; color=\"#7a7a7a\";\n",
                             indent, s, indent, Quote(fmt::format("block {} ({} {})", s, op.type(), attr.name())));
          std::string inner = indent + "  ";
          if (program.block(s).num_ops() == 0)
            out +=
                fmt::format("{}{} [label=\"(empty)\", shape=plaintext];\n", inner, Quote(fmt::format("b{}empty", s)));
          WriteBlock(s, inner);
          out += indent + "}\n";
          // The edge into the cluster starts at the op that runs the sub-block.
          std::string first =
              program.block(s).num_ops() > 0 ? Quote(fmt::format("b{}op0", s)) : Quote(fmt::format("b{}empty", s));
          out += fmt::format("{}{} -> {} [style=dashed, lhead=cluster_b{}];\n", indent, id, first, s);
        }
      }
    }
  }
};

}  // namespace

std::string FormatDot(const Program& program) {
  DotWriter w{program};
  w.out =
      "digraph program {\n  compound=true;\n  rankdir=TB;\n"
      "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [color=\"#555555\", arrowsize=0.6];\n";
  if (program.num_blocks() > 0) w.WriteBlock(0, "  ");
  w.out += "}\n";
  return w.out;
}

}  // namespace paddlec::ir
