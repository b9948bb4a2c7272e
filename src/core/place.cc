// Place names as the CLI spells them.
#include "paddlec/core/place.h"

#include <charconv>

namespace paddlec {

std::string_view DeviceTypeName(DeviceType t) { return t == DeviceType::kCPU ? "cpu" : "gpu"; }

std::string Place::ToString() const {
  return is_cpu() ? std::string("cpu") : fmt::format("gpu:{}", device);
}

StatusOr<Place> ParsePlace(std::string_view s) {
  if (s == "cpu") return Place::CPU();
  std::string_view rest;
  if (s.starts_with("gpu")) rest = s.substr(3);
  else if (s.starts_with("cuda")) rest = s.substr(4);
  else
    return MakeError(ErrorCode::kInvalidArgument, "unknown device '{}'", s).Note(
        "expected 'cpu', 'gpu' or 'gpu:N'");
  if (rest.empty()) return Place::CUDA(0);
  int id = -1;
  if (rest[0] == ':') {
    auto [p, ec] = std::from_chars(rest.data() + 1, rest.data() + rest.size(), id);
    if (ec == std::errc() && p == rest.data() + rest.size() && id >= 0) return Place::CUDA(id);
  }
  return MakeError(ErrorCode::kInvalidArgument, "bad device '{}': expected 'gpu:N' with N >= 0", s);
}

}  // namespace paddlec
