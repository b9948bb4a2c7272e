// .npz archives: the zip container around .npy members (see npz.h). Only what NumPy writes is
// needed: no encryption, no multi-disk archives, methods stored (0) and deflate (8).
#include "paddlec/io/npz.h"

#include <zlib.h>

#include <cstring>
#include <set>

#include "paddlec/core/file.h"
#include "paddlec/io/npy.h"

namespace paddlec::io {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50;
constexpr uint32_t kZip64End = 0x06064b50, kZip64Locator = 0x07064b50;
constexpr uint32_t kNoValue32 = 0xffffffff;

Error Bad(const std::string& name, const std::string& why) {
  return MakeError(ErrorCode::kParse, "'{}' is not a valid .npz archive: {}", name, why);
}

/// Little-endian reads bounded by the archive; `ok` turns false on any read past its end.
struct Reader {
  std::string_view bytes;
  bool ok = true;
  uint64_t Get(uint64_t at, int width) {
    if (at > bytes.size() || bytes.size() - at < static_cast<uint64_t>(width)) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
    return v;
  }
};

void Put(std::string& out, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

StatusOr<std::string> Inflate(std::string_view in, uint64_t size, const std::string& name, const std::string& member) {
  std::string out(size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return Bad(name, "cannot start zlib");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&z, Z_FINISH);
  uint64_t produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != size)
    return Bad(name, fmt::format("member '{}' does not inflate to its recorded {} bytes", member, size));
  return out;
}

}  // namespace

StatusOr<NamedTensors> ParseNpz(std::string_view bytes, runtime::Allocator& alloc, const std::string& name) {
  Reader r{bytes};
  // The end record sits in the last 22 + 65535 (comment) bytes.
  if (bytes.size() < 22) return Bad(name, "too short for a zip archive");
  uint64_t end = bytes.size() - 22, stop = bytes.size() > 22 + 65535 ? bytes.size() - 22 - 65535 : 0;
  while (r.Get(end, 4) != kEnd) {
    if (end == stop) return Bad(name, "no end-of-central-directory record (is it a zip file?)");
    --end;
  }
  uint64_t count = r.Get(end + 10, 2), cd_size = r.Get(end + 12, 4), cd_offset = r.Get(end + 16, 4);
  if (count == 0xffff || cd_offset == kNoValue32 || cd_size == kNoValue32) {
    if (end < 20 || r.Get(end - 20, 4) != kZip64Locator) return Bad(name, "zip64 end record missing");
    uint64_t z64 = r.Get(end - 20 + 8, 8);
    if (r.Get(z64, 4) != kZip64End) return Bad(name, "bad zip64 end record");
    count = r.Get(z64 + 32, 8);
    cd_size = r.Get(z64 + 40, 8);
    cd_offset = r.Get(z64 + 48, 8);
  }
  if (!r.ok || cd_offset > bytes.size() || cd_size > bytes.size() - cd_offset || count > cd_size / 46)
    return Bad(name, "the central directory lies outside the file");

  NamedTensors out;
  std::set<std::string> seen;
  uint64_t at = cd_offset;
  for (uint64_t i = 0; i < count; ++i) {
    if (r.Get(at, 4) != kCentralHeader) return Bad(name, fmt::format("bad central directory entry {}", i));
    uint64_t flags = r.Get(at + 8, 2), method = r.Get(at + 10, 2), crc = r.Get(at + 16, 4);
    uint64_t csize = r.Get(at + 20, 4), usize = r.Get(at + 24, 4), local = r.Get(at + 42, 4);
    uint64_t nlen = r.Get(at + 28, 2), xlen = r.Get(at + 30, 2), clen = r.Get(at + 32, 2);
    if (!r.ok || nlen > bytes.size() - at - 46) return Bad(name, "truncated central directory");
    std::string member(bytes.substr(at + 46, nlen));
    // zip64 sizes and offset replace the fields that read 0xffffffff, in this order.
    for (uint64_t x = at + 46 + nlen; x + 4 <= at + 46 + nlen + xlen;) {
      uint64_t id = r.Get(x, 2), len = r.Get(x + 2, 2), v = x + 4;
      if (id == 1) {
        if (usize == kNoValue32) usize = r.Get(v, 8), v += 8;
        if (csize == kNoValue32) csize = r.Get(v, 8), v += 8;
        if (local == kNoValue32) local = r.Get(v, 8);
      }
      x += 4 + len;
    }
    at += 46 + nlen + xlen + clen;
    if (flags & 1) return Bad(name, fmt::format("member '{}' is encrypted", member));
    if (r.Get(local, 4) != kLocalHeader) return Bad(name, fmt::format("member '{}' has no local header", member));
    uint64_t data = local + 30 + r.Get(local + 26, 2) + r.Get(local + 28, 2);
    if (!r.ok || data > bytes.size() || csize > bytes.size() - data)
      return Bad(name, fmt::format("member '{}' runs past the end of the file", member));
    std::string_view stored = bytes.substr(data, csize);
    std::string inflated;
    if (method == 8) {
      // Deflate expands at most about 1032:1; a larger recorded size is a lie, not a reason to allocate.
      if (usize > 1032 * csize + 64) return Bad(name, fmt::format("member '{}' claims an impossible size", member));
      PC_ASSIGN_OR_RETURN(inflated, Inflate(stored, usize, name, member));
      stored = inflated;
    } else if (method != 0 || usize != csize) {
      return MakeError(ErrorCode::kUnimplemented, "'{}': member '{}' uses zip compression method {}", name, member,
                       method)
          .Note("write the archive with np.savez or np.savez_compressed");
    }
    if (crc32(0, reinterpret_cast<const Bytef*>(stored.data()), static_cast<uInt>(stored.size())) != crc)
      return Bad(name, fmt::format("member '{}' fails its CRC-32 check", member));
    std::string array = member.ends_with(".npy") ? member.substr(0, member.size() - 4) : member;
    if (!seen.insert(array).second) return Bad(name, fmt::format("array '{}' appears twice", array));
    PC_ASSIGN_OR_RETURN(runtime::Tensor t, ParseNpy(stored, alloc, name + ":" + member));
    out.emplace_back(std::move(array), std::move(t));
  }
  return out;
}

