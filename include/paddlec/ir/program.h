// The IR: thin views over the ProgramDesc protobuf (Program / Block / Op, var helpers) and the
// Module that `paddlec compile` reads and writes (main + startup program + compile metadata).
//
// The protobuf messages are the program; these classes add what passes need on top: variable
// lookup through parent blocks, def-use queries and source positions for diagnostics. A Program
// only exists once its block structure is sound (block i has idx i, parents precede children), so
// walking parent chains can never loop.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "framework.pb.h"
#include "paddlec.pb.h"
#include "paddlec/core/dims.h"
#include "paddlec/core/dtype.h"
#include "paddlec/core/error.h"
#include "paddlec/ir/source_map.h"

namespace paddlec::ir {

namespace pb = ::paddle::framework::proto;
using StringList = google::protobuf::RepeatedPtrField<std::string>;

class Block;
class Program;

/// Suffix of gradient variables (PaddlePaddle's kGradVarSuffix): x -> x@GRAD.
inline constexpr std::string_view kGradSuffix = "@GRAD";
/// Placeholder argument for a gradient nobody needs.
inline constexpr std::string_view kEmptyVarName = "@EMPTY@";
inline std::string GradVarName(std::string_view var) { return std::string(var) + std::string(kGradSuffix); }
/// How deep blocks may nest (the global block is depth 0). Real programs nest a handful of levels;
/// the cap bounds every walk up the block tree, which inputs of 50,000 nested blocks made quadratic.
inline constexpr int kMaxBlockDepth = 1000;

/// Heterogeneous hashing for maps keyed by std::string and looked up by std::string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// ---- Variables ------------------------------------------------------------------------------

/// True for variables that hold a dense tensor (LOD_TENSOR, SELECTED_ROWS, LOD_TENSOR_ARRAY).
bool IsTensorVar(const pb::VarDesc& v);
/// The tensor description of a tensor variable, nullptr for other kinds.
const pb::VarType::TensorDesc* TensorDescOf(const pb::VarDesc& v);
/// Dims and dtype of a tensor variable; an error for non-tensor variables and bad dims.
StatusOr<Dims> VarDims(const pb::VarDesc& v);
DType VarDType(const pb::VarDesc& v);
/// Makes `v` a LOD_TENSOR variable (if it is not a tensor already) with the given dims and dtype.
void SetVarShape(pb::VarDesc* v, const Dims& dims, DType dtype);

// ---- Ops ------------------------------------------------------------------------------------

/// A view of one op in a block. Cheap to copy; valid while the op stays at `index`.
class Op {
 public:
  Op(Block* block, int index);

  pb::OpDesc& desc() const { return *desc_; }
  const std::string& type() const { return desc_->type(); }
  int index() const { return index_; }
  Block& block() const { return *block_; }

  const pb::OpDesc::Var* FindInput(std::string_view slot) const;
  const pb::OpDesc::Var* FindOutput(std::string_view slot) const;
  /// The arguments bound to a slot; empty when the slot is absent.
  const StringList& Input(std::string_view slot) const;
  const StringList& Output(std::string_view slot) const;
  const pb::OpDesc::Attr* FindAttr(std::string_view name) const;
  /// Block, index, type and (for text input) file:line:col of the op.
  SourceLocation Location() const;
  SourceLocation AttrLocation(int attr_index) const;
  SourceLocation SlotLocation(bool input, int slot_index) const;

 private:
  Block* block_;
  int index_;
  pb::OpDesc* desc_;
};

// ---- Blocks ---------------------------------------------------------------------------------

class Block {
 public:
  Block(Program* program, int idx);
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  int idx() const { return idx_; }
  int parent_idx() const;
  /// The enclosing block, nullptr for the global block.
  Block* parent() const;
  Program& program() const { return *program_; }
  pb::BlockDesc& desc() const;

  int num_ops() const;
  Op op(int i) { return Op(this, i); }
  /// Appends a new op (its type still empty) and returns it.
  pb::OpDesc* AppendOp();
  /// Inserts a new op before position `pos` (0 <= pos <= num_ops()).
  pb::OpDesc* InsertOp(int pos);
  void RemoveOp(int pos);

  /// A variable declared in this block only.
  pb::VarDesc* FindLocalVar(std::string_view name) const;
  /// A variable of this block or of an enclosing one (the innermost wins). O(1) for names declared
  /// in few blocks (the program indexes which blocks declare each name).
  pb::VarDesc* FindVar(std::string_view name) const;
  /// The block that declares `name`, searching outwards; nullptr if none.
  Block* FindVarBlock(std::string_view name);
  /// Declares a variable in this block; returns the existing one if the name is taken here.
  pb::VarDesc* AddVar(std::string_view name);
  int num_vars() const;
  int var_index(std::string_view name) const;  // -1 if not local

  /// Rebuilds the name index after the BlockDesc was edited directly.
  void RebuildIndex();

