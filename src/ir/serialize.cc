// Text, binary and JSON (de)serialization of ProgramDesc and CompiledProgram.
#include "paddlec/ir/serialize.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <cctype>

#include "paddlec/core/file.h"
#include "paddlec/ir/pir_json.h"

namespace paddlec::ir {
namespace {

using google::protobuf::Message;
using google::protobuf::TextFormat;
using Tree = TextFormat::ParseInfoTree;

/// Collects protobuf's text-parser complaints; keeps the first error with its position.
class TextErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (!has_error_) {
      line_ = line;
      column_ = column;
      message_ = message;
      if (message_.ends_with("got: ")) message_ += "end of input";
      has_error_ = true;
    }
  }
  void AddWarning(int, int, const std::string&) override {}
  bool has_error() const { return has_error_; }
  Error ToError(const std::string& file) const {
    SourceLocation loc{.file = file};
    if (line_ >= 0) {
      loc.line = line_ + 1;
      loc.column = column_ + 1;
    }
    return Error(ErrorCode::kParse, message_).At(loc);
  }

 private:
  bool has_error_ = false;
  int line_ = -1, column_ = -1;
  std::string message_;
};

/// Locates the element named by protobuf's InitializationErrorString path, e.g.
/// "blocks[0].ops[3].type", using the parse tree (best effort: the deepest element found).
SourceLocation LocateFieldPath(const Message& root, const Tree* tree, std::string_view path,
                               const std::string& file) {
  SourceLocation best{.file = file};
  const google::protobuf::Descriptor* desc = root.GetDescriptor();
  while (!path.empty() && tree != nullptr && desc != nullptr) {
    size_t dot = path.find('.');
    std::string_view part = path.substr(0, dot);
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    int index = -1;
    size_t br = part.find('[');
    if (br != std::string_view::npos) {
      index = std::atoi(std::string(part.substr(br + 1)).c_str());
      part = part.substr(0, br);
    }
    const auto* field = desc->FindFieldByName(std::string(part));
    if (field == nullptr) break;
    auto p = tree->GetLocation(field, field->is_repeated() ? index : -1);
    if (p.line >= 0) {
      best.line = p.line + 1;
      best.column = p.column + 1;
    }
    if (field->type() != google::protobuf::FieldDescriptor::TYPE_MESSAGE) break;
    tree = tree->GetTreeForNested(field, field->is_repeated() ? index : -1);
    desc = field->message_type();
  }
  return best;
}

Error MissingFieldsError(const Message& m, const Tree* tree, const std::string& file) {
  std::vector<std::string> missing;
  m.FindInitializationErrors(&missing);
  std::string first = missing.empty() ? std::string("?") : missing.front();
  Error e = MakeError(ErrorCode::kParse, "missing required field '{}'", first)
                .At(LocateFieldPath(m, tree, first, file));
  if (missing.size() > 1) e.Note(fmt::format("{} more required fields are missing", missing.size() - 1));
  return e;
}

struct TextParse {
  std::shared_ptr<Tree> tree;
};

Status ParseText(std::string_view bytes, Message* m, const std::string& file, TextParse* out) {
  TextErrors errors;
  auto tree = std::make_shared<Tree>();
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(tree.get());
  parser.AllowPartialMessage(true);
  google::protobuf::io::ArrayInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  if (!parser.Parse(&in, m)) {
    if (errors.has_error()) return errors.ToError(file);
    return MakeError(ErrorCode::kParse, "cannot parse text").At({.file = file});
  }
  if (!m->IsInitialized()) return MissingFieldsError(*m, tree.get(), file);
  out->tree = std::move(tree);
  return Status::OK();
}

Status ParseBinary(std::string_view bytes, Message* m, const std::string& file) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return MakeError(ErrorCode::kResourceExhausted, "'{}' is larger than 2 GiB", file);
  if (!m->ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return MakeError(ErrorCode::kParse, "not a valid binary {} ({} bytes): protobuf wire data is malformed",
                     m->GetDescriptor()->name(), bytes.size())
        .At({.file = file})
        .Advise("pass --format=text or --format=json if the file is not binary",
                "pass format='text' or format='json' if the file is not binary");
  if (!m->IsInitialized()) return MissingFieldsError(*m, nullptr, file);
  return Status::OK();
}

