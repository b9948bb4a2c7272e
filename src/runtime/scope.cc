// Hierarchical name -> variable maps.
#include "paddlec/runtime/scope.h"

#include <algorithm>

namespace paddlec::runtime {

Variable* Scope::FindLocal(std::string_view name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : it->second.get();
}

Variable* Scope::Find(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_)
    if (Variable* v = s->FindLocal(name)) return v;
  return nullptr;
}

Variable& Scope::Var(std::string_view name) {
  auto it = vars_.find(name);
  if (it != vars_.end()) return *it->second;
  return *vars_.emplace(std::string(name), std::make_unique<Variable>()).first->second;
}

bool Scope::Erase(std::string_view name) {
  auto it = vars_.find(name);
  if (it == vars_.end()) return false;
  vars_.erase(it);
  return true;
}

Scope& Scope::NewChild() {
  children_.push_back(std::make_unique<Scope>());
  children_.back()->parent_ = this;
  return *children_.back();
}

bool Scope::DeleteChild(const Scope* child) {
  auto it = std::find_if(children_.begin(), children_.end(), [child](const auto& c) { return c.get() == child; });
  if (it == children_.end()) return false;
  children_.erase(it);
  return true;
}

std::vector<std::string> Scope::LocalNames() const {
  std::vector<std::string> out;
  out.reserve(vars_.size());
  for (const auto& [k, v] : vars_) out.push_back(k);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace paddlec::runtime