 private:
  friend class Program;
  Program* program_;
  int idx_;
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> var_index_;
};

// ---- Programs -------------------------------------------------------------------------------

class Program {
 public:
  /// Wraps `desc` (not owned) after checking its block structure.
  static StatusOr<std::unique_ptr<Program>> Create(pb::ProgramDesc* desc, SourceMap source = {});
  /// A Program owning a desc with one empty global block.
  static std::unique_ptr<Program> CreateEmpty();
  /// A Program owning a copy of `desc`.
  static StatusOr<std::unique_ptr<Program>> CreateOwned(pb::ProgramDesc desc);

  pb::ProgramDesc& desc() const { return *desc_; }
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  Block& block(int i) const { return *blocks_[i]; }
  Block& global_block() const { return *blocks_[0]; }
  /// Appends a block nested in `parent`.
  Block& AppendBlock(int parent_idx);
  /// How deep block `i` nests: 0 for the global block.
  int depth(int i) const { return depth_[i]; }
  /// Whether block `outer` is `inner` or encloses it. O(1).
  bool Encloses(int outer, int inner) const;
  /// The innermost block among `from` and its enclosing blocks that declares `name`; nullptr if none.
  Block* InnermostDeclaring(std::string_view name, int from) const;

  const SourceMap& source_map() const { return source_; }
  /// Called by passes that insert or remove ops before existing ones: positions recorded at parse
  /// time no longer match op indices, so diagnostics stop quoting them.
  void InvalidateSourcePositions() { positions_valid_ = false; }
  bool positions_valid() const { return positions_valid_; }

 private:
  friend class Block;
  Program(pb::ProgramDesc* desc, SourceMap source);
  void Declare(const std::string& name, int block);
  void Undeclare(const std::string& name, int block);
  /// Numbers the block tree in depth-first order (enter_/exit_), after blocks were appended.
  void NumberTree() const;

  std::unique_ptr<pb::ProgramDesc> owned_;
  pb::ProgramDesc* desc_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<int> depth_;
  // Which blocks declare each name, ascending: lookups through enclosing blocks ask it instead of
  // hashing the name once per level.
  std::unordered_map<std::string, std::vector<int>, StringHash, std::equal_to<>> declared_in_;
  // Depth-first entry and exit numbers: `outer` encloses `inner` iff its interval contains inner's.
  // Renumbered lazily after AppendBlock (programs are not edited from several threads at once).
  mutable std::vector<int> enter_, exit_;
  mutable bool numbered_ = false;
  SourceMap source_;
  bool positions_valid_ = true;
};

/// Readers and writers of each variable name in one block (ops of nested blocks not included).
class DefUse {
 public:
  explicit DefUse(const Block& block);
  std::span<const int> Readers(std::string_view var) const;
  std::span<const int> Writers(std::string_view var) const;

 private:
  struct Entry {
    std::vector<int> readers, writers;
  };
  std::unordered_map<std::string, Entry> map_;
};

// ---- Modules --------------------------------------------------------------------------------

/// The unit of compilation: a main program, its startup program (parameter initializers) and the
/// metadata of paddlec.proto's CompiledProgram. The programs are views into `compiled()`.
class Module {
 public:
  /// Takes a CompiledProgram (its programs may be empty) plus source maps for both programs.
  static StatusOr<std::unique_ptr<Module>> Create(paddlec::proto::CompiledProgram compiled,
                                                  SourceMap main_source = {},
                                                  SourceMap startup_source = {});
  /// An empty module whose CompiledProgram lives on a protobuf arena, for a parser to fill in
  /// place and then Finish: a large program allocates far faster there and frees in one step.
  static std::unique_ptr<Module> CreateOnArena();
  /// Wraps the filled-in programs (CreateOnArena); checks their block structure.
  Status Finish(SourceMap main_source = {}, SourceMap startup_source = {});

  Program& main() const { return *main_; }
  Program& startup() const { return *startup_; }
  /// Moving out of this message copies it when it lives on an arena (protobuf's rule).
  paddlec::proto::CompiledProgram& compiled() { return *compiled_; }
  const paddlec::proto::CompiledProgram& compiled() const { return *compiled_; }
  /// True when the input already was a CompiledProgram (rather than a bare ProgramDesc).
  bool was_compiled() const { return was_compiled_; }
  void set_was_compiled(bool v) { was_compiled_ = v; }

 private:
  Module() = default;
  std::unique_ptr<google::protobuf::Arena> arena_;  // before compiled_'s owner: destroyed last
  std::unique_ptr<paddlec::proto::CompiledProgram> owned_;  // when not on the arena
  paddlec::proto::CompiledProgram* compiled_ = nullptr;
  std::unique_ptr<Program> main_, startup_;
  bool was_compiled_ = false;
};

/// Human-readable name of an AttrType ("INT", "FLOATS", ...).
std::string_view AttrTypeName(pb::AttrType t);

}  // namespace paddlec::ir

namespace paddlec::ir {

/// The forward part of a training program, for evaluation: the global block's ops up to the first
/// backward/optimizer op (by op_role), with `is_test` set on every op that has that attribute
/// (dropout, batch_norm), like PaddlePaddle's Program.clone(for_test=True).
pb::ProgramDesc CloneForTest(const pb::ProgramDesc& program);

}  // namespace paddlec::ir
