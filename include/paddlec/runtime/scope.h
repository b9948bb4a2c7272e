// Scope: the named variables a program reads and writes, nested like blocks.
//
// Lookups walk outwards through parents, so a child scope (a step, a sub-block) sees the
// parameters of the global scope while keeping its temporaries to itself.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "paddlec/runtime/tensor.h"

namespace paddlec::runtime {

class Scope;

/// A named slot in a scope: a tensor, or a list of tensors for PaddlePaddle's feed/fetch holders
/// (FEED_MINIBATCH / FETCH_LIST variables, indexed by the feed and fetch ops' `col`), or the scopes
/// of a loop's steps (STEP_SCOPES variables: `while` writes them, `while_grad` walks them back).
class Variable {
 public:
  Tensor& tensor() { return tensor_; }
  const Tensor& tensor() const { return tensor_; }
  std::vector<Tensor>& list() { return list_; }
  const std::vector<Tensor>& list() const { return list_; }
  std::vector<Scope*>& step_scopes() { return step_scopes_; }
  const std::vector<Scope*>& step_scopes() const { return step_scopes_; }

 private:
  Tensor tensor_;
  std::vector<Tensor> list_;
  std::vector<Scope*> step_scopes_;  // owned by the scope that made them (their parent)
};

class Scope {
 public:
  Scope() = default;
  /// A scope whose lookups continue in `parent` but which `parent` does not own (the Python front
  /// end's Scope.new_scope(), whose lifetime Python decides); `parent` must outlive it.
  explicit Scope(Scope* parent) : parent_(parent) {}
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  /// The variable named `name` here or in an enclosing scope; nullptr if none.
  Variable* Find(std::string_view name) const;
  Variable* FindLocal(std::string_view name) const;
  /// The local variable named `name`, created empty if missing.
  Variable& Var(std::string_view name);
  bool Erase(std::string_view name);
  /// A new child scope owned by this one.
  Scope& NewChild();
  void DropChildren() { children_.clear(); }
  /// Destroys one child scope made by NewChild (with its own children); false if it is not a child.
  bool DeleteChild(const Scope* child);
  Scope* parent() const { return parent_; }
  /// Names of local variables, sorted.
  std::vector<std::string> LocalNames() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  Scope* parent_ = nullptr;
  std::unordered_map<std::string, std::unique_ptr<Variable>, Hash, std::equal_to<>> vars_;
  std::vector<std::unique_ptr<Scope>> children_;
};

}  // namespace paddlec::runtime
