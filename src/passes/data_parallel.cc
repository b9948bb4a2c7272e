// Pass "data-parallel": rewrites a training program for N ranks that each train on their own part
// of the batch, the way PaddlePaddle's fleet (GradAllReduce) does, with gradients fused into buckets.
//
// Requires: backward and optimizer (param_grads recorded), init-params (the startup program holds
// the initializers).
// Guarantees, when nranks > 1 (nranks 1 leaves the program unchanged):
//   - the loss gradient seed is scaled by 1/nranks in place, so that summing the gradients over
//     ranks averages them: N ranks of batch B then compute the gradient of the concatenated N*B batch;
//   - the parameter gradients are packed, in the order backward finishes them, into buckets of at
//     most bucket_mb MiB (one dtype each; a larger gradient gets a bucket of its own): for each, a
//     `coalesce_tensor` (copy_data, Output = Input = the gradients, which become views of the bucket)
//     and one in-place `c_allreduce_sum` right after the op that finishes its last gradient, so it
//     overlaps the rest of backward where the runtime can; one `c_sync_comm_stream` over all buckets
//     before the first op that reads a gradient (weight decay, clipping or the update);
//   - with sync_bn, each training batch_norm becomes sync_batch_norm and its batch_norm_grad
//     sync_batch_norm_grad (PaddlePaddle's SyncBN): the batch statistics, and so the running ones, are
//     the global batch's; otherwise each rank normalizes with its own batch and keeps its own
//     running statistics;
//   - the startup program broadcasts every trained parameter from rank 0 (c_broadcast) after the
//     initializers, then c_sync_comm_stream.
// New ops carry op_role Backward (Forward in the startup program) and ring_id 0.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "paddlec/ir/op_role.h"
#include "paddlec/ops/op_checker.h"
#include "paddlec/passes/pass.h"
#include "paddlec/runtime/comm.h"

namespace paddlec::passes {
namespace {

namespace pb = ::paddle::framework::proto;

struct Grad {
  std::string param, grad;
  DType dtype;
  int64_t numel;
  int ready;  // index of the op that finishes it
};

struct Bucket {
  std::vector<const Grad*> grads;
  int64_t bytes = 0;
  int ready = -1;
};

pb::OpDesc NewOp(const std::string& type, const std::vector<std::pair<std::string, std::vector<std::string>>>& ins,
                 const std::vector<std::pair<std::string, std::vector<std::string>>>& outs,
                 std::vector<pb::OpDesc::Attr> attrs, int role) {
  pb::OpDesc op;
  op.set_type(type);
  for (const auto& [slot, args] : ins) ops::AddInput(op, slot, args);
  for (const auto& [slot, args] : outs) ops::AddOutput(op, slot, args);
  for (auto& a : attrs) *op.add_attrs() = std::move(a);
  *op.add_attrs() = ops::MakeAttr("op_role", role);
  return op;
}

class DataParallelPass final : public Pass {
 public:
  std::string_view Name() const override { return "data-parallel"; }
  std::string_view Summary() const override {
    return "average gradients over ranks (bucketed c_allreduce_sum), broadcast parameters from rank 0";
  }
  std::vector<PassOption> Options() const override {
    return {{"nranks", PassOption::Type::kInt, "0", "ranks training together (0: the launcher's, 1 without mpirun)"},
            {"bucket_mb", PassOption::Type::kFloat, "25", "the most MiB of gradients one allreduce carries"},
            {"sync_bn", PassOption::Type::kBool, "false",
             "training batch_norm becomes sync_batch_norm: batch statistics over the global batch of all ranks"}};
  }
  Status Configure(const PassOptions& o) override {
    nranks_ = static_cast<int>(o.GetInt("nranks"));
    if (nranks_ < 0) return MakeError(ErrorCode::kInvalidArgument, "nranks must be >= 0, got {}", nranks_);
    if (nranks_ == 0) nranks_ = runtime::LauncherWorldSize();
    bucket_bytes_ = o.GetFloat("bucket_mb") * (1 << 20);
    if (!(bucket_bytes_ > 0) || !std::isfinite(bucket_bytes_))
      return MakeError(ErrorCode::kInvalidArgument, "bucket_mb must be positive, got {}", o.GetFloat("bucket_mb"));
    sync_bn_ = o.GetBool("sync_bn");
    return Status::OK();
  }

