// Whole-file reads and atomic writes on POSIX.
#include "paddlec/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace paddlec {
namespace {

Error IoError(const std::string& what, const std::string& path) {
  return MakeError(ErrorCode::kIO, "{} '{}': {}", what, path, std::strerror(errno));
}

std::string TempNameFor(const std::string& path) {
  std::random_device rd;
  return fmt::format("{}.tmp.{}.{:x}", path, ::getpid(), rd());
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return IoError("cannot open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return IoError("cannot stat", path);
  if (S_ISDIR(st.st_mode)) return MakeError(ErrorCode::kIO, "'{}' is a directory, not a file", path);
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return MakeError(ErrorCode::kResourceExhausted, "'{}' is {} bytes, over the {}-byte limit", path,
                     st.st_size, max_bytes);
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (true) {
    if (got == out.size()) out.resize(out.size() + 65536);  // files whose size stat cannot tell
    ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot read", path);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got > max_bytes)
      return MakeError(ErrorCode::kResourceExhausted, "'{}' is over the {}-byte limit", path, max_bytes);
  }
  out.resize(got);
  return out;
}

Status WriteFileAtomicStreamed(const std::string& path,
                               const std::function<Status(const ByteSink&)>& write) {
  std::string tmp = TempNameFor(path);
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return IoError("cannot create", tmp);
  Status st = write([&](std::string_view chunk) { return WriteAll(fd.get(), chunk, tmp); });
  if (st.ok() && ::fsync(fd.get()) != 0) st = IoError("cannot sync", tmp);
  if (::close(fd.release()) != 0 && st.ok()) st = IoError("cannot close", tmp);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = IoError("cannot rename onto", path);
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

Status WriteFileAtomic(const std::string& path, std::string_view data) {
  return WriteFileAtomicStreamed(path, [&](const ByteSink& sink) { return sink(data); });
}

Status SyncDirectory(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return IoError("cannot open directory", path);
  if (::fsync(fd.get()) != 0) return IoError("cannot sync", path);
  return Status::OK();
}

std::string FileExtension(std::string_view path) {
  size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  if (dot == std::string_view::npos || dot == 0) return "";
  std::string ext(base.substr(dot));
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

}  // namespace paddlec
