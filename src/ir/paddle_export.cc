// ExportForPaddle: feed/fetch ops, batch_norm's ReserveSpace, and the check that every op exists in
// PaddlePaddle. What Paddle's loaders expect of a .pdmodel: docs/formats.md.
#include "paddlec/ir/paddle_export.h"

#include <algorithm>

#include "pir/pir_op_table.h"

namespace paddlec::ir {
namespace {

bool HasOp(const pb::BlockDesc& b, std::string_view type) {
  return std::any_of(b.ops().begin(), b.ops().end(), [&](const pb::OpDesc& op) { return op.type() == type; });
}

void DeclareHolder(pb::BlockDesc& b, const std::string& name, pb::VarType::Type type) {
  for (const auto& v : b.vars())
    if (v.name() == name) return;
  pb::VarDesc* v = b.add_vars();
  v->set_name(name);
  v->mutable_type()->set_type(type);
  v->set_persistable(true);
}

pb::OpDesc FeedOrFetch(const std::string& type, const std::string& in, const std::string& out, int col) {
  pb::OpDesc op;
  op.set_type(type);
  auto* x = op.add_inputs();
  x->set_parameter("X");
  x->add_arguments(in);
  auto* o = op.add_outputs();
  o->set_parameter("Out");
  o->add_arguments(out);
  auto* a = op.add_attrs();
  a->set_name("col");
  a->set_type(pb::INT);
  a->set_i(col);
  return op;
}

void AddFeedsAndFetches(pb::BlockDesc& b, const std::vector<std::string>& feeds,
                        const std::vector<std::string>& fetches) {
  if (!feeds.empty() && !HasOp(b, "feed")) {
    DeclareHolder(b, "feed", pb::VarType::FEED_MINIBATCH);
    google::protobuf::RepeatedPtrField<pb::OpDesc> ops;
    for (size_t i = 0; i < feeds.size(); ++i) *ops.Add() = FeedOrFetch("feed", "feed", feeds[i], static_cast<int>(i));
    for (auto& op : *b.mutable_ops()) *ops.Add() = std::move(op);
    b.mutable_ops()->Swap(&ops);
    for (auto& v : *b.mutable_vars())
      if (std::find(feeds.begin(), feeds.end(), v.name()) != feeds.end()) v.set_need_check_feed(true);
  }
  if (!fetches.empty() && !HasOp(b, "fetch") && !HasOp(b, "fetch_v2")) {
    DeclareHolder(b, "fetch", pb::VarType::FETCH_LIST);
    for (size_t i = 0; i < fetches.size(); ++i)
      *b.add_ops() = FeedOrFetch("fetch", fetches[i], "fetch", static_cast<int>(i));
  }
}

/// batch_norm's and sync_batch_norm's ReserveSpace: Paddle's kernel writes it in training mode, so
/// the slot must name a variable; paddlec leaves it empty (its kernels need no reserve).
void BindReserveSpace(pb::BlockDesc& b) {
  for (auto& op : *b.mutable_ops()) {
    if (op.type() != "batch_norm" && op.type() != "sync_batch_norm") continue;
    pb::OpDesc::Var* slot = nullptr;
    std::string y;
    for (auto& o : *op.mutable_outputs()) {
      if (o.parameter() == "ReserveSpace") slot = &o;
      if (o.parameter() == "Y" && o.arguments_size() == 1) y = o.arguments(0);
    }
    if (y.empty() || (slot != nullptr && slot->arguments_size() > 0)) continue;
    if (slot == nullptr) {
      slot = op.add_outputs();
      slot->set_parameter("ReserveSpace");
    }
    std::string name = y + ".reserve_space";
    slot->add_arguments(name);
    pb::VarDesc* v = b.add_vars();
    v->set_name(name);
    SetVarShape(v, Dims{-1}, DType::kFloat32);  // as Paddle declares it; sized by its kernel
  }
}

}  // namespace

bool IsPaddleOp(std::string_view type) {
  auto known = [](std::string_view t) {
    for (const auto& row : pir::OpTable())
      if (row.legacy == t) return true;
    std::string_view rest = pir::LegacyOnlyOps();
    while (!rest.empty()) {
      size_t space = rest.find(' ');
      if (rest.substr(0, space) == t) return true;
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
    return false;
  };
  if (known(type)) return true;
  return type.ends_with("_grad") && known(type.substr(0, type.size() - 5));
}

Status ExportForPaddle(pb::ProgramDesc& program, const std::vector<std::string>& feeds,
                       const std::vector<std::string>& fetches) {
  std::vector<Error> errors;
  for (int b = 0; b < program.blocks_size(); ++b)
    for (int i = 0; i < program.blocks(b).ops_size(); ++i) {
      const std::string& type = program.blocks(b).ops(i).type();
      if (IsPaddleOp(type)) continue;
      SourceLocation loc;
      loc.block = b;
      loc.op = i;
      loc.op_type = type;
      errors.push_back(
          MakeError(ErrorCode::kUnimplemented, "'{}' is paddlec's own op: PaddlePaddle cannot run a .pdmodel with it",
                    type)
              .At(loc)
              .Note("fused ops come from optimization passes; a .pdmodel is written unfused (drop the fusion passes "
                    "from --passes, or write a paddlec .pb instead)"));
    }
  if (!errors.empty()) {
    Error first = std::move(errors.front());
    for (size_t i = 1; i < errors.size(); ++i) first.Append(std::move(errors[i]));
    return first;
  }
  if (program.blocks_size() == 0) return Status::OK();
  for (auto& b : *program.mutable_blocks()) BindReserveSpace(b);
  AddFeedsAndFetches(*program.mutable_blocks(0), feeds, fetches);
  return Status::OK();
}

}  // namespace paddlec::ir