  StatusOr<bool> Run(ir::Module& module, PassContext& ctx) override {
    if (module.compiled().param_grads_size() == 0)
      return MakeError(ErrorCode::kInvalidArgument,
                       "the data-parallel pass needs gradients: run the backward and optimizer passes first");
    if (nranks_ == 1) return false;
    ir::Block& main = module.main().global_block();
    PC_ASSIGN_OR_RETURN(std::vector<Grad> grads, FindGrads(module, main));
    int sync_at = main.num_ops();
    for (const auto& g : grads) sync_at = std::min(sync_at, FirstUse(main, g.grad));
    for (const auto& g : grads)
      if (g.ready >= sync_at)
        return MakeError(ErrorCode::kInvalidArgument,
                         "gradient '{}' is written by op {} after op {} reads a gradient: it cannot be averaged "
                         "before the parameter updates",
                         g.grad, g.ready, sync_at);

    // New ops, keyed by the original op they follow (-1: before the first).
    std::multimap<int, pb::OpDesc> after;
    PC_RETURN_IF_ERROR(ScaleLossGrad(module, main, after));
    if (sync_bn_) SyncBatchNorm(main);
    std::vector<std::string> buckets;
    int k = 0;
    for (const Bucket& b : MakeBuckets(grads)) {
      std::string name = fmt::format("data_parallel@bucket_{}@GRAD", k++);
      ir::SetVarShape(main.AddVar(name), Dims{b.bytes / static_cast<int64_t>(SizeOf(b.grads[0]->dtype))},
                      b.grads[0]->dtype);
      std::vector<std::string> names, role_var;
      for (const Grad* g : b.grads) {
        names.push_back(g->grad);
        role_var.insert(role_var.end(), {g->param, g->grad});
      }
      after.emplace(b.ready, NewOp("coalesce_tensor", {{"Input", names}}, {{"Output", names}, {"FusedOutput", {name}}},
                                   {ops::MakeAttr("copy_data", true), ops::MakeAttr("use_align", false),
                                    ops::MakeAttr("dtype", DTypeToProto(b.grads[0]->dtype))},
                                   ir::kOpRoleBackward));
      pb::OpDesc allreduce =
          NewOp("c_allreduce_sum", {{"X", {name}}}, {{"Out", {name}}},
                {ops::MakeAttr("ring_id", 0), ops::MakeAttr("use_calc_stream", false)}, ir::kOpRoleBackward);
      *allreduce.add_attrs() = ops::MakeAttr("op_role_var", role_var);
      after.emplace(b.ready, std::move(allreduce));
      buckets.push_back(name);
    }
    after.emplace(sync_at - 1, NewOp("c_sync_comm_stream", {{"X", buckets}}, {{"Out", buckets}},
                                     {ops::MakeAttr("ring_id", 0)}, ir::kOpRoleBackward));
    Splice(main, after);
    module.main().InvalidateSourcePositions();
    BroadcastParameters(module, grads);
    PC_RETURN_IF_ERROR(CheckNewOps(main, ctx));
    PC_RETURN_IF_ERROR(CheckNewOps(module.startup().global_block(), ctx));
    return true;
  }

 private:
  StatusOr<std::vector<Grad>> FindGrads(ir::Module& module, ir::Block& main) {
    ir::DefUse du(main);
    std::vector<Grad> grads;
    for (const auto& pg : module.compiled().param_grads()) {
      const pb::VarDesc* v = main.FindVar(pg.grad());
      if (v == nullptr) return MakeError(ErrorCode::kNotFound, "gradient '{}' is not declared", pg.grad());
      PC_ASSIGN_OR_RETURN(Dims dims, ir::VarDims(*v));
      if (dims.Numel() < 0)
        return MakeError(ErrorCode::kInvalidArgument, "gradient '{}' has unknown dims {}: buckets need its size",
                         pg.grad(), dims.ToString());
      auto writers = du.Writers(pg.grad());
      if (writers.empty()) return MakeError(ErrorCode::kNotFound, "no op writes gradient '{}'", pg.grad());
      int first_use = FirstUse(main, pg.grad());
      int ready = -1;
      for (int w : writers)
        if (w < first_use) ready = std::max(ready, w);
      grads.push_back({pg.param(), pg.grad(), ir::VarDType(*v), dims.Numel(), ready});
    }
    return grads;
  }

  /// The first op that reads `grad` without writing it (accumulating ops do both).
  static int FirstUse(ir::Block& main, const std::string& grad) {
    ir::DefUse du(main);
    auto writers = du.Writers(grad);
    for (int r : du.Readers(grad))
      if (std::find(writers.begin(), writers.end(), r) == writers.end()) return r;
    return main.num_ops();
  }

  /// Gradients in the order backward finishes them, cut into buckets of one dtype and bucket_mb.
  std::vector<Bucket> MakeBuckets(const std::vector<Grad>& grads) const {
    std::vector<const Grad*> order;
    for (const auto& g : grads) order.push_back(&g);
    std::stable_sort(order.begin(), order.end(), [](const Grad* a, const Grad* b) { return a->ready < b->ready; });
    std::vector<Bucket> out;
    std::map<DType, size_t> open;  // dtype -> index of its bucket being filled
    for (const Grad* g : order) {
      int64_t bytes = g->numel * static_cast<int64_t>(SizeOf(g->dtype));
      auto it = open.find(g->dtype);
      if (it == open.end() || out[it->second].bytes + bytes > bucket_bytes_) {
        out.emplace_back();
        it = open.insert_or_assign(g->dtype, out.size() - 1).first;
      }
      Bucket& b = out[it->second];
      b.grads.push_back(g);
      b.bytes += bytes;
      b.ready = std::max(b.ready, g->ready);
    }
    // Launched in the order they become ready.
    std::stable_sort(out.begin(), out.end(), [](const Bucket& a, const Bucket& b) { return a.ready < b.ready; });
    return out;
  }

