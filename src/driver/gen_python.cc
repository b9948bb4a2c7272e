// `paddlec gen-python`: the Python operator functions (paddlec.ops), generated from the OpProtos.
//
// The same text is what paddlec.ops executes at import (through _core.generate_ops_source()), so
// the static file and the functions Python users call cannot drift apart.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <set>

#include "paddlec/core/file.h"
#include "paddlec/driver/driver.h"
#include "paddlec/ir/program.h"
#include "paddlec/ops/op_checker.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::driver {
namespace {

namespace pb = ::paddle::framework::proto;

constexpr size_t kLineWidth = 100;

const std::set<std::string>& PythonKeywords() {
  static const std::set<std::string> k = {"False",  "None",   "True",    "and",      "as",       "assert", "async",
                                          "await",  "break",  "class",   "continue", "def",      "del",    "elif",
                                          "else",   "except", "finally", "for",      "from",     "global", "if",
                                          "import", "in",     "is",      "lambda",   "nonlocal", "not",    "or",
                                          "pass",   "raise",  "return",  "try",      "while",    "with",   "yield"};
  return k;
}

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

/// "XShape" -> "x_shape", "LearningRate" -> "learning_rate", "Out@GRAD" -> "out_grad",
/// "workspace_size_MB" -> "workspace_size_mb": words split at case changes, separators become '_'.
std::string SnakeCase(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (IsUpper(c)) {
      char prev = i > 0 ? name[i - 1] : '\0';
      char next = i + 1 < name.size() ? name[i + 1] : '\0';
      if (IsLower(prev) || IsDigit(prev) || (IsUpper(prev) && IsLower(next))) out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else if (IsLower(c) || IsDigit(c)) {
      out += c;
    } else {
      out += '_';
    }
  }
  std::string collapsed;
  for (char c : out)
    if (!(c == '_' && (collapsed.empty() || collapsed.back() == '_'))) collapsed += c;
  while (!collapsed.empty() && collapsed.back() == '_') collapsed.pop_back();
  if (collapsed.empty() || IsDigit(collapsed[0])) collapsed = "arg_" + collapsed;
  return collapsed;
}

std::string Identifier(std::string name) {
  if (PythonKeywords().count(name)) name += '_';
  return name;
}

bool Skipped(const pb::OpProto::Attr& a) { return a.extra(); }

/// A Python string literal for any bytes (UTF-8 text passes through).
std::string PyString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f)
          out += fmt::format("\\x{:02x}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

template <class T>
std::string PyFloat(T v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "-float(\"inf\")";
  // The shortest text that reads back as the same value at the attribute's own precision.
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

template <class List, class F>
std::string PyTuple(const List& xs, F&& item) {
  std::string s = "(";
  for (int i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + item(xs[i]);
  if (xs.size() == 1) s += ",";
  return s + ")";
}

/// The Python literal of an attribute's default value; lists become tuples (immutable defaults).
std::string PyLiteral(const pb::OpDesc::Attr& a) {
  auto str = [](const std::string& x) { return PyString(x); };
  auto num = [](auto x) { return fmt::format("{}", x); };
  auto flt = [](auto x) { return PyFloat(x); };
  auto boolean = [](bool x) { return std::string(x ? "True" : "False"); };
  switch (a.type()) {
    case pb::INT:
      return std::to_string(a.i());
    case pb::LONG:
      return std::to_string(a.l());
    case pb::FLOAT:
      return PyFloat(a.f());
    case pb::FLOAT64:
      return PyFloat(a.float64());
    case pb::STRING:
      return PyString(a.s());
    case pb::BOOLEAN:
      return boolean(a.b());
    case pb::INTS:
      return PyTuple(a.ints(), num);
    case pb::LONGS:
      return PyTuple(a.longs(), num);
    case pb::FLOATS:
      return PyTuple(a.floats(), flt);
    case pb::FLOAT64S:
      return PyTuple(a.float64s(), flt);
    case pb::BOOLEANS:
      return PyTuple(a.bools(), boolean);
    case pb::STRINGS:
      return PyTuple(a.strings(), str);
    case pb::BLOCK:
      return std::to_string(a.block_idx());
    case pb::BLOCKS:
      return PyTuple(a.blocks_idx(), num);
    default:
      return "None";
  }
}

std::string PyTypeName(pb::AttrType t) {
  switch (t) {
    case pb::INT:
    case pb::LONG:
      return "int";
    case pb::FLOAT:
    case pb::FLOAT64:
      return "float";
    case pb::STRING:
      return "str";
    case pb::BOOLEAN:
      return "bool";
    case pb::INTS:
    case pb::LONGS:
      return "list of int";
    case pb::FLOATS:
    case pb::FLOAT64S:
      return "list of float";
    case pb::BOOLEANS:
      return "list of bool";
    case pb::STRINGS:
      return "list of str";
    case pb::BLOCK:
      return "Block or int";
    case pb::BLOCKS:
      return "list of Block or int";
    default:
      return "object";
  }
}

std::string Number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

/// The checks of an attribute in words: "in [0, 1]; one of 'NCHW', 'NHWC'; non-empty".
std::string AttrChecks(const pb::OpProto::Attr& a) {
  std::vector<std::string> parts;
  if (std::string bounds = ops::AttrBoundsText(a, Number); !bounds.empty())
    parts.push_back(a.has_min() && a.has_max() ? "in " + bounds : bounds);
  if (a.allowed_strings_size()) {
    std::string v;
    for (const auto& s : a.allowed_strings()) v += (v.empty() ? "" : ", ") + PyString(s);
    parts.push_back("one of " + v);
  }
  if (a.allowed_ints_size()) {
    std::string v;
    for (int64_t x : a.allowed_ints()) v += (v.empty() ? "" : ", ") + std::to_string(x);
    parts.push_back("one of " + v);
  }
  if (a.non_empty()) parts.push_back("non-empty");
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

/// Word-wraps `text` to kLineWidth; the first line starts after `first` (already written), the
/// others are indented by `indent`.
std::string Wrap(const std::string& first, const std::string& text, size_t indent, size_t width = kLineWidth - 4) {
  std::string out = first, line_pad(indent, ' ');
  size_t col = first.size() - (first.rfind('\n') == std::string::npos ? 0 : first.rfind('\n') + 1);
  size_t i = 0;
  bool line_start = first.empty() || first.back() == ' ';
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    std::string word = text.substr(i, j - i);
    i = j + 1;
    if (word.empty()) continue;
    if (!line_start && col + 1 + word.size() > width) {
      out += "\n" + line_pad;
      col = indent;
      line_start = true;
    }
    if (!line_start) {
      out += ' ';
      ++col;
    }
    out += word;
    col += word.size();
    line_start = false;
  }
  return out;
}

/// Docstrings are emitted between triple quotes: backslashes and quote runs that would end them
/// are escaped; everything else stays as written.
std::string DocEscape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      out += "\\\\";
    } else if (s.substr(i, 3) == "\"\"\"") {
      out += "\\\"\\\"\\\"";
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct Returned {
  std::vector<const pb::OpProto::Var*> slots;
  std::vector<std::string> names;
};

/// The outputs a generated function returns: every output that is neither intermediate nor
/// dispensable, in proto order.
Returned ReturnedOutputs(const pb::OpProto& p, const std::vector<PythonArg>& args) {
  Returned r;
  for (const auto& v : p.outputs()) {
    if (v.intermediate() || v.dispensable()) continue;
    r.slots.push_back(&v);
    for (const auto& a : args)
      if (a.kind == PythonArg::Kind::kOutput && a.proto_name == v.name()) r.names.push_back(a.python_name);
  }
  return r;
}

std::string Docstring(const pb::OpProto& p, const std::vector<PythonArg>& args) {
  const std::string i4(4, ' '), i8(8, ' ');
  std::string doc = Wrap("", DocEscape(p.comment().empty() ? p.type() + " operator." : p.comment()), 0) + "\n\n";
  doc += "Args:\n";
  auto find_var = [&](const auto& vars, const std::string& name) -> const pb::OpProto::Var* {
    for (const auto& v : vars)
      if (v.name() == name) return &v;
    return nullptr;
  };
  for (const auto& a : args) {
    std::string head, text;
    if (a.kind != PythonArg::Kind::kAttr) {
      bool input = a.kind == PythonArg::Kind::kInput;
      const pb::OpProto::Var* v = find_var(input ? p.inputs() : p.outputs(), a.proto_name);
      std::string type = v->duplicable() ? "list of Variable" : "Variable";
      bool optional = !input || v->dispensable();
      head = fmt::format("{}{} ({}{}): ", i4, a.python_name, type, optional ? ", optional" : "");
      std::vector<std::string> flags;
      flags.push_back(fmt::format("{} slot ``{}``", input ? "Input" : "Output", a.proto_name));
      if (v->duplicable()) flags.push_back("duplicable");
      if (v->dispensable()) flags.push_back("dispensable");
      if (v->intermediate()) flags.push_back("intermediate, not returned");
      if (!input && !v->dispensable()) flags.push_back("created in the current block when omitted");
      if (!input && v->dispensable()) flags.push_back("bound only when given");
      std::string f;
      for (const auto& x : flags) f += (f.empty() ? "" : "; ") + x;
      text = DocEscape(v->comment()) + " [" + f + "]";
    } else {
      const pb::OpProto::Attr* at = nullptr;
      for (const auto& x : p.attrs())
        if (x.name() == a.proto_name) at = &x;
      std::string dflt = at->has_default_value() ? "default " + PyLiteral(at->default_value()) : "required";
      head = fmt::format("{}{} ({}): ", i4, a.python_name, PyTypeName(at->type()));
      std::string info = fmt::format("attribute ``{}``, {}, {}", a.proto_name, ir::AttrTypeName(at->type()), dflt);
      std::string checks = AttrChecks(*at);
      if (!checks.empty()) info += "; " + checks;
      text = DocEscape(at->comment()) + " [" + DocEscape(info) + "]";
    }
    doc += Wrap(head, text, 8) + "\n";
  }
  if (args.empty()) doc += i4 + "None.\n";
  doc += "\nReturns:\n";
  Returned r = ReturnedOutputs(p, args);
  auto describe = [&](size_t k) {
    return fmt::format("``{}`` (output ``{}``{}): {}", r.names[k], r.slots[k]->name(),
                       r.slots[k]->duplicable() ? ", a list of Variable" : "", DocEscape(r.slots[k]->comment()));
  };
  if (r.slots.empty()) {
    doc += i4 + "Operator: the appended op (it has no outputs to return).\n";
  } else if (r.slots.size() == 1) {
    doc += Wrap(i4 + (r.slots[0]->duplicable() ? "list of Variable: " : "Variable: "), describe(0), 8) + "\n";
  } else {
    std::string names;
    for (const auto& n : r.names) names += (names.empty() ? "" : ", ") + n;
    doc += fmt::format("{}tuple: ({}), in this order:\n", i4, names);
    for (size_t k = 0; k < r.slots.size(); ++k) doc += Wrap(i8 + "- ", describe(k), 10) + "\n";
  }
  doc += "\nRaises:\n";
  doc += Wrap(i4 + "TypeError: ",
              "an argument of the wrong type (a non-Variable input, an attribute value of "
              "the wrong type).",
              8) +
         "\n";
  doc += Wrap(i4 + "ValueError: ",
              "an attribute out of range or not allowed, or inputs the op rejects "
              "(paddlec's diagnostic names the op, the slots and their shapes).",
              8) +
         "\n";
  return doc;
}

std::string FunctionName(const std::string& type) { return Identifier(SnakeCase(type)); }

std::string Function(const pb::OpProto& p, const std::vector<PythonArg>& args) {
  std::string fn = FunctionName(p.type());
  std::vector<std::string> params;
  std::string ins, outs, attrs;
  for (const auto& a : args) {
    switch (a.kind) {
      case PythonArg::Kind::kInput: {
        bool dispensable = false;
        for (const auto& v : p.inputs())
          if (v.name() == a.proto_name) dispensable = v.dispensable();
        params.push_back(dispensable ? a.python_name + "=None" : a.python_name);
        ins += fmt::format("{}{}: {}", ins.empty() ? "" : ", ", PyString(a.proto_name), a.python_name);
        break;
      }
      case PythonArg::Kind::kOutput:
        params.push_back(a.python_name + "=None");
        outs += fmt::format("{}{}: {}", outs.empty() ? "" : ", ", PyString(a.proto_name), a.python_name);
        break;
      case PythonArg::Kind::kAttr:
        for (const auto& at : p.attrs())
          if (at.name() == a.proto_name)
            params.push_back(at.has_default_value() ? a.python_name + "=" + PyLiteral(at.default_value())
                                                    : a.python_name);
        attrs += fmt::format("{}{}: {}", attrs.empty() ? "" : ", ", PyString(a.proto_name), a.python_name);
        break;
    }
  }
  std::string sig = "def " + fn + "(";
  std::string one_line = sig + (params.empty() ? "" : "*, ");
  for (size_t i = 0; i < params.size(); ++i) one_line += (i ? ", " : "") + params[i];
  one_line += "):";
  std::string out;
  if (one_line.size() <= kLineWidth) {
    out = one_line + "\n";
  } else {
    out = sig + "\n    *,\n";
    for (const auto& x : params) out += "    " + x + ",\n";
    out += "):\n";
  }
  std::string doc = Docstring(p, args);
  out += "    \"\"\"";
  // Indent the docstring body by four spaces, leaving blank lines empty.
  size_t start = 0;
  bool first = true;
  while (start < doc.size()) {
    size_t end = doc.find('\n', start);
    std::string line = doc.substr(start, end - start);
    out += (first ? "" : (line.empty() ? "" : "    ")) + line + "\n";
    first = false;
    start = end + 1;
  }
  out += "    \"\"\"\n";
  auto call_arg = [](const std::string& body) { return "{" + body + "}"; };
  std::string call = fmt::format("    return _append_op({}, {}, {}, {})", PyString(p.type()), call_arg(ins),
                                 call_arg(outs), call_arg(attrs));
  if (call.size() <= kLineWidth) {
    out += call + "\n";
  } else {
    out += "    return _append_op(\n";
    out += "        " + PyString(p.type()) + ",\n";
    for (const auto* part : {&ins, &outs, &attrs}) {
      std::string item = "        " + call_arg(*part) + ",";
      if (item.size() <= kLineWidth) {
        out += item + "\n";
        continue;
      }
      // One entry per line for long dicts.
      out += "        {\n";
      size_t s = 0;
      while (s < part->size()) {
        size_t e = part->find(", \"", s);
        std::string entry = part->substr(s, e == std::string::npos ? std::string::npos : e - s);
        out += "            " + entry + ",\n";
        if (e == std::string::npos) break;
        s = e + 2;
      }
      out += "        },\n";
    }
    out += "    )\n";
  }
  return out;
}

}  // namespace

StatusOr<std::vector<PythonArg>> PythonArgs(std::string_view op_type) {
  const ops::OpInfo* info = ops::GlobalOpRegistry().Find(op_type);
  if (info == nullptr) return MakeError(ErrorCode::kNotFound, "no op named '{}' is registered", op_type);
  const pb::OpProto& p = info->proto();
  std::set<std::string> taken;
  std::vector<PythonArg> attrs, slots;
  // Attributes claim their names first: a slot that collides (dropout's Seed input against its seed
  // attribute) is the one renamed, with "_var" appended until the name is free.
  for (const auto& a : p.attrs()) {
    if (Skipped(a)) continue;
    std::string n = Identifier(SnakeCase(a.name()));
    while (taken.count(n)) n += "_attr";
    taken.insert(n);
    attrs.push_back({PythonArg::Kind::kAttr, a.name(), n});
  }
  auto add_slots = [&](const auto& vars, PythonArg::Kind kind) {
    for (const auto& v : vars) {
      std::string n = Identifier(SnakeCase(v.name()));
      while (taken.count(n)) n += "_var";
      taken.insert(n);
      slots.push_back({kind, v.name(), n});
    }
  };
  add_slots(p.inputs(), PythonArg::Kind::kInput);
  add_slots(p.outputs(), PythonArg::Kind::kOutput);
  slots.insert(slots.end(), attrs.begin(), attrs.end());
  return slots;
}

std::string PythonFunctionName(std::string_view op_type) { return FunctionName(std::string(op_type)); }

std::string GeneratePythonOps() {
  const ops::OpRegistry& registry = ops::GlobalOpRegistry();
  std::vector<const ops::OpInfo*> all = registry.All();
  std::string out;
  out += "# paddlec.ops: one function per registered operator, generated from the OpProtos by\n";
  out += fmt::format("# `paddlec gen-python` (paddlec {}). Do not edit; regenerate.\n", PADDLEC_VERSION);
  out += "\"\"\"Operator functions, one per op registered in paddlec's C++ core.\n\n";
  out += Wrap("",
              "Each function appends its op to the current block of the default main program (see "
              "paddlec.program_guard) and returns its output Variables. Arguments are keyword-only and "
              "named in snake_case after the op's slots (X -> x, XShape -> x_shape, Out@GRAD -> "
              "out_grad) and attributes; when a slot's name equals an attribute's, the attribute keeps "
              "the name and the slot gets `_var` appended (dropout: seed is the attribute, seed_var "
              "the Seed input); a name that is a Python keyword gets `_` appended. Backend-only "
              "attributes (flagged extra) are not arguments: they keep their defaults. Outputs not "
              "given are created in the current block; the function returns the outputs that are "
              "neither intermediate nor dispensable: one Variable, or a tuple in proto order.",
              0);
  out += "\n\"\"\"\n\n";
  out += "from paddlec._op_support import append_op as _append_op\n\n";
  out += "__all__ = [\n";
  for (const ops::OpInfo* info : all) out += "    " + PyString(FunctionName(info->type())) + ",\n";
  out += "]\n";
  for (const ops::OpInfo* info : all) {
    auto args = PythonArgs(info->type());
    out += "\n\n" + Function(info->proto(), *args);
  }
  return out;
}

Status RunGenPython(const GenPythonOptions& options, std::ostream& out) {
  std::string source = GeneratePythonOps();
  if (options.output.empty() || options.output == "-") {
    out << source;
    return Status::OK();
  }
  return WriteFileAtomic(options.output, source);
}

}  // namespace paddlec::driver
