// Reading PIR JSON text into pir::Program (pir_program.h).
//
// Format facts: docs/pir_json.md. Paddle 3.0 writes version 1, 3.1 version 2
// and 3.3 version 4 (Paddle's patch files: version 3 changed kthvalue / repeat_interleave only). The
// versions differ in attribute widths, not in layout: pool2d's strides and paddings are i32 arrays in
// version 1 and i64 from version 2; leaky_relu's negative_slope (and pad3d's pad_value, the interp
// ops' scale) are f32 before version 4 and f64 from it. The reader keeps each width as written and
// the translation table converts to the legacy attribute's type, so no version needs a branch here.
#include <nlohmann/json.hpp>

#include "pir_program.h"

namespace paddlec::ir::pir {
namespace {

using Json = nlohmann::json;

/// The dialect codes of compressed op, type and attribute names ("1.conv2d" = "pd_op.conv2d").
std::string DecompressName(const std::string& name) {
  static constexpr std::pair<std::string_view, std::string_view> kDialects[] = {
      {"0", "builtin"}, {"1", "pd_op"}, {"2", "cf"}, {"3", "custom_op"}, {"4", "pd_dist"}};
  size_t dot = name.find('.');
  if (dot == std::string::npos) return name;
  std::string_view code(name.data(), dot);
  for (auto [c, d] : kDialects)
    if (c == code) return std::string(d) + name.substr(dot);
  return name;
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  StatusOr<Program> Read(const Json& root) {
    if (!root.is_object() || !root.contains("base_code"))
      return Fail("not a PIR program: the JSON object has no \"base_code\"");
    const Json& base = root["base_code"];
    std::string magic =
        base.is_object() && base.contains("magic") && base["magic"].is_string() ? base["magic"].get<std::string>() : "";
    if (magic != "pir") return Fail(fmt::format("not a PIR program: base_code.magic is '{}', expected 'pir'", magic));
    Program p;
    if (!base.contains("version") || !base["version"].is_number_integer())
      return Fail("base_code.version is missing or not an integer");
    p.version = base["version"].get<int>();
    if (base.contains("trainable") && base["trainable"].is_boolean()) p.trainable = base["trainable"].get<bool>();
    if (!root.contains("program") || !root["program"].is_object() || !root["program"].contains("regions"))
      return Fail("the file has no \"program\": {\"regions\": [...]}");
    const Json& regions = root["program"]["regions"];
    if (!regions.is_array() || regions.size() != 1)
      return Fail(
          fmt::format("the program has {} top-level regions, expected 1", regions.is_array() ? regions.size() : 0));
    PC_RETURN_IF_ERROR(ReadRegion(regions[0], &p.top));
    return p;
  }

 private:
  Error Fail(std::string message, int block = -1, int op = -1, std::string op_type = "") const {
    SourceLocation loc{.file = file_};
    loc.block = block;
    loc.op = op;
    loc.op_type = std::move(op_type);
    return Error(ErrorCode::kParse, std::move(message)).At(std::move(loc));
  }

  Status ReadRegion(const Json& j, Region* region) {
    if (!j.is_object() || !j.contains("blocks") || !j["blocks"].is_array())
      return Fail("a region without a \"blocks\" array");
    for (const Json& b : j["blocks"]) {
      Block& block = region->blocks.emplace_back();
      PC_RETURN_IF_ERROR(ReadBlock(b, &block));
    }
    return Status::OK();
  }

  Status ReadBlock(const Json& j, Block* block) {
    if (!j.is_object()) return Fail("a block that is not an object");
    std::string id = j.value("#", std::string());
    block->id = id.starts_with("block_") ? std::atoi(id.c_str() + 6) : 0;
    if (j.contains("args"))
      for (const Json& a : j["args"]) {
        Value& v = block->args.emplace_back();
        v.id = a.value("#", int64_t{0});
        PC_ASSIGN_OR_RETURN(v.type, ReadType(a.value("TT", Json())));
      }
    if (!j.contains("ops") || !j["ops"].is_array()) return Fail("a block without an \"ops\" array", block->id);
    int index = 0;
    for (const Json& o : j["ops"]) {
      Op& op = block->ops.emplace_back();
      op.block = block->id;
      op.index = index++;
      PC_RETURN_IF_ERROR(ReadOp(o, &op));
    }
    return Status::OK();
  }

  Status ReadOp(const Json& j, Op* op) {
    if (!j.is_object() || !j.contains("#") || !j["#"].is_string())
      return Fail("an op without a name (\"#\")", op->block, op->index);
    std::string code = j["#"].get<std::string>();
    if (code == "p") return ReadCompressedParameter(j, op);
    op->name = DecompressName(code);
    auto bad = [&](std::string what) { return Fail(std::move(what), op->block, op->index, op->name); };
    if (j.contains("I")) {
      if (!j["I"].is_array()) return bad("\"I\" (operands) is not an array");
      for (const Json& v : j["I"]) {
        if (!v.is_object() || !v.contains("%") || !v["%"].is_number_integer()) return bad("an operand without \"%\"");
        op->operands.push_back(v["%"].get<int64_t>());
      }
    }
    if (j.contains("O")) {
      const Json& results = j["O"];
      auto read_result = [&](const Json& v) -> Status {
        Value& r = op->results.emplace_back();
        if (!v.is_object()) return bad("a result that is not an object");
        r.id = v.value("%", int64_t{0});
        PC_ASSIGN_OR_RETURN(r.type, ReadType(v.value("TT", Json())));
        return Status::OK();
      };
      if (results.is_array()) {
        for (const Json& v : results) PC_RETURN_IF_ERROR(read_result(v));
      } else {
        PC_RETURN_IF_ERROR(read_result(results));
      }
    }
    PC_RETURN_IF_ERROR(ReadNamedAttrs(j.value("A", Json::array()), &op->attrs, *op));
    PC_RETURN_IF_ERROR(ReadNamedAttrs(j.value("OA", Json::array()), &op->result_attrs, *op));
    if (j.contains("regions")) {
      for (const Json& r : j["regions"]) {
        Region& region = op->regions.emplace_back();
        PC_RETURN_IF_ERROR(ReadRegion(r, &region));
      }
    }
    return Status::OK();
  }

  /// `{"#":"p","A":[is_distributed, is_parameter, need_clip, name],"O":{...},"OA":[persistable,
  /// stop_gradient, trainable]}`: builtin.parameter in its positional form.
  Status ReadCompressedParameter(const Json& j, Op* op) {
    op->name = "builtin.parameter";
    const Json& a = j.value("A", Json::array());
    if (!a.is_array() || a.size() < 4 || !a[3].is_string())
      return Fail("a parameter op (\"p\") whose \"A\" is not [is_distributed, is_parameter, need_clip, name]",
                  op->block, op->index, op->name);
    op->attrs.push_back({"parameter_name", Attr{.kind = Attr::Kind::kStr, .s = a[3].get<std::string>()}});
    op->attrs.push_back({"is_parameter", Attr{.kind = Attr::Kind::kBool, .b = a[1].get<int>() != 0}});
    Value& r = op->results.emplace_back();
    const Json& out = j.value("O", Json());
    r.id = out.is_object() ? out.value("%", int64_t{0}) : 0;
    PC_ASSIGN_OR_RETURN(r.type, ReadType(out.is_object() ? out.value("TT", Json()) : Json()));
    const Json& oa = j.value("OA", Json::array());
    static constexpr const char* kFlags[] = {"persistable", "stop_gradient", "trainable"};
    for (size_t k = 0; k < 3 && oa.is_array() && k < oa.size(); ++k) {
      Attr flag{.kind = Attr::Kind::kArray};
      flag.array.push_back(Attr{.kind = Attr::Kind::kBool, .b = oa[k].get<int>() != 0});
      op->result_attrs.push_back({kFlags[k], std::move(flag)});
    }
    return Status::OK();
  }

  Status ReadNamedAttrs(const Json& list, std::vector<NamedAttr>* out, const Op& op) {
    if (!list.is_array()) return Fail("attributes (\"A\"/\"OA\") are not a list", op.block, op.index, op.name);
    for (const Json& a : list) {
      if (!a.is_object() || !a.contains("N") || !a.contains("AT"))
        return Fail("an attribute without \"N\" and \"AT\"", op.block, op.index, op.name);
      NamedAttr& na = out->emplace_back();
      na.name = a["N"].get<std::string>();
      PC_ASSIGN_OR_RETURN(na.value, ReadAttr(a["AT"]));
    }
    return Status::OK();
  }

  StatusOr<Attr> ReadAttr(const Json& j) {
    Attr a;
    if (!j.is_object() || !j.contains("#")) return Fail("an attribute value without a type tag (\"#\")");
    std::string tag = j["#"].get<std::string>();
    const Json& d = j.contains("D") ? j["D"] : Json();
    auto need = [&](bool ok) -> Status {
      return ok ? Status::OK()
                : Status(Fail(fmt::format("attribute of type '{}' has malformed data {}", tag, d.dump())));
    };
    if (tag == "0.a_bool") {
      PC_RETURN_IF_ERROR(need(d.is_boolean()));
      a.kind = Attr::Kind::kBool, a.b = d.get<bool>();
    } else if (tag == "0.a_i32" || tag == "0.a_i64" || tag == "0.a_index") {
      PC_RETURN_IF_ERROR(need(d.is_number_integer()));
      a.kind = tag == "0.a_i32" ? Attr::Kind::kI32 : Attr::Kind::kI64, a.i = d.get<int64_t>();
    } else if (tag == "0.a_f32" || tag == "0.a_f64") {
      // Non-finite floats are written as strings by some writers ("inf", "nan").
      if (d.is_string()) {
        a.f = std::strtod(d.get<std::string>().c_str(), nullptr);
      } else {
        PC_RETURN_IF_ERROR(need(d.is_number()));
        a.f = d.get<double>();
      }
      a.kind = tag == "0.a_f32" ? Attr::Kind::kF32 : Attr::Kind::kF64;
    } else if (tag == "0.a_str") {
      PC_RETURN_IF_ERROR(need(d.is_string()));
      a.kind = Attr::Kind::kStr, a.s = d.get<std::string>();
    } else if (tag == "0.a_array") {
      PC_RETURN_IF_ERROR(need(d.is_array()));
      a.kind = Attr::Kind::kArray;
      for (const Json& e : d) {
        PC_ASSIGN_OR_RETURN(Attr v, ReadAttr(e));
        a.array.push_back(std::move(v));
      }
    } else if (tag == "1.a_intarray") {
      PC_RETURN_IF_ERROR(need(d.is_array()));
      a.kind = Attr::Kind::kIntArray;
      for (const Json& e : d) {
        PC_RETURN_IF_ERROR(need(e.is_number_integer()));
        a.ints.push_back(e.get<int64_t>());
      }
    } else if (tag == "1.a_dtype") {
      PC_RETURN_IF_ERROR(need(d.is_string()));
      a.kind = Attr::Kind::kDType, a.s = d.get<std::string>();
    } else if (tag == "1.a_place") {
      a.kind = Attr::Kind::kPlace;
    } else if (tag == "1.a_datalayout") {
      a.kind = Attr::Kind::kStr, a.s = d.is_string() ? d.get<std::string>() : d.dump();
    } else {
      a.kind = Attr::Kind::kOther, a.s = tag;
    }
    return a;
  }

  StatusOr<Type> ReadType(const Json& j) {
    Type t;
    if (j.is_null()) return t;
    if (!j.is_object() || !j.contains("#")) return Fail("a value type without a tag (\"#\")");
    std::string tag = j["#"].get<std::string>();
    if (tag == "NULL") return t;
    const Json& d = j.contains("D") ? j["D"] : Json();
    if (tag == "0.t_dtensor") {
      if (!d.is_array() || d.size() < 2 || !d[1].is_array())
        return Fail(fmt::format("a dense tensor type with malformed data {}", d.dump()));
      t.kind = Type::Kind::kDense;
      std::string elem = d[0].is_object() ? d[0].value("#", std::string()) : std::string();
      t.dtype = ElementType(elem);
      if (t.dtype == DType::kUndefined) return Fail(fmt::format("unknown element type '{}'", elem));
      for (const Json& x : d[1]) t.dims.push_back(x.get<int64_t>());
      return t;
    }
    if (tag == "0.t_vec") {
      t.kind = Type::Kind::kVec;
      if (d.is_array())
        for (const Json& e : d) {
          PC_ASSIGN_OR_RETURN(Type et, ReadType(e));
          t.elements.push_back(std::move(et));
        }
      return t;
    }
    t.kind = Type::Kind::kOther;
    t.tag = tag;
    return t;
  }

  static DType ElementType(std::string_view tag) {
    static constexpr std::pair<std::string_view, DType> kTypes[] = {
        {"0.t_f32", DType::kFloat32},   {"0.t_f64", DType::kFloat64}, {"0.t_f16", DType::kFloat16},
        {"0.t_bf16", DType::kBFloat16}, {"0.t_i64", DType::kInt64},   {"0.t_i32", DType::kInt32},
        {"0.t_i16", DType::kInt16},     {"0.t_i8", DType::kInt8},     {"0.t_ui8", DType::kUInt8},
        {"0.t_bool", DType::kBool}};
    for (auto [n, t] : kTypes)
      if (n == tag) return t;
    return DType::kUndefined;
  }

  std::string file_;
};

}  // namespace

const Attr* Op::FindAttr(std::string_view n) const {
  for (const auto& a : attrs)
    if (a.name == n) return &a.value;
  return nullptr;
}

bool Op::ResultFlag(std::string_view n, int r, bool fallback) const {
  for (const auto& a : result_attrs)
    if (a.name == n && a.value.kind == Attr::Kind::kArray && r < static_cast<int>(a.value.array.size()))
      return a.value.array[r].b;
  return fallback;
}

DType DTypeFromPirName(std::string_view name) {
  static constexpr std::pair<std::string_view, DType> kNames[] = {
      {"float32", DType::kFloat32},   {"float64", DType::kFloat64}, {"float16", DType::kFloat16},
      {"bfloat16", DType::kBFloat16}, {"int64", DType::kInt64},     {"int32", DType::kInt32},
      {"int16", DType::kInt16},       {"int8", DType::kInt8},       {"uint8", DType::kUInt8},
      {"bool", DType::kBool}};
  for (auto [n, t] : kNames)
    if (n == name) return t;
  return DType::kUndefined;
}

StatusOr<Program> ReadPirProgram(std::string_view bytes, const std::string& file) {
  Json root = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    // Parse again with exceptions only to learn where it failed: the message names the byte offset.
    try {
      Json ignored = Json::parse(bytes.begin(), bytes.end());
      (void)ignored;
    } catch (const Json::parse_error& e) {
      std::string why = e.what();
      size_t colon = why.find("syntax error");
      return MakeError(ErrorCode::kParse, "invalid PIR JSON: {}", colon == std::string::npos ? why : why.substr(colon))
          .At({.file = file});
    }
    return MakeError(ErrorCode::kParse, "invalid PIR JSON").At({.file = file});
  }
  try {
    return Reader(file).Read(root);
  } catch (const Json::exception& e) {
    // A value of an unexpected JSON type deep in an op (get<> on a string where a number belongs).
    return MakeError(ErrorCode::kParse, "malformed PIR program: {}", e.what()).At({.file = file});
  }
}

}  // namespace paddlec::ir::pir
