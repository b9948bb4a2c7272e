// IDX reading (zlib for .gz) and the image classification dataset.
#include "paddlec/io/dataset.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <random>

namespace paddlec::io {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// Reads exactly `n` bytes from a gz stream (which also reads plain files transparently).
Status ReadExact(gzFile f, void* dst, size_t n, const std::string& path, const char* what) {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
    int got = gzread(f, p, chunk);
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      return MakeError(ErrorCode::kParse, "'{}' is corrupt while reading its {}: {}", path, what, msg);
    }
    if (got == 0)
      return MakeError(ErrorCode::kParse, "'{}' is truncated: it ends inside its {}", path, what);
    p += got;
    n -= static_cast<size_t>(got);
  }
  return Status::OK();
}

}  // namespace

StatusOr<IdxArray> ReadIdx(const std::string& path) {
  if (!Exists(path)) return MakeError(ErrorCode::kNotFound, "dataset file '{}' does not exist", path);
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return MakeError(ErrorCode::kIO, "cannot open '{}'", path);
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{f};
  uint8_t magic[4];
  PC_RETURN_IF_ERROR(ReadExact(f, magic, 4, path, "header"));
  if (magic[0] != 0 || magic[1] != 0)
    return MakeError(ErrorCode::kParse, "'{}' is not an IDX file (bad magic {:02x}{:02x}{:02x}{:02x})", path, magic[0],
                     magic[1], magic[2], magic[3]);
  if (magic[2] != 0x08)
    return MakeError(ErrorCode::kUnimplemented, "'{}' holds IDX element type 0x{:02x}; only unsigned bytes (0x08) are read",
                     path, magic[2]);
  int ndims = magic[3];
  if (ndims < 1 || ndims > 4) return MakeError(ErrorCode::kParse, "'{}' has {} dimensions", path, ndims);
  IdxArray out;
  uint64_t total = 1;
  for (int i = 0; i < ndims; ++i) {
    uint8_t b[4];
    PC_RETURN_IF_ERROR(ReadExact(f, b, 4, path, "header"));
    int64_t d = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
    out.dims.push_back(d);
    total *= static_cast<uint64_t>(d);
    if (total > (uint64_t{1} << 32))
      return MakeError(ErrorCode::kResourceExhausted, "'{}' declares more than 4 GiB of data", path);
  }
  out.data.resize(total);
  PC_RETURN_IF_ERROR(ReadExact(f, out.data.data(), total, path, "data"));
  uint8_t extra;
  if (gzread(f, &extra, 1) > 0)
    return MakeError(ErrorCode::kParse, "'{}' has data after the {} bytes its header declares", path, total);
  return out;
}

int64_t ClassificationSet::num_classes() const {
  int64_t m = -1;
  for (int64_t l : labels) m = std::max(m, l);
  return m + 1;
}

int64_t ClassificationSet::InkedRows(int64_t i) const {
  const float* image = images.data() + i * height * width;
  for (int64_t r = height; r > 1; --r)
    for (int64_t c = 0; c < width; ++c)
      if (image[(r - 1) * width + c] != blank) return r;
  return 1;  // a blank image is one blank row: a sequence cannot be empty
}

void ClassificationSet::AppendPatternIds(int64_t i, int64_t vocab, std::vector<int64_t>& ids) const {
  constexpr int64_t kPatch = 4;
  const float* image = images.data() + i * height * width;
  const int64_t across = width / kPatch, patches = (height / kPatch) * across;
  for (int64_t p = 0; p < patches; ++p) {
    const float* corner = image + (p / across) * kPatch * width + (p % across) * kPatch;
    uint64_t code = 0;
    for (int64_t k = 0; k < kPatch * kPatch; ++k)
      if (corner[(k / kPatch) * width + k % kPatch] > half) code |= uint64_t{1} << k;
    // Knuth's multiplicative hash of (pattern, place), reduced to 32 bits, then to the vocabulary.
    if (code != 0)
      ids.push_back(static_cast<int64_t>(((code * patches + p) * 2654435761u) % (uint64_t{1} << 32) %
                                         static_cast<uint64_t>(vocab)));
  }
}

StatusOr<ImageDataset> LoadImageDataset(const std::string& dir, Normalization norm) {
  auto find = [&](const std::string& stem) -> StatusOr<std::string> {
    for (const char* ext : {".gz", ""})
      if (std::string p = dir + "/" + stem + ext; Exists(p)) return p;
    return MakeError(ErrorCode::kNotFound, "dataset file '{}/{}.gz' (or without .gz) does not exist", dir, stem)
        .Note("Fashion-MNIST comes with Debian's dataset-fashion-mnist package (scripts/setup.sh installs it)");
  };
  ImageDataset ds;
  for (auto [set, prefix] : {std::pair{&ds.train, "train"}, std::pair{&ds.test, "t10k"}}) {
    PC_ASSIGN_OR_RETURN(std::string ipath, find(std::string(prefix) + "-images-idx3-ubyte"));
    PC_ASSIGN_OR_RETURN(std::string lpath, find(std::string(prefix) + "-labels-idx1-ubyte"));
    PC_ASSIGN_OR_RETURN(IdxArray images, ReadIdx(ipath));
    PC_ASSIGN_OR_RETURN(IdxArray labels, ReadIdx(lpath));
    if (images.dims.size() != 3)
      return MakeError(ErrorCode::kParse, "'{}' should hold N x H x W images, not {} dimensions", ipath, images.dims.size());
    if (labels.dims.size() != 1)
      return MakeError(ErrorCode::kParse, "'{}' should hold N labels, not {} dimensions", lpath, labels.dims.size());
    if (images.dims[0] != labels.dims[0])
      return MakeError(ErrorCode::kParse, "'{}' has {} images but '{}' has {} labels", ipath, images.dims[0], lpath,
                       labels.dims[0]);
    set->count = images.dims[0];
    set->height = images.dims[1];
    set->width = images.dims[2];
    set->images.resize(images.data.size());
    for (size_t i = 0; i < images.data.size(); ++i) set->images[i] = images.data[i] / 255.0f;
    set->labels.assign(labels.data.begin(), labels.data.end());
  }
  if (ds.train.height != ds.test.height || ds.train.width != ds.test.width)
    return MakeError(ErrorCode::kParse, "training images are {}x{} but test images {}x{}", ds.train.height,
                     ds.train.width, ds.test.height, ds.test.width);
  if (norm == Normalization::kMeanStd) {
    double sum = 0, sq = 0;
    for (float v : ds.train.images) {
      sum += v;
      sq += double(v) * v;
    }
    double n = static_cast<double>(ds.train.images.size());
    float mean = static_cast<float>(sum / n);
    float std = static_cast<float>(std::sqrt(std::max(1e-12, sq / n - (sum / n) * (sum / n))));
    for (auto* set : {&ds.train, &ds.test}) {
      for (float& v : set->images) v = (v - mean) / std;
      set->blank = (0.0f - mean) / std;
      set->half = (0.5f - mean) / std;
    }
  }
  return ds;
}

std::vector<int64_t> EpochOrder(int64_t count, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) order[i] = i;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch) + 1);
  for (int64_t i = count - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace paddlec::io
