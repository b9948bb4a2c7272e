// Program / Block / Op views, variable helpers and Module construction.
#include "paddlec/ir/program.h"

#include <google/protobuf/arena.h>
#include <sys/mman.h>

#include <cstdlib>
#include <new>

#include "paddlec/ir/op_role.h"

namespace paddlec::ir {

// ---- Variables ------------------------------------------------------------------------------

bool IsTensorVar(const pb::VarDesc& v) { return TensorDescOf(v) != nullptr; }

const pb::VarType::TensorDesc* TensorDescOf(const pb::VarDesc& v) {
  const pb::VarType& t = v.type();
  switch (t.type()) {
    case pb::VarType::LOD_TENSOR:
      return t.has_lod_tensor() ? &t.lod_tensor().tensor() : nullptr;
    case pb::VarType::SELECTED_ROWS:
      return t.has_selected_rows() ? &t.selected_rows() : nullptr;
    case pb::VarType::LOD_TENSOR_ARRAY:
      return t.has_tensor_array() ? &t.tensor_array().tensor() : nullptr;
    default:
      return nullptr;
  }
}

StatusOr<Dims> VarDims(const pb::VarDesc& v) {
  const pb::VarType::TensorDesc* t = TensorDescOf(v);
  if (t == nullptr) return MakeError(ErrorCode::kValidation, "variable '{}' is not a tensor", v.name());
  auto dims = Dims::FromRange(t->dims().begin(), t->dims().end());
  if (!dims.ok())
    return MakeError(ErrorCode::kValidation, "variable '{}': {}", v.name(), dims.error().message());
  return dims;
}

DType VarDType(const pb::VarDesc& v) {
  const pb::VarType::TensorDesc* t = TensorDescOf(v);
  if (t == nullptr) return DType::kUndefined;
  auto d = DTypeFromProto(t->data_type());
  return d.ok() ? *d : DType::kUndefined;
}

void SetVarShape(pb::VarDesc* v, const Dims& dims, DType dtype) {
  pb::VarType* type = v->mutable_type();
  pb::VarType::TensorDesc* t = nullptr;
  switch (type->type()) {
    case pb::VarType::SELECTED_ROWS: t = type->mutable_selected_rows(); break;
    case pb::VarType::LOD_TENSOR_ARRAY: t = type->mutable_tensor_array()->mutable_tensor(); break;
    default:
      type->set_type(pb::VarType::LOD_TENSOR);
      t = type->mutable_lod_tensor()->mutable_tensor();
  }
  if (dtype != DType::kUndefined) t->set_data_type(static_cast<pb::VarType::Type>(DTypeToProto(dtype)));
  else if (!t->has_data_type()) t->set_data_type(pb::VarType::FP32);
  t->clear_dims();
  for (int64_t d : dims) t->add_dims(d);
}

// ---- Ops ------------------------------------------------------------------------------------

Op::Op(Block* block, int index)
    : block_(block), index_(index), desc_(block->desc().mutable_ops(index)) {}

static const pb::OpDesc::Var* FindSlot(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& slots,
                                       std::string_view name) {
  for (const auto& s : slots)
    if (s.parameter() == name) return &s;
  return nullptr;
}

const pb::OpDesc::Var* Op::FindInput(std::string_view slot) const { return FindSlot(desc_->inputs(), slot); }
const pb::OpDesc::Var* Op::FindOutput(std::string_view slot) const { return FindSlot(desc_->outputs(), slot); }

const StringList& Op::Input(std::string_view slot) const {
  static const StringList kEmpty;
  const auto* v = FindInput(slot);
  return v ? v->arguments() : kEmpty;
}

const StringList& Op::Output(std::string_view slot) const {
  static const StringList kEmpty;
  const auto* v = FindOutput(slot);
  return v ? v->arguments() : kEmpty;
}

const pb::OpDesc::Attr* Op::FindAttr(std::string_view name) const {
  for (const auto& a : desc_->attrs())
    if (a.name() == name) return &a;
  return nullptr;
}

SourceLocation Op::Location() const {
  const Program& p = block_->program();
  SourceLocation loc = p.positions_valid() ? p.source_map().Op(block_->idx(), index_)
                                           : SourceLocation{.file = p.source_map().file()};
  loc.block = block_->idx();
  loc.op = index_;
  loc.op_type = desc_->type();
  return loc;
}

SourceLocation Op::AttrLocation(int attr_index) const {
  const Program& p = block_->program();
  if (!p.positions_valid()) return Location();
  SourceLocation loc = p.source_map().Attr(block_->idx(), index_, attr_index);
  loc.block = block_->idx();
  loc.op = index_;
  loc.op_type = desc_->type();
  return loc;
}

SourceLocation Op::SlotLocation(bool input, int slot_index) const {
  const Program& p = block_->program();
  if (!p.positions_valid()) return Location();
  SourceLocation loc = p.source_map().Slot(block_->idx(), index_, input, slot_index);
  loc.block = block_->idx();
  loc.op = index_;
  loc.op_type = desc_->type();
  return loc;
}

// ---- Blocks ---------------------------------------------------------------------------------

Block::Block(Program* program, int idx) : program_(program), idx_(idx) { RebuildIndex(); }

pb::BlockDesc& Block::desc() const { return *program_->desc().mutable_blocks(idx_); }
int Block::parent_idx() const { return desc().parent_idx(); }
Block* Block::parent() const {
  int p = parent_idx();
  return p < 0 ? nullptr : &program_->block(p);
}
int Block::num_ops() const { return desc().ops_size(); }
int Block::num_vars() const { return desc().vars_size(); }

pb::OpDesc* Block::AppendOp() { return desc().add_ops(); }

pb::OpDesc* Block::InsertOp(int pos) {
  auto* ops = desc().mutable_ops();
  ops->Add();
  for (int i = ops->size() - 1; i > pos; --i) ops->SwapElements(i, i - 1);
  if (pos < ops->size() - 1) program_->InvalidateSourcePositions();
  return ops->Mutable(pos);
}

void Block::RemoveOp(int pos) {
  auto* ops = desc().mutable_ops();
  ops->DeleteSubrange(pos, 1);
  if (pos < ops->size()) program_->InvalidateSourcePositions();
}

pb::VarDesc* Block::FindLocalVar(std::string_view name) const {
  auto it = var_index_.find(name);
  return it == var_index_.end() ? nullptr : desc().mutable_vars(it->second);
}

int Block::var_index(std::string_view name) const {
  auto it = var_index_.find(name);
  return it == var_index_.end() ? -1 : it->second;
}

pb::VarDesc* Block::FindVar(std::string_view name) const {
  Block* b = program_->InnermostDeclaring(name, idx_);
  return b == nullptr ? nullptr : b->FindLocalVar(name);
}

Block* Block::FindVarBlock(std::string_view name) { return program_->InnermostDeclaring(name, idx_); }

pb::VarDesc* Block::AddVar(std::string_view name) {
  if (pb::VarDesc* v = FindLocalVar(name)) return v;
  pb::VarDesc* v = desc().add_vars();
  v->set_name(std::string(name));
  // A tensor whose dims and dtype shape inference will fill in (data_type is a required field).
  v->mutable_type()->set_type(pb::VarType::LOD_TENSOR);
  v->mutable_type()->mutable_lod_tensor()->mutable_tensor()->set_data_type(pb::VarType::FP32);
  var_index_.emplace(std::string(name), desc().vars_size() - 1);
  program_->Declare(v->name(), idx_);
  return v;
}

void Block::RebuildIndex() {
  for (const auto& [name, i] : var_index_) program_->Undeclare(name, idx_);
  var_index_.clear();
  const auto& vars = desc().vars();
  var_index_.reserve(vars.size());
  for (int i = 0; i < vars.size(); ++i)
    if (var_index_.emplace(vars[i].name(), i).second) program_->Declare(vars[i].name(), idx_);  // first wins
}

// ---- Programs -------------------------------------------------------------------------------

Program::Program(pb::ProgramDesc* desc, SourceMap source) : desc_(desc), source_(std::move(source)) {}

StatusOr<std::unique_ptr<Program>> Program::Create(pb::ProgramDesc* desc, SourceMap source) {
  if (desc->blocks_size() == 0)
    return MakeError(ErrorCode::kValidation, "the program has no blocks").At({.file = source.file()});
  std::vector<int> depth;
  depth.reserve(desc->blocks_size());
  for (int i = 0; i < desc->blocks_size(); ++i) {
    const pb::BlockDesc& b = desc->blocks(i);
    SourceLocation loc = source.Block(i);
    loc.block = i;
    if (b.idx() != i)
      return MakeError(ErrorCode::kValidation, "block at position {} has idx {}", i, b.idx()).At(loc);
    int expected_max = i - 1;
    if (i == 0 && b.parent_idx() != -1)
      return MakeError(ErrorCode::kValidation, "the global block must have parent_idx -1, not {}",
                       b.parent_idx())
          .At(loc);
    if (i > 0 && (b.parent_idx() < 0 || b.parent_idx() > expected_max))
      return MakeError(ErrorCode::kValidation,
                       "block {} has parent_idx {}; a parent must be an earlier block (0..{})", i,
                       b.parent_idx(), expected_max)
          .At(loc);
    depth.push_back(i == 0 ? 0 : depth[b.parent_idx()] + 1);
    if (depth.back() > kMaxBlockDepth)
      return MakeError(ErrorCode::kValidation, "block {} is nested {} blocks deep; paddlec accepts at most {}", i,
                       depth.back(), kMaxBlockDepth)
          .At(loc);
  }
  std::unique_ptr<Program> p(new Program(desc, std::move(source)));
  p->depth_ = std::move(depth);
  for (int i = 0; i < desc->blocks_size(); ++i) p->blocks_.push_back(std::make_unique<Block>(p.get(), i));
  return p;
}

std::unique_ptr<Program> Program::CreateEmpty() {
  pb::ProgramDesc desc;
  pb::BlockDesc* b = desc.add_blocks();
  b->set_idx(0);
  b->set_parent_idx(-1);
  return std::move(CreateOwned(std::move(desc))).value();
}

StatusOr<std::unique_ptr<Program>> Program::CreateOwned(pb::ProgramDesc desc) {
  auto owned = std::make_unique<pb::ProgramDesc>(std::move(desc));
  PC_ASSIGN_OR_RETURN(auto p, Create(owned.get()));
  p->owned_ = std::move(owned);
  return p;
}

Block& Program::AppendBlock(int parent_idx) {
  pb::BlockDesc* b = desc_->add_blocks();
  b->set_idx(desc_->blocks_size() - 1);
  b->set_parent_idx(parent_idx);
  depth_.push_back(depth_[parent_idx] + 1);
  numbered_ = false;
  blocks_.push_back(std::make_unique<Block>(this, b->idx()));
  return *blocks_.back();
}

void Program::Declare(const std::string& name, int block) {
  std::vector<int>& in = declared_in_[name];
  auto at = std::lower_bound(in.begin(), in.end(), block);
  if (at == in.end() || *at != block) in.insert(at, block);
}

void Program::Undeclare(const std::string& name, int block) {
  auto it = declared_in_.find(name);
  if (it == declared_in_.end()) return;
  std::erase(it->second, block);
  if (it->second.empty()) declared_in_.erase(it);
}

void Program::NumberTree() const {
  const int n = num_blocks();
  std::vector<std::vector<int>> children(n);
  for (int i = 1; i < n; ++i) children[blocks_[i]->parent_idx()].push_back(i);
  enter_.assign(n, 0);
  exit_.assign(n, 0);
  int clock = 0;
  std::vector<std::pair<int, size_t>> stack{{0, 0}};  // (block, next child)
  enter_[0] = clock++;
  while (!stack.empty()) {
    auto& [b, next] = stack.back();
    if (next < children[b].size()) {
      int c = children[b][next++];
      enter_[c] = clock++;
      stack.emplace_back(c, 0);
    } else {
      exit_[b] = clock++;
      stack.pop_back();
    }
  }
  numbered_ = true;
}

bool Program::Encloses(int outer, int inner) const {
  if (!numbered_) NumberTree();
  return enter_[outer] <= enter_[inner] && exit_[inner] <= exit_[outer];
}

Block* Program::InnermostDeclaring(std::string_view name, int from) const {
  auto it = declared_in_.find(name);
  if (it == declared_in_.end()) return nullptr;
  const std::vector<int>& in = it->second;
  // Enclosing blocks come before the blocks they enclose, so the innermost declaring one is the
  // last candidate at or before `from` that encloses it. Names declared in many sibling blocks
  // would make that scan long: then walking up (at most kMaxBlockDepth levels) is shorter.
  auto end = std::upper_bound(in.begin(), in.end(), from);
  if (end - in.begin() <= depth_[from] + 1) {
    for (auto c = end; c != in.begin();) {
      --c;
      if (Encloses(*c, from)) return blocks_[*c].get();
    }
    return nullptr;
  }
  for (Block* b = blocks_[from].get(); b != nullptr; b = b->parent())
    if (b->FindLocalVar(name)) return b;
  return nullptr;
}

// ---- DefUse ---------------------------------------------------------------------------------

DefUse::DefUse(const Block& block) {
  const auto& ops = block.desc().ops();
  for (int i = 0; i < ops.size(); ++i) {
    for (const auto& slot : ops[i].inputs())
      for (const auto& a : slot.arguments()) {
        auto& r = map_[a].readers;
        if (r.empty() || r.back() != i) r.push_back(i);
      }
    for (const auto& slot : ops[i].outputs())
      for (const auto& a : slot.arguments()) {
        auto& w = map_[a].writers;
        if (w.empty() || w.back() != i) w.push_back(i);
      }
  }
}

std::span<const int> DefUse::Readers(std::string_view var) const {
  auto it = map_.find(std::string(var));
  return it == map_.end() ? std::span<const int>() : std::span<const int>(it->second.readers);
}

std::span<const int> DefUse::Writers(std::string_view var) const {
  auto it = map_.find(std::string(var));
  return it == map_.end() ? std::span<const int>() : std::span<const int>(it->second.writers);
}

// ---- Modules --------------------------------------------------------------------------------

StatusOr<std::unique_ptr<Module>> Module::Create(paddlec::proto::CompiledProgram compiled,
                                                 SourceMap main_source, SourceMap startup_source) {
  std::unique_ptr<Module> m(new Module());
  m->owned_ = std::make_unique<paddlec::proto::CompiledProgram>(std::move(compiled));
  m->compiled_ = m->owned_.get();
  PC_RETURN_IF_ERROR(m->Finish(std::move(main_source), std::move(startup_source)));
  return m;
}

namespace {

// Arena blocks grow to 8 MiB; those of 2 MiB and more are backed by transparent huge pages where the
// kernel offers them (madvise mode), which spares a large program most of its page faults.
constexpr size_t kHugePage = size_t{2} << 20;

void* AllocateArenaBlock(size_t n) {
  if (n < kHugePage) return ::operator new(n);
  void* p = std::aligned_alloc(kHugePage, (n + kHugePage - 1) / kHugePage * kHugePage);
  if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(p, n, MADV_HUGEPAGE);  // a hint: failure only costs speed
#endif
  return p;
}

void FreeArenaBlock(void* p, size_t n) {
  if (n < kHugePage)
    ::operator delete(p);
  else
    std::free(p);
}

}  // namespace

std::unique_ptr<Module> Module::CreateOnArena() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = 8 << 20;
  options.block_alloc = AllocateArenaBlock;
  options.block_dealloc = FreeArenaBlock;
  std::unique_ptr<Module> m(new Module());
  m->arena_ = std::make_unique<google::protobuf::Arena>(options);
  m->compiled_ = google::protobuf::Arena::CreateMessage<paddlec::proto::CompiledProgram>(m->arena_.get());
  return m;
}