Status ParseJson(std::string_view bytes, Message* m, const std::string& file) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(bytes.data(), bytes.size()), m, opts);
  if (!st.ok()) {
    // protobuf appends a multi-line excerpt with a caret; keep the one-line reason.
    std::string why(st.message());
    why = why.substr(0, why.find('\n'));
    return MakeError(ErrorCode::kParse, "invalid JSON {}: {}", m->GetDescriptor()->name(), why).At({.file = file});
  }
  if (!m->IsInitialized()) return MissingFieldsError(*m, nullptr, file);
  return Status::OK();
}

Format Sniff(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  if (i < bytes.size() && bytes[i] == '{') return Format::kJson;
  size_t n = std::min<size_t>(bytes.size(), 4096);
  for (size_t k = 0; k < n; ++k) {
    unsigned char c = static_cast<unsigned char>(bytes[k]);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return Format::kBinary;
  }
  return Format::kText;
}

/// True when text or JSON input starts with a CompiledProgram field (and so is one).
bool LooksCompiled(std::string_view bytes, Format format) {
  static constexpr std::string_view kKeys[] = {
      "compiled_format_version", "startup_program", "main_program", "feed_targets", "fetch_targets",
      "parameters", "passes_applied", "loss", "param_grads", "source_file",
      "compiledFormatVersion", "startupProgram", "mainProgram", "feedTargets", "fetchTargets",
      "passesApplied", "paramGrads", "sourceFile"};
  // Skip whitespace, comments and (JSON) the opening brace and quote; then compare the first key.
  size_t i = 0;
  while (i < bytes.size()) {
    char c = bytes[i];
    if (std::isspace(static_cast<unsigned char>(c)) || (format == Format::kJson && (c == '{' || c == '"'))) {
      ++i;
    } else if (c == '#') {
      while (i < bytes.size() && bytes[i] != '\n') ++i;
    } else {
      break;
    }
  }
  std::string_view rest = bytes.substr(i);
  for (std::string_view k : kKeys) {
    if (rest.starts_with(k) && rest.size() > k.size()) {
      char next = rest[k.size()];
      if (!std::isalnum(static_cast<unsigned char>(next)) && next != '_') return true;
    }
  }
  return false;
}

const Tree* NestedTree(const Tree* root, const char* field) {
  if (root == nullptr) return nullptr;
  const auto* f = paddlec::proto::CompiledProgram::descriptor()->FindFieldByName(field);
  return root->GetTreeForNested(f, -1);
}

}  // namespace

std::string_view FormatName(Format f) {
  switch (f) {
    case Format::kText: return "text";
    case Format::kBinary: return "binary";
    case Format::kJson: return "json";
  }
  return "?";
}

StatusOr<Format> ParseFormat(std::string_view name) {
  if (name == "text" || name == "pbtxt" || name == "txt") return Format::kText;
  if (name == "binary" || name == "pb" || name == "bin") return Format::kBinary;
  if (name == "json") return Format::kJson;
  return MakeError(ErrorCode::kInvalidArgument, "unknown format '{}'", name)
      .Note("expected one of: text, binary, json");
}

std::optional<Format> FormatFromPath(std::string_view path) {
  std::string ext = FileExtension(path);
  if (ext == ".pbtxt" || ext == ".prototxt" || ext == ".textproto" || ext == ".txt") return Format::kText;
  if (ext == ".pb" || ext == ".pdmodel" || ext == ".bin") return Format::kBinary;
  if (ext == ".json") return Format::kJson;
  if (path.ends_with("__model__")) return Format::kBinary;
  return std::nullopt;
}

bool IsBareProgramPath(std::string_view path) {
  return FileExtension(path) == ".pdmodel" || path.ends_with("__model__");
}

StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view bytes, Format format,
                                              const std::string& name) {
  if (bytes.empty()) return MakeError(ErrorCode::kParse, "the file is empty").At({.file = name});
  std::unique_ptr<Module> module = Module::CreateOnArena();
  paddlec::proto::CompiledProgram& compiled = module->compiled();
  bool is_compiled = false;
  TextParse text;
  switch (format) {
    case Format::kBinary:
      // A ProgramDesc never sets field 16 (its fields land in the unknown set), so one parse as a
      // CompiledProgram tells them apart; only a bare ProgramDesc is parsed a second time.
      if (compiled.ParsePartialFromArray(bytes.data(), static_cast<int>(std::min<size_t>(bytes.size(), INT32_MAX))) &&
          compiled.has_compiled_format_version()) {
        if (!compiled.IsInitialized()) return MissingFieldsError(compiled, nullptr, name);
        is_compiled = true;
      } else {
        compiled.Clear();
        PC_RETURN_IF_ERROR(ParseBinary(bytes, compiled.mutable_main_program(), name));
      }
      break;
    case Format::kText:
      if (LooksCompiled(bytes, format)) {
        PC_RETURN_IF_ERROR(ParseText(bytes, &compiled, name, &text));
        is_compiled = true;
      } else {
        PC_RETURN_IF_ERROR(ParseText(bytes, compiled.mutable_main_program(), name, &text));
      }
      break;
    case Format::kJson:
      if (LooksLikePirJson(bytes)) {
        PC_ASSIGN_OR_RETURN(*compiled.mutable_main_program(), TranslatePirJson(bytes, name));
      } else if (LooksCompiled(bytes, format)) {
        PC_RETURN_IF_ERROR(ParseJson(bytes, &compiled, name));
        is_compiled = true;
      } else {
        PC_RETURN_IF_ERROR(ParseJson(bytes, compiled.mutable_main_program(), name));
      }
      break;
  }
  if (is_compiled && !compiled.has_main_program())
    return MakeError(ErrorCode::kParse, "the compiled program has no main_program").At({.file = name});

  SourceMap main_map(name), startup_map(name);
  if (text.tree) {
    const Tree* root = text.tree.get();
    main_map = SourceMap(name, text.tree, is_compiled ? NestedTree(root, "main_program") : root);
    if (is_compiled) startup_map = SourceMap(name, text.tree, NestedTree(root, "startup_program"));
  }
  PC_RETURN_IF_ERROR(module->Finish(std::move(main_map), std::move(startup_map)));
  module->set_was_compiled(is_compiled);
  if (!is_compiled) compiled.set_source_file(name);
  return module;
}

StatusOr<std::unique_ptr<Module>> LoadModule(const std::string& path, std::optional<Format> format) {
  PC_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  Format f = format ? *format : FormatFromPath(path).value_or(Sniff(bytes));
  return ParseModule(bytes, f, path);
}

StatusOr<pb::ProgramDesc> LoadProgramDesc(const std::string& path, std::optional<Format> format) {
  PC_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  Format f = format ? *format : FormatFromPath(path).value_or(Sniff(bytes));
  pb::ProgramDesc desc;
  TextParse text;
  switch (f) {
    case Format::kText: PC_RETURN_IF_ERROR(ParseText(bytes, &desc, path, &text)); break;
    case Format::kBinary: PC_RETURN_IF_ERROR(ParseBinary(bytes, &desc, path)); break;
    case Format::kJson:
      if (LooksLikePirJson(bytes)) {
        PC_ASSIGN_OR_RETURN(desc, TranslatePirJson(bytes, path));
      } else {
        PC_RETURN_IF_ERROR(ParseJson(bytes, &desc, path));
      }
      break;
  }
  return desc;
}

StatusOr<std::string> Serialize(const Message& m, Format format) {
  std::string out;
  switch (format) {
    case Format::kBinary: {
      google::protobuf::io::StringOutputStream stream(&out);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      if (!m.SerializePartialToCodedStream(&coded))
        return MakeError(ErrorCode::kInternal, "cannot serialize {}", m.GetDescriptor()->name());
      break;
    }
    case Format::kText: {
      TextFormat::Printer printer;
      printer.SetUseShortRepeatedPrimitives(false);
      if (!printer.PrintToString(m, &out))
        return MakeError(ErrorCode::kInternal, "cannot print {}", m.GetDescriptor()->name());
      break;
    }
    case Format::kJson: {
      google::protobuf::util::JsonPrintOptions opts;
      opts.add_whitespace = true;
      opts.preserve_proto_field_names = true;
      auto st = google::protobuf::util::MessageToJsonString(m, &out, opts);
      if (!st.ok()) return MakeError(ErrorCode::kInternal, "cannot print JSON: {}", std::string(st.message()));
      break;
    }
  }
  return out;
}

Status SaveModule(const Module& module, const std::string& path, Format format) {
  PC_ASSIGN_OR_RETURN(std::string bytes, Serialize(module.compiled(), format));
  return WriteFileAtomic(path, bytes);
}

Status SaveProgramDesc(const pb::ProgramDesc& program, const std::string& path, Format format) {
  PC_ASSIGN_OR_RETURN(std::string bytes, Serialize(program, format));
  return WriteFileAtomic(path, bytes);
}

}  // namespace paddlec::ir
