// .npy parsing and writing.
#include "paddlec/io/npy.h"

#include <cstring>

#include "paddlec/core/file.h"

namespace paddlec::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct Header {
  std::string descr;
  bool fortran = false;
  Dims shape;
};

Error Bad(const std::string& name, std::string why) {
  return MakeError(ErrorCode::kParse, "'{}' is not a valid .npy file: {}", name, why);
}

/// Finds `'key':` in the header dict and returns the text after it.
std::optional<std::string_view> After(std::string_view dict, std::string_view key) {
  for (char q : {'\'', '"'}) {
    std::string k = std::string(1, q) + std::string(key) + std::string(1, q);
    size_t p = dict.find(k);
    if (p == std::string_view::npos) continue;
    p = dict.find(':', p + k.size());
    if (p == std::string_view::npos) return std::nullopt;
    std::string_view rest = dict.substr(p + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    return rest;
  }
  return std::nullopt;
}

StatusOr<Header> ParseHeader(std::string_view dict, const std::string& name) {
  Header h;
  auto descr = After(dict, "descr");
  if (!descr || descr->empty() || ((*descr)[0] != '\'' && (*descr)[0] != '"'))
    return Bad(name, "header has no 'descr'");
  size_t end = descr->find((*descr)[0], 1);
  if (end == std::string_view::npos) return Bad(name, "unterminated 'descr'");
  h.descr = std::string(descr->substr(1, end - 1));
  auto fortran = After(dict, "fortran_order");
  if (!fortran) return Bad(name, "header has no 'fortran_order'");
  h.fortran = fortran->starts_with("True");
  auto shape = After(dict, "shape");
  if (!shape || shape->empty() || (*shape)[0] != '(') return Bad(name, "header has no 'shape'");
  size_t close = shape->find(')');
  if (close == std::string_view::npos) return Bad(name, "unterminated 'shape'");
  std::string_view body = shape->substr(1, close - 1);
  while (!body.empty()) {
    while (!body.empty() && (body.front() == ' ' || body.front() == ',')) body.remove_prefix(1);
    if (body.empty()) break;
    int64_t v = 0;
    size_t i = 0;
    while (i < body.size() && body[i] >= '0' && body[i] <= '9') {
      if (v > (int64_t{1} << 50)) return Bad(name, "a dimension is absurdly large");
      v = v * 10 + (body[i] - '0');
      ++i;
    }
    if (i == 0) return Bad(name, fmt::format("bad shape '({})'", shape->substr(1, close - 1)));
    if (h.shape.rank() == kMaxRank) return Bad(name, fmt::format("rank exceeds {}", kMaxRank));
    h.shape.push_back(v);
    body.remove_prefix(i);
  }
  return h;
}

StatusOr<DType> DTypeFromDescr(const std::string& d, const std::string& name) {
  if (d.size() < 2) return Bad(name, fmt::format("bad dtype '{}'", d));
  char order = d[0];
  std::string_view code = std::string_view(d).substr(1);
  bool one_byte = code == "b1" || code == "u1" || code == "i1";
  if (order == '>' && !one_byte)
    return MakeError(ErrorCode::kUnimplemented, "'{}' holds big-endian data ({}); save it little-endian", name, d);
  if (code == "f4") return DType::kFloat32;
  if (code == "f8") return DType::kFloat64;
  if (code == "i8") return DType::kInt64;
  if (code == "i4") return DType::kInt32;
  if (code == "u1") return DType::kUInt8;
  if (code == "i1") return DType::kInt8;
  if (code == "b1") return DType::kBool;
  return MakeError(ErrorCode::kUnimplemented, "'{}' has dtype '{}', which paddlec does not read", name, d)
      .Note("supported: float32, float64, int64, int32, int8, uint8, bool");
}

std::string DescrOf(DType t) {
  switch (t) {
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    case DType::kInt64: return "<i8";
    case DType::kInt32: return "<i4";
    case DType::kInt16: return "<i2";
    case DType::kUInt8: return "|u1";
    case DType::kInt8: return "|i1";
    case DType::kBool: return "|b1";
    default: return "";
  }
}

}  // namespace

StatusOr<runtime::Tensor> ParseNpy(std::string_view bytes, runtime::Allocator& alloc, const std::string& name) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) return Bad(name, "missing the \\x93NUMPY magic");
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Bad(name, "truncated header");
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    offset = 12;
  } else {
    return Bad(name, fmt::format("unknown format version {}", major));
  }
  if (header_len > bytes.size() - offset) return Bad(name, "truncated header");
  PC_ASSIGN_OR_RETURN(Header h, ParseHeader(bytes.substr(offset, header_len), name));
  if (h.fortran) return MakeError(ErrorCode::kUnimplemented, "'{}' is in Fortran order; save it in C order", name);
  PC_ASSIGN_OR_RETURN(DType dtype, DTypeFromDescr(h.descr, name));
  PC_RETURN_IF_ERROR(CheckDims(h.shape));
  runtime::Tensor t(dtype, h.shape);
  size_t data_offset = offset + header_len;
  size_t have = bytes.size() - data_offset;
  if (have != t.nbytes())
    return Bad(name, fmt::format("shape {} of {} needs {} data bytes, the file has {}", h.shape.ToString(),
                                 DTypeName(dtype), t.nbytes(), have));
  PC_RETURN_IF_ERROR(t.Allocate(alloc));
  if (t.nbytes() > 0) std::memcpy(t.raw_data(), bytes.data() + data_offset, t.nbytes());
  return t;
}

StatusOr<runtime::Tensor> ReadNpy(const std::string& path, runtime::Allocator& alloc) {
  PC_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ParseNpy(bytes, alloc, path);
}

StatusOr<std::string> SerializeNpy(const runtime::Tensor& t) {
  std::string descr = DescrOf(t.dtype());
  if (descr.empty())
    return MakeError(ErrorCode::kUnimplemented, "cannot write {} tensors as .npy", DTypeName(t.dtype()));
  std::string shape;
  for (int i = 0; i < t.dims().rank(); ++i) shape += fmt::format("{}, ", t.dims()[i]);
  if (t.dims().rank() > 1) shape.resize(shape.size() - 2);
  else if (t.dims().rank() == 1) shape.resize(shape.size() - 1);
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  out += dict;
  if (t.nbytes() > 0) out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

Status WriteNpy(const std::string& path, const runtime::Tensor& t) {
  PC_ASSIGN_OR_RETURN(std::string bytes, SerializeNpy(t));
  return WriteFileAtomic(path, bytes);
}

}  // namespace paddlec::io
