// Where each message of a program stood in the text it was parsed from.
//
// Built from protobuf's ParseInfoTree when a textproto is loaded; empty for binary and JSON input
// (those have no useful positions, so diagnostics fall back to block and op indices).
#pragma once

#include <memory>
#include <string>

#include "paddlec/core/error.h"

namespace google::protobuf {
class Message;
}

namespace paddlec::ir {

class SourceMap {
 public:
  SourceMap() = default;
  /// `tree` is a google::protobuf::TextFormat::ParseInfoTree for a ProgramDesc; `owner` keeps the
  /// root tree it belongs to alive.
  SourceMap(std::string file, std::shared_ptr<const void> owner, const void* tree);
  /// A map with no positions, only the file name.
  explicit SourceMap(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  bool has_positions() const { return tree_ != nullptr; }

  /// Each fills file/line/column when known; block/op indices are filled by the caller.
  SourceLocation Block(int block) const;
  SourceLocation Op(int block, int op) const;
  SourceLocation Attr(int block, int op, int attr) const;
  SourceLocation Slot(int block, int op, bool input, int slot) const;
  SourceLocation Var(int block, int var) const;

 private:
  std::string file_;
  std::shared_ptr<const void> owner_;
  const void* tree_ = nullptr;
};

}  // namespace paddlec::ir
