// Inputs made from shapes (see inputs.h).
#include "inputs.h"

#include <charconv>

namespace paddlec::driver {

StatusOr<std::pair<std::string, Dims>> ParseInputShape(const std::string& spec) {
  size_t colon = spec.rfind(':');
  auto bad = [&] {
    return MakeError(ErrorCode::kInvalidArgument,
                     "bad --input-shape '{}': expected NAME:D0xD1x... (e.g. img:1x3x224x224)", spec);
  };
  if (colon == std::string::npos || colon == 0) return bad();
  Dims dims;
  std::string_view rest = std::string_view(spec).substr(colon + 1);
  while (!rest.empty()) {
    size_t x = rest.find('x');
    std::string_view d = rest.substr(0, x);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
    if (ec != std::errc() || end != d.data() + d.size() || v < 0) return bad();
    dims.push_back(v);
    if (x == std::string_view::npos) break;
    rest.remove_prefix(x + 1);
    if (rest.empty()) return bad();
  }
  PC_RETURN_IF_ERROR(CheckDims(dims));
  return std::make_pair(spec.substr(0, colon), dims);
}

StatusOr<std::pair<std::string, runtime::LoD>> ParseLoDSpec(const std::string& spec) {
  size_t eq = spec.find('=');
  auto bad = [&] {
    return MakeError(ErrorCode::kInvalidArgument,
                     "bad --lod '{}': expected NAME=OFFSETS, e.g. words=0,2,5 (levels separated by ';')", spec);
  };
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) return bad();
  runtime::LoD lod(1);
  std::string_view rest = std::string_view(spec).substr(eq + 1);
  while (true) {
    size_t cut = rest.find_first_of(",;");
    std::string_view d = rest.substr(0, cut);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
    if (d.empty() || ec != std::errc() || end != d.data() + d.size()) return bad();
    lod.back().push_back(v);
    if (cut == std::string_view::npos) break;
    if (rest[cut] == ';') lod.emplace_back();
    rest.remove_prefix(cut + 1);
  }
  return std::make_pair(spec.substr(0, eq), lod);
}

StatusOr<Fill> ParseFill(const std::string& name) {
  if (name == "zeros") return Fill::kZeros;
  if (name == "ones") return Fill::kOnes;
  if (name == "random") return Fill::kRandom;
  return MakeError(ErrorCode::kInvalidArgument, "bad --fill '{}': expected random, zeros or ones", name);
}

namespace {

/// SplitMix64: a fixed, tiny generator, so a seed means the same inputs everywhere (the standard
/// library's distributions are implementation-defined).
uint64_t Next(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

StatusOr<runtime::Tensor> MakeInput(const std::string& name, DType dtype, const Dims& dims, Fill fill, uint64_t seed,
                                    runtime::Allocator& alloc) {
  runtime::Tensor t(dtype, dims);
  PC_RETURN_IF_ERROR(t.Allocate(alloc));
  uint64_t state = seed;
  for (char c : name) state = state * 131 + static_cast<unsigned char>(c);
  PC_RETURN_IF_ERROR(VisitDType(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (fill == Fill::kZeros)
        p[i] = T(0);
      else if (fill == Fill::kOnes)
        p[i] = T(1);
      else if constexpr (std::is_floating_point_v<T>)
        p[i] = static_cast<T>((Next(state) >> 40) * 0x1.0p-24);
      else
        p[i] = static_cast<T>(Next(state) >> 63);
    }
  }));
  return t;
}

}  // namespace paddlec::driver
