// Creating passes by name from passes.def, and pass option parsing.
#include <cctype>
#include <charconv>

#include "paddlec/passes/pass.h"

namespace paddlec::passes {

#define PADDLEC_PASS(name, factory) std::unique_ptr<Pass> factory();
#include "passes.def"
#undef PADDLEC_PASS

namespace {

struct Factory {
  const char* name;
  std::unique_ptr<Pass> (*create)();
};

constexpr Factory kFactories[] = {
#define PADDLEC_PASS(name, factory) {name, &factory},
#include "passes.def"
#undef PADDLEC_PASS
};

std::optional<bool> ParseBool(std::string_view v) {
  if (v == "true" || v == "1" || v == "on" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "off" || v == "no") return false;
  return std::nullopt;
}

}  // namespace

std::string_view PassOptionTypeName(PassOption::Type t) {
  switch (t) {
    case PassOption::Type::kBool: return "bool";
    case PassOption::Type::kInt: return "int";
    case PassOption::Type::kFloat: return "float";
    case PassOption::Type::kString: return "string";
    case PassOption::Type::kStringList:
      return "string list";
  }
  return "?";
}

std::vector<PassInfo> ListPasses() {
  std::vector<PassInfo> out;
  for (const Factory& f : kFactories) {
    auto p = f.create();
    out.push_back({std::string(p->Name()), std::string(p->Summary()), p->Options()});
  }
  return out;
}

StatusOr<std::unique_ptr<Pass>> CreatePass(std::string_view name) {
  for (const Factory& f : kFactories)
    if (name == f.name) return f.create();
  std::string known;
  for (const Factory& f : kFactories) known += (known.empty() ? "" : ", ") + std::string(f.name);
  return MakeError(ErrorCode::kInvalidArgument, "unknown pass '{}'", name).Note("known passes: " + known);
}

StatusOr<PassOptions> PassOptions::Parse(std::string_view pass, const std::vector<PassOption>& specs,
                                         const std::map<std::string, std::string>& values) {
  PassOptions out;
  for (const auto& s : specs) out.values_[s.name] = s.default_value;
  for (const auto& [k, v] : values) {
    const PassOption* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == k) spec = &s;
    if (spec == nullptr) {
      std::string known;
      for (const auto& s : specs) known += (known.empty() ? "" : ", ") + s.name;
      return MakeError(ErrorCode::kInvalidArgument, "pass '{}' has no option '{}'", pass, k)
          .Note(known.empty() ? std::string("it takes no options") : "its options: " + known);
    }
    bool ok = true;
    switch (spec->type) {
      case PassOption::Type::kBool: ok = ParseBool(v).has_value(); break;
      case PassOption::Type::kInt: {
        int64_t x;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        ok = ec == std::errc() && p == v.data() + v.size();
        break;
      }
      case PassOption::Type::kFloat: {
        char* end = nullptr;
        std::strtod(v.c_str(), &end);
        ok = !v.empty() && end == v.c_str() + v.size();
        break;
      }
      case PassOption::Type::kString:
      case PassOption::Type::kStringList:
        break;
    }
    if (!ok)
      return MakeError(ErrorCode::kInvalidArgument, "option '{}' of pass '{}' expects a {}, got '{}'", k, pass,
                       PassOptionTypeName(spec->type), v);
    out.values_[k] = v;
    out.explicitly_set_[k] = v;
  }
  return out;
}

bool PassOptions::GetBool(std::string_view name) const {
  auto it = values_.find(name);
  return it != values_.end() && ParseBool(it->second).value_or(false);
}

int64_t PassOptions::GetInt(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? 0 : std::strtoll(it->second.c_str(), nullptr, 10);
}

double PassOptions::GetFloat(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? 0.0 : std::strtod(it->second.c_str(), nullptr);
}

const std::string& PassOptions::GetString(std::string_view name) const {
  static const std::string kEmpty;
  auto it = values_.find(name);
  return it == values_.end() ? kEmpty : it->second;
}

std::vector<std::string> PassOptions::GetStringList(std::string_view name) const {
  std::vector<std::string> out;
  std::string_view s = GetString(name);
  while (!s.empty()) {
    size_t sep = s.find(PassOption::kListSeparator);
    std::string_view item = s.substr(0, sep);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (sep == std::string_view::npos) break;
    s.remove_prefix(sep + 1);
  }
  return out;
}

std::string PassOptions::ToString() const {
  std::string s;
  for (const auto& [k, v] : explicitly_set_) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

}  // namespace paddlec::passes