Status Module::Finish(SourceMap main_source, SourceMap startup_source) {
  compiled_->set_compiled_format_version(1);
  if (compiled_->startup_program().blocks_size() == 0) {
    pb::BlockDesc* b = compiled_->mutable_startup_program()->add_blocks();
    b->set_idx(0);
    b->set_parent_idx(-1);
  }
  PC_ASSIGN_OR_RETURN(main_, Program::Create(compiled_->mutable_main_program(), std::move(main_source)));
  PC_ASSIGN_OR_RETURN(startup_, Program::Create(compiled_->mutable_startup_program(), std::move(startup_source)));
  return Status::OK();
}

std::string_view AttrTypeName(pb::AttrType t) {
  return pb::AttrType_IsValid(t) ? std::string_view(pb::AttrType_Name(t)) : std::string_view("UNKNOWN");
}

}  // namespace paddlec::ir

namespace paddlec::ir {

pb::ProgramDesc CloneForTest(const pb::ProgramDesc& program) {
  pb::ProgramDesc out = program;
  if (out.blocks_size() == 0) return out;
  auto* ops = out.mutable_blocks(0)->mutable_ops();
  int keep = ops->size();
  for (int i = 0; i < ops->size(); ++i) {
    if (!IsForwardOp(ops->Get(i))) {
      keep = i;
      break;
    }
  }
  ops->DeleteSubrange(keep, ops->size() - keep);
  for (auto& block : *out.mutable_blocks())
    for (auto& op : *block.mutable_ops())
      for (auto& a : *op.mutable_attrs())
        if (a.name() == "is_test" && a.type() == pb::BOOLEAN) a.set_b(true);
  return out;
}

}  // namespace paddlec::ir
