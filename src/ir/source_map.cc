// Text positions of ProgramDesc messages, read from protobuf's ParseInfoTree.
#include "paddlec/ir/source_map.h"

#include <google/protobuf/text_format.h>

#include "framework.pb.h"

namespace paddlec::ir {
namespace {

namespace pb = ::paddle::framework::proto;
using Tree = google::protobuf::TextFormat::ParseInfoTree;
using google::protobuf::FieldDescriptor;

const FieldDescriptor* Field(const google::protobuf::Descriptor* d, const char* name) {
  return d->FindFieldByName(name);
}

SourceLocation FromParse(const std::string& file, const Tree* tree, const FieldDescriptor* field,
                         int index) {
  SourceLocation loc;
  loc.file = file;
  if (tree == nullptr) return loc;
  auto p = tree->GetLocation(field, index);
  if (p.line >= 0) {
    loc.line = p.line + 1;
    loc.column = p.column + 1;
  }
  return loc;
}

const Tree* BlockTree(const Tree* root, int block) {
  if (root == nullptr) return nullptr;
  return root->GetTreeForNested(Field(pb::ProgramDesc::descriptor(), "blocks"), block);
}

const Tree* OpTree(const Tree* root, int block, int op) {
  const Tree* b = BlockTree(root, block);
  if (b == nullptr) return nullptr;
  return b->GetTreeForNested(Field(pb::BlockDesc::descriptor(), "ops"), op);
}

}  // namespace

SourceMap::SourceMap(std::string file, std::shared_ptr<const void> owner, const void* tree)
    : file_(std::move(file)), owner_(std::move(owner)), tree_(tree) {}

SourceLocation SourceMap::Block(int block) const {
  return FromParse(file_, static_cast<const Tree*>(tree_), Field(pb::ProgramDesc::descriptor(), "blocks"),
                   block);
}

SourceLocation SourceMap::Op(int block, int op) const {
  const Tree* root = static_cast<const Tree*>(tree_);
  return FromParse(file_, BlockTree(root, block), Field(pb::BlockDesc::descriptor(), "ops"), op);
}

SourceLocation SourceMap::Var(int block, int var) const {
  const Tree* root = static_cast<const Tree*>(tree_);
  return FromParse(file_, BlockTree(root, block), Field(pb::BlockDesc::descriptor(), "vars"), var);
}

SourceLocation SourceMap::Attr(int block, int op, int attr) const {
  const Tree* root = static_cast<const Tree*>(tree_);
  SourceLocation loc = FromParse(file_, OpTree(root, block, op), Field(pb::OpDesc::descriptor(), "attrs"), attr);
  return loc.has_text_position() ? loc : Op(block, op);
}

SourceLocation SourceMap::Slot(int block, int op, bool input, int slot) const {
  const Tree* root = static_cast<const Tree*>(tree_);
  SourceLocation loc = FromParse(file_, OpTree(root, block, op),
                                 Field(pb::OpDesc::descriptor(), input ? "inputs" : "outputs"), slot);
  return loc.has_text_position() ? loc : Op(block, op);
}

}  // namespace paddlec::ir