  /// scale(loss@GRAD, 1/nranks) right after the op seeding it.
  Status ScaleLossGrad(ir::Module& module, ir::Block& main, std::multimap<int, pb::OpDesc>& after) const {
    std::string seed = ir::GradVarName(module.compiled().loss());
    ir::DefUse du(main);
    auto writers = du.Writers(seed);
    if (module.compiled().loss().empty() || writers.empty())
      return MakeError(ErrorCode::kInvalidArgument, "the data-parallel pass cannot find the loss gradient '{}'", seed)
          .Note("run it after the backward pass");
    after.emplace(writers[0], NewOp("scale", {{"X", {seed}}}, {{"Out", {seed}}},
                                    {ops::MakeAttr("scale", 1.0f / static_cast<float>(nranks_))},
                                    ir::kOpRoleBackward | ir::kOpRoleLoss));
    return Status::OK();
  }

  /// Training batch_norm ops become sync_batch_norm, and their batch_norm_grad ops (found by the X and
  /// Scale they share) sync_batch_norm_grad: same slots and attributes, statistics over all ranks.
  static void SyncBatchNorm(ir::Block& main) {
    std::set<std::pair<std::string, std::string>> synced;  // (X, Scale) of the rewritten forward ops
    auto input = [](const pb::OpDesc& op, std::string_view slot) {
      for (const auto& in : op.inputs())
        if (in.parameter() == slot && in.arguments_size() > 0) return in.arguments(0);
      return std::string();
    };
    auto key = [&](const pb::OpDesc& op) { return std::make_pair(input(op, "X"), input(op, "Scale")); };
    for (int i = 0; i < main.num_ops(); ++i) {
      pb::OpDesc& op = *main.desc().mutable_ops(i);
      if (op.type() != "batch_norm" || !ir::IsForwardOp(op)) continue;
      bool is_test = false;
      for (const auto& a : op.attrs())
        if ((a.name() == "is_test" || a.name() == "use_global_stats") && a.b()) is_test = true;
      if (is_test) continue;  // normalizes with the running statistics: nothing to share
      op.set_type("sync_batch_norm");
      synced.insert(key(op));
    }
    for (int i = 0; i < main.num_ops(); ++i) {
      pb::OpDesc& op = *main.desc().mutable_ops(i);
      if (op.type() == "batch_norm_grad" && synced.contains(key(op))) op.set_type("sync_batch_norm_grad");
    }
  }

  /// Rebuilds the op list with the new ops after the original ones they follow, in insertion order.
  static void Splice(ir::Block& main, std::multimap<int, pb::OpDesc>& after) {
    google::protobuf::RepeatedPtrField<pb::OpDesc> ops;
    auto emit = [&](int i) {
      auto [lo, hi] = after.equal_range(i);
      for (auto it = lo; it != hi; ++it) *ops.Add() = std::move(it->second);
    };
    emit(-1);
    for (int i = 0; i < main.num_ops(); ++i) {
      *ops.Add() = std::move(*main.desc().mutable_ops(i));
      emit(i);
    }
    main.desc().mutable_ops()->Swap(&ops);
  }

  /// c_broadcast of every trained parameter from rank 0 after the startup program's initializers.
  void BroadcastParameters(ir::Module& module, const std::vector<Grad>& grads) const {
    ir::Block& startup = module.startup().global_block();
    ir::Block& main = module.main().global_block();
    std::vector<std::string> params;
    for (const auto& g : grads) {
      if (startup.FindLocalVar(g.param) == nullptr) *startup.AddVar(g.param) = *main.FindVar(g.param);
      *startup.AppendOp() =
          NewOp("c_broadcast", {{"X", {g.param}}}, {{"Out", {g.param}}},
                {ops::MakeAttr("ring_id", 0), ops::MakeAttr("root", 0), ops::MakeAttr("use_calc_stream", false)},
                ir::kOpRoleForward);
      params.push_back(g.param);
    }
    *startup.AppendOp() = NewOp("c_sync_comm_stream", {{"X", params}}, {{"Out", params}}, {ops::MakeAttr("ring_id", 0)},
                                ir::kOpRoleForward);
  }

  /// Checks and infers the collective, coalesce and scale ops this pass added.
  static Status CheckNewOps(ir::Block& block, PassContext& ctx) {
    for (int i = 0; i < block.num_ops(); ++i) {
      const std::string& t = block.desc().ops(i).type();
      if (!t.starts_with("c_") && t != "coalesce_tensor" && t != "scale") continue;
      std::vector<Error> errors;
      ops::CheckOp(block.op(i), ctx.registry, {}, errors);
      PC_RETURN_IF_ERROR(ops::ToStatus(std::move(errors)));
      PC_RETURN_IF_ERROR(ops::InferShapeAtCompileTime(block.op(i), ctx.registry));
    }
    return Status::OK();
  }

  int nranks_ = 0;
  double bucket_bytes_ = 25 << 20;
  bool sync_bn_ = false;
};

}  // namespace

std::unique_ptr<Pass> CreateDataParallelPass() { return std::make_unique<DataParallelPass>(); }

}  // namespace paddlec::passes