StatusOr<NamedTensors> ReadNpz(const std::string& path, runtime::Allocator& alloc) {
  PC_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ParseNpz(bytes, alloc, path);
}

StatusOr<std::string> SerializeNpz(const NamedTensors& tensors) {
  std::string out, directory;
  for (const auto& [array, t] : tensors) {
    PC_ASSIGN_OR_RETURN(std::string npy, SerializeNpy(t));
    std::string member = array + ".npy";
    if (npy.size() >= kNoValue32 || out.size() >= kNoValue32)
      return MakeError(ErrorCode::kUnimplemented, "array '{}' is too large for an .npz without zip64", array);
    uint32_t crc = crc32(0, reinterpret_cast<const Bytef*>(npy.data()), static_cast<uInt>(npy.size()));
    auto common = [&](std::string& h) {
      Put(h, 20, 2);                               // version needed: 2.0
      Put(h, 0, 2);                                // flags
      Put(h, 0, 2);                                // method: stored
      Put(h, 0, 2);                                // time
      Put(h, (1980 - 1980) << 9 | 1 << 5 | 1, 2);  // date: 1980-01-01, so archives are reproducible
      Put(h, crc, 4);
      Put(h, npy.size(), 4);
      Put(h, npy.size(), 4);
      Put(h, member.size(), 2);
      Put(h, 0, 2);  // extra length
    };
    std::string cd;
    Put(cd, kCentralHeader, 4);
    Put(cd, 20, 2);  // made by
    common(cd);
    Put(cd, 0, 2);  // comment length
    Put(cd, 0, 2);  // disk
    Put(cd, 0, 2);  // internal attributes
    Put(cd, 0, 4);  // external attributes
    Put(cd, out.size(), 4);
    directory += cd + member;
    Put(out, kLocalHeader, 4);
    common(out);
    out += member;
    out += npy;
  }
  uint64_t cd_offset = out.size();
  out += directory;
  Put(out, kEnd, 4);
  Put(out, 0, 4);  // disk numbers
  Put(out, tensors.size(), 2);
  Put(out, tensors.size(), 2);
  Put(out, directory.size(), 4);
  Put(out, cd_offset, 4);
  Put(out, 0, 2);  // comment length
  return out;
}

Status WriteNpz(const std::string& path, const NamedTensors& tensors) {
  PC_ASSIGN_OR_RETURN(std::string bytes, SerializeNpz(tensors));
  return WriteFileAtomic(path, bytes);
}

}  // namespace paddlec::io
