// PaddlePaddle tensor-stream records: writing and verified reading.
#include "paddlec/io/params.h"

#include <cstring>

#include "paddlec/core/file.h"
#include "paddlec/ir/serialize.h"

namespace paddlec::io {
namespace {

namespace pb = ::paddle::framework::proto;

template <class T>
void Put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  size_t offset() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  template <class T>
  Status Get(T* v, const std::string& tensor, const char* what) {
    if (remaining() < sizeof(T)) return Truncated(tensor, what);
    std::memcpy(v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::OK();
  }
  Status Take(size_t n, std::string_view* out, const std::string& tensor, const char* what) {
    if (remaining() < n) return Truncated(tensor, what);
    *out = bytes_.substr(pos_, n);
    pos_ += n;
    return Status::OK();
  }
  Error Truncated(const std::string& tensor, const char* what) const {
    return MakeError(ErrorCode::kParse, "'{}' is truncated: it ends inside the {} of tensor '{}' (at byte {})", path_,
                     what, tensor, bytes_.size());
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
  const std::string& path_;
};

}  // namespace

StatusOr<std::string> SerializeTensorRecord(const runtime::Tensor& t) {
  std::string out;
  Put<uint32_t>(out, 0);  // LoDTensor version
  Put<uint64_t>(out, t.lod().size());
  for (const auto& level : t.lod()) {
    Put<uint64_t>(out, level.size() * sizeof(uint64_t));
    out.append(reinterpret_cast<const char*>(level.data()), level.size() * sizeof(uint64_t));
  }
  Put<uint32_t>(out, 0);  // Tensor version
  pb::VarType::TensorDesc desc;
  desc.set_data_type(static_cast<pb::VarType::Type>(DTypeToProto(t.dtype())));
  for (int64_t d : t.dims()) desc.add_dims(d);
  PC_ASSIGN_OR_RETURN(std::string desc_bytes, ir::Serialize(desc, ir::Format::kBinary));
  Put<int32_t>(out, static_cast<int32_t>(desc_bytes.size()));
  out += desc_bytes;
  if (t.nbytes() > 0) out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

Status SaveParams(const std::string& path, const std::vector<std::string>& names, const runtime::Scope& scope,
                  runtime::DeviceContext& device) {
  auto host_alloc = runtime::CpuCachingAllocator::Create();
  return WriteFileAtomicStreamed(path, [&](const ByteSink& sink) -> Status {
    for (const auto& name : names) {
      const runtime::Variable* v = scope.Find(name);
      if (v == nullptr || !v->tensor().initialized())
        return MakeError(ErrorCode::kNotFound, "cannot save parameter '{}': it holds no value", name);
      const runtime::Tensor* host = &v->tensor();
      runtime::Tensor copy;
      if (!host->place().is_cpu()) {
        PC_RETURN_IF_ERROR(device.CopyToHost(*host, copy, *host_alloc));
        host = &copy;
      }
      PC_ASSIGN_OR_RETURN(std::string record, SerializeTensorRecord(*host));
      PC_RETURN_IF_ERROR(sink(record));
    }
    return Status::OK();
  });
}

Status LoadParams(const std::string& path, const std::vector<std::string>& names, runtime::Scope& scope,
                  runtime::DeviceContext& device, const ir::Block* block) {
  PC_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ParseParams(bytes, path, names, scope, device, block);
}

Status ParseParams(std::string_view bytes, const std::string& path, const std::vector<std::string>& names,
                   runtime::Scope& scope, runtime::DeviceContext& device, const ir::Block* block) {
  Reader r(bytes, path);
  auto host_alloc = runtime::CpuCachingAllocator::Create();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    uint32_t version = 0;
    PC_RETURN_IF_ERROR(r.Get(&version, name, "header"));
    if (version != 0)
      return MakeError(ErrorCode::kParse,
                       "'{}' is not a PaddlePaddle params file: tensor '{}' (record {}) has format version {}, "
                       "expected 0",
                       path, name, i, version)
          .Note("a .pdparams file (Python pickle) is not a .pdiparams file (save_combine)");
    uint64_t lod_levels = 0;
    PC_RETURN_IF_ERROR(r.Get(&lod_levels, name, "LoD header"));
    if (lod_levels > 16)
      return MakeError(ErrorCode::kParse, "'{}': tensor '{}' claims {} LoD levels", path, name, lod_levels);
    runtime::LoD lod(lod_levels);
    for (auto& level : lod) {
      uint64_t n = 0;
      PC_RETURN_IF_ERROR(r.Get(&n, name, "LoD"));
      if (n % sizeof(uint64_t) != 0 || n > r.remaining())
        return MakeError(ErrorCode::kParse, "'{}': tensor '{}' has a malformed LoD of {} bytes", path, name, n);
      std::string_view raw;
      PC_RETURN_IF_ERROR(r.Take(n, &raw, name, "LoD"));
      level.resize(n / sizeof(uint64_t));
      if (n > 0) std::memcpy(level.data(), raw.data(), n);  // an empty level's data() may be null
    }
    PC_RETURN_IF_ERROR(r.Get(&version, name, "tensor header"));
    if (version != 0)
      return MakeError(ErrorCode::kParse, "'{}': tensor '{}' has tensor version {}, expected 0", path, name, version);
    int32_t desc_size = 0;
    PC_RETURN_IF_ERROR(r.Get(&desc_size, name, "tensor header"));
    if (desc_size < 0 || static_cast<size_t>(desc_size) > r.remaining())
      return MakeError(ErrorCode::kParse, "'{}': tensor '{}' has a malformed description size {}", path, name, desc_size);
    std::string_view desc_bytes;
    PC_RETURN_IF_ERROR(r.Take(static_cast<size_t>(desc_size), &desc_bytes, name, "description"));
    pb::VarType::TensorDesc desc;
    if (!desc.ParseFromArray(desc_bytes.data(), desc_size))
      return MakeError(ErrorCode::kParse, "'{}': the description of tensor '{}' does not parse", path, name);
    auto dtype = DTypeFromProto(desc.data_type());
    if (!dtype.ok() || SizeOf(*dtype) == 0)
      return MakeError(ErrorCode::kParse, "'{}': tensor '{}' has unsupported data type {}", path, name,
                       pb::VarType::Type_Name(desc.data_type()));
    PC_ASSIGN_OR_RETURN(Dims dims, Dims::FromRange(desc.dims().begin(), desc.dims().end()));
    if (!dims.IsFullyKnown())
      return MakeError(ErrorCode::kParse, "'{}': tensor '{}' has unknown dims {}", path, name, dims.ToString());
    PC_RETURN_IF_ERROR(CheckDims(dims));
    if (const pb::VarDesc* decl = block ? block->FindVar(name) : nullptr; decl != nullptr) {
      DType want = ir::VarDType(*decl);
      auto want_dims = ir::VarDims(*decl);
      if (want != *dtype || (want_dims.ok() && !DimsMatch(*want_dims, dims)))
        return MakeError(ErrorCode::kValidation,
                         "'{}': record {} is a {} tensor of shape {}, but the program declares parameter '{}' as {} {}",
                         path, i, DTypeName(*dtype), dims.ToString(), name, DTypeName(want),
                         want_dims.ok() ? want_dims->ToString() : "?")
            .Note("the params file belongs to a different program, or to another version of it");
    }
    runtime::Tensor host(*dtype, dims);
    if (host.nbytes() > r.remaining()) return r.Truncated(name, "data");
    PC_RETURN_IF_ERROR(host.Allocate(*host_alloc));
    std::string_view data;
    PC_RETURN_IF_ERROR(r.Take(host.nbytes(), &data, name, "data"));
    if (!data.empty()) std::memcpy(host.raw_data(), data.data(), data.size());
    host.mutable_lod() = std::move(lod);
    PC_RETURN_IF_ERROR(device.CopyFromHost(host, scope.Var(name).tensor()));
  }
  if (r.remaining() != 0)
    return MakeError(ErrorCode::kParse, "'{}' has {} bytes after the last of the {} parameters the program expects",
                     path, r.remaining(), names.size())
        .Note("the params file belongs to a program with more parameters");
  return Status::OK();
}

}  // namespace paddlec::io
