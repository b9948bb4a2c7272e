// Where a tensor lives and a kernel runs: the host CPU or one CUDA device.
#pragma once

#include <string>
#include <string_view>

#include "paddlec/core/error.h"

namespace paddlec {

enum class DeviceType : int { kCPU = 0, kCUDA = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct Place {
  DeviceType type = DeviceType::kCPU;
  int device = 0;

  static Place CPU() { return {DeviceType::kCPU, 0}; }
  static Place CUDA(int id) { return {DeviceType::kCUDA, id}; }
  bool is_cpu() const { return type == DeviceType::kCPU; }
  bool is_cuda() const { return type == DeviceType::kCUDA; }
  /// "cpu" or "gpu:N".
  std::string ToString() const;
  friend bool operator==(const Place&, const Place&) = default;
};

std::string_view DeviceTypeName(DeviceType t);
/// Parses "cpu", "gpu", "gpu:N", "cuda", "cuda:N".
StatusOr<Place> ParsePlace(std::string_view s);

}  // namespace paddlec
