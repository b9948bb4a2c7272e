// Pass "backward": appends the gradient ops of a loss to the main program.
//
// Requires: validate, infer-shape; the loss variable in the global block (option `loss`, or the
// module's recorded loss).
// Guarantees: after the forward ops come, in order: a fill_constant seeding loss@GRAD with ones,
// then the grad ops of every forward op on a path from a trainable parameter to the loss, in
// reverse order. Variables get gradients only where they are needed: not for stop_gradient
// variables, the `no_grad` set, non-float variables, inputs an op declares NoGradInput, or
// branches that do not reach the loss or reach no trainable parameter. A gradient written by
// several grad ops (a variable read by several ops) is written under renamed partials
// (x@GRAD@RENAME@block0@N) that a `sum` op adds up before the first reader. A grad op that reads
// the gradient of an output that does not reach the loss gets zeros (fill_zeros_like). Every new
// op is validated and shape-inferred; each trainable parameter's gradient is recorded in
// param_grads, and the op that finally writes it carries op_role_var [param, param@GRAD], as in
// PaddlePaddle. A non-scalar loss is first reduced with `mean`.
// A `while` (`conditional_block`) op on the path gets a while_grad (conditional_block_grad) whose
// sub-block, made here, holds the gradient ops of the body (see src/ops/control/control_kernels.h for
// how they run over the forward's scopes); the body's parameters are the global block's.
#include <functional>
#include <map>
#include <set>

#include "paddlec/ir/op_role.h"
#include "paddlec/ops/op_checker.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

namespace pb = ::paddle::framework::proto;

constexpr int kRoleForward = ir::kOpRoleForward, kRoleBackward = ir::kOpRoleBackward, kRoleLoss = ir::kOpRoleLoss;

void SetRole(pb::OpDesc* op, int role) {
  for (auto& a : *op->mutable_attrs())
    if (a.name() == "op_role") {
      a.set_type(pb::INT);
      a.set_i(role);
      return;
    }
  *op->add_attrs() = ops::MakeAttr("op_role", role);
}

class BackwardPass final : public Pass {
 public:
  std::string_view Name() const override { return "backward"; }
  std::string_view Summary() const override { return "append the gradient ops of the loss"; }
  std::vector<PassOption> Options() const override {
    return {{"loss", PassOption::Type::kString, "", "the loss variable (default: the module's recorded loss)"},
            {"no_grad", PassOption::Type::kStringList, "", "variables that get no gradient, separated by ';'"}};
  }
  Status Configure(const PassOptions& o) override {
    loss_ = o.GetString("loss");
    for (const auto& v : o.GetStringList("no_grad")) no_grad_.insert(v);
    return Status::OK();
  }

  StatusOr<bool> Run(ir::Module& module, PassContext& ctx) override {
    std::string loss = loss_.empty() ? module.compiled().loss() : loss_;
    ir::Block& block = module.main().global_block();
    if (loss.empty())
      return MakeError(ErrorCode::kInvalidArgument, "the backward pass needs a loss variable")
          .Advise("pass --loss=NAME (or backward{loss=NAME})",
                  "pass the loss Variable to minimize() or append_backward()");
    pb::VarDesc* loss_var = block.FindLocalVar(loss);
    if (loss_var == nullptr || !ir::IsTensorVar(*loss_var))
      return MakeError(ErrorCode::kNotFound, "the loss '{}' is not a tensor of the global block", loss);
    if (!IsFloating(ir::VarDType(*loss_var)))
      return MakeError(ErrorCode::kInvalidArgument, "the loss '{}' is {}, not a floating-point tensor", loss,
                       DTypeName(ir::VarDType(*loss_var)));
    int num_forward = block.num_ops();
    int loss_op = -1;
    for (int i = 0; i < num_forward; ++i)
      for (const auto& s : block.desc().ops(i).outputs())
        for (const auto& a : s.arguments())
          if (a == loss) loss_op = i;
    if (loss_op < 0) return MakeError(ErrorCode::kInvalidArgument, "no op of the main program writes the loss '{}'", loss);
    for (const auto& op : block.desc().ops())
      for (const auto& a : op.attrs())
        if (a.name() == "op_role" && (a.i() & kRoleBackward))
          return MakeError(ErrorCode::kInvalidArgument, "the program already has backward ops");

    // A non-scalar loss is reduced with mean first.
    PC_ASSIGN_OR_RETURN(Dims loss_dims, ir::VarDims(*loss_var));
    if (loss_dims.Numel() != 1) {
      std::string reduced = loss + "@MEAN";
      pb::OpDesc* mean = block.InsertOp(loss_op + 1);
      mean->set_type("mean");
      ops::AddInput(*mean, "X", {loss});
      ops::AddOutput(*mean, "Out", {reduced});
      block.AddVar(reduced);
      std::vector<Error> errors;
      ops::CheckOp(block.op(loss_op + 1), ctx.registry, {}, errors);
      PC_RETURN_IF_ERROR(ops::ToStatus(std::move(errors)));
      PC_RETURN_IF_ERROR(ops::InferShapeAtCompileTime(block.op(loss_op + 1), ctx.registry));
      loss = reduced;
      loss_op += 1;
      num_forward += 1;
    }
    SetRole(block.desc().mutable_ops(loss_op), kRoleForward | kRoleLoss);

    // Which variables need a gradient: reachable forward from a trainable parameter and backward from
    // the loss, through differentiable edges only.
    auto differentiable_inputs = [&](const pb::OpDesc& op) {
      std::vector<std::string> out;
      const ops::OpInfo* info = ctx.registry.Find(op.type());
      if (info == nullptr || info->no_gradient()) return out;
      for (const auto& s : op.inputs()) {
        int idx = info->InputIndex(s.parameter());
        const auto& ng = info->no_grad_inputs();
        if (idx < 0 || std::find(ng.begin(), ng.end(), idx) != ng.end()) continue;
        for (const auto& a : s.arguments()) out.push_back(a);
      }
      return out;
    };
    auto blocked = [&](const std::string& v) {
      if (no_grad_.count(v) || v == ir::kEmptyVarName) return true;
      const pb::VarDesc* d = block.FindVar(v);
      return d == nullptr || d->stop_gradient() || !ir::IsTensorVar(*d) || !IsFloating(ir::VarDType(*d));
    };
    std::set<std::string> trainable;
    for (const auto& v : block.desc().vars())
      if (v.persistable() && !blocked(v.name())) trainable.insert(v.name());

    std::set<std::string> from_param = trainable;
    for (int i = 0; i <= loss_op; ++i) {
      const pb::OpDesc& op = block.desc().ops(i);
      bool any = false;
      for (const auto& v : differentiable_inputs(op)) any |= from_param.count(v) > 0 && !blocked(v);
      if (any)
        for (const auto& s : op.outputs())
          for (const auto& a : s.arguments()) from_param.insert(a);
    }
    std::set<std::string> to_loss = {loss};
    std::vector<int> path;  // forward ops whose gradient is needed, in forward order
    for (int i = loss_op; i >= 0; --i) {
      const pb::OpDesc& op = block.desc().ops(i);
      bool feeds_loss = false;
      for (const auto& s : op.outputs())
        for (const auto& a : s.arguments()) feeds_loss |= to_loss.count(a) > 0;
      if (!feeds_loss) continue;
      bool on_path = false;
      for (const auto& v : differentiable_inputs(op))
        if (!blocked(v) && from_param.count(v)) {
          to_loss.insert(v);
          on_path = true;
        }
      if (on_path) path.insert(path.begin(), i);
    }
    auto needs_grad = [&](const std::string& v) { return !blocked(v) && from_param.count(v) && to_loss.count(v); };
    if (path.empty())
      return MakeError(ErrorCode::kInvalidArgument, "no trainable parameter reaches the loss '{}'", loss)
          .Note("parameters are persistable float variables without stop_gradient");

    // Seed: d loss / d loss = 1.
    std::vector<pb::OpDesc> grad_ops;
    {
      pb::OpDesc seed;
      seed.set_type("fill_constant");
      ops::AddOutput(seed, "Out", {ir::GradVarName(loss)});
      *seed.add_attrs() = ops::MakeAttr("shape", std::vector<int64_t>(loss_dims.Numel() == 1 && loss_dims.rank() > 0
                                                                            ? std::vector<int64_t>(loss_dims.begin(), loss_dims.end())
                                                                            : std::vector<int64_t>{}));
      *seed.add_attrs() = ops::MakeAttr("value", 1.0f);
      *seed.add_attrs() = ops::MakeAttr("dtype", DTypeToProto(ir::VarDType(*loss_var)));
      SetRole(&seed, kRoleBackward | kRoleLoss);
      grad_ops.push_back(std::move(seed));
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const pb::OpDesc& fwd = block.desc().ops(*it);
      if (fwd.type() == "while" || fwd.type() == "conditional_block") {
        Status st = AppendSubBlockGrad(module, block, fwd, needs_grad, trainable, grad_ops, ctx);
        if (!st.ok()) {
          Error e = std::move(st).TakeError();
          if (e.location().op < 0) e.At(block.op(*it).Location());
          return e;
        }
        continue;
      }
      const ops::OpInfo* info = ctx.registry.Find(fwd.type());
      std::unordered_set<std::string> no_grad;
      for (const auto& s : fwd.inputs())
        for (const auto& a : s.arguments())
          if (!needs_grad(a)) no_grad.insert(a);
      ops::GradMakerContext gctx(fwd, no_grad, ctx.registry);
      Status st = info->grad_maker()(gctx);
      if (!st.ok()) {
        Error e = std::move(st).TakeError();
        e.At(block.op(*it).Location());
        return e;
      }
      for (auto& g : gctx.emitted()) {
        SetRole(&g, kRoleBackward);
        grad_ops.push_back(std::move(g));
      }
    }

    RenameRepeatedGradients(grad_ops, block.idx());
    FillMissingGradients(grad_ops, {});
    std::vector<std::string> params;
    for (const auto& p : trainable)
      if (needs_grad(p)) params.push_back(p);
    MarkParamGradWriters(grad_ops, params);

    // Append, validate and infer each grad op in order.
    for (auto& g : grad_ops) {
      *block.AppendOp() = std::move(g);
      ir::Op op = block.op(block.num_ops() - 1);
      for (const auto& s : op.desc().outputs())
        for (const auto& a : s.arguments()) DeclareGradVar(block, a);
      std::vector<Error> errors;
      ops::CheckOp(op, ctx.registry, {}, errors);
      PC_RETURN_IF_ERROR(ops::ToStatus(std::move(errors)));
      PC_RETURN_IF_ERROR(ops::InferShapeAtCompileTime(op, ctx.registry));
    }

    auto* compiled = &module.compiled();
    compiled->set_loss(loss);
    compiled->clear_param_grads();
    for (const auto& p : trainable) {
      if (!needs_grad(p)) continue;
      auto* pg = compiled->add_param_grads();
      pg->set_param(p);
      pg->set_grad(ir::GradVarName(p));
    }
    return true;
  }

 private:
  /// Gives every write of a gradient written more than once its own name and inserts a `sum` of the
  /// partials before the first op that reads the gradient (or at the end).
  static void RenameRepeatedGradients(std::vector<pb::OpDesc>& ops, int block_idx) {
    // An op updating a gradient in place (while_grad's loop-carried ones) is not a separate writer:
    // it reads the sum so far and leaves the gradient of what came before it.
    auto in_place = [](const pb::OpDesc& op, const std::string& a) {
      for (const auto& s : op.inputs())
        if (std::find(s.arguments().begin(), s.arguments().end(), a) != s.arguments().end()) return true;
      return false;
    };
    std::map<std::string, int> writers;
    for (const auto& op : ops)
      for (const auto& s : op.outputs())
        for (const auto& a : s.arguments())
          if (a != ir::kEmptyVarName && !in_place(op, a)) ++writers[a];
    std::map<std::string, int> counter;
    std::map<std::string, std::vector<std::string>> partials;
    std::vector<pb::OpDesc> out;
    auto flush = [&](const std::string& var) {
      pb::OpDesc sum;
      sum.set_type("sum");
      ops::AddInput(sum, "X", partials[var]);
      ops::AddOutput(sum, "Out", {var});
      SetRole(&sum, kRoleBackward);
      out.push_back(std::move(sum));
      partials.erase(var);
    };
    for (auto& op : ops) {
      // Gradients this op reads whose partials are all written: add them up first.
      for (const auto& s : op.inputs())
        for (const auto& a : s.arguments())
          if (partials.count(a) && static_cast<int>(partials[a].size()) == writers[a]) flush(a);
      for (auto& s : *op.mutable_outputs())
        for (auto& a : *s.mutable_arguments()) {
          if (a == ir::kEmptyVarName || writers[a] < 2 || in_place(op, a)) continue;
          std::string renamed = fmt::format("{}@RENAME@block{}@{}", a, block_idx, counter[a]++);
          partials[a].push_back(renamed);
          a = renamed;
        }
      out.push_back(std::move(op));
    }
    std::vector<std::string> rest;
    for (const auto& [var, list] : partials) rest.push_back(var);
    for (const auto& var : rest) flush(var);
    ops = std::move(out);
  }

  /// PaddlePaddle's convention (its data-parallel and gradient-merge passes rely on it): the op that
  /// writes a parameter's final gradient lists [param, param@GRAD] in its op_role_var.
  static void MarkParamGradWriters(std::vector<pb::OpDesc>& ops, const std::vector<std::string>& params) {
    for (const auto& p : params) {
      std::string grad = ir::GradVarName(p);
      for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
        bool writes = false;
        for (const auto& s : it->outputs())
          for (const auto& a : s.arguments()) writes |= a == grad;
        if (!writes) continue;
        pb::OpDesc::Attr* role_var = nullptr;
        for (auto& a : *it->mutable_attrs())
          if (a.name() == "op_role_var") role_var = &a;
        if (role_var == nullptr) {
          role_var = it->add_attrs();
          role_var->set_name("op_role_var");
        }
        role_var->set_type(pb::STRINGS);
        role_var->add_strings(p);
        role_var->add_strings(grad);
        break;
      }
    }
  }

  /// A grad op that reads the gradient of a forward output no other grad op produced (nor `given`,
  /// gradients arriving from outside) gets zeros.
  static void FillMissingGradients(std::vector<pb::OpDesc>& ops, std::set<std::string> given) {
    std::set<std::string> produced = std::move(given);
    std::vector<pb::OpDesc> out;
    for (auto& op : ops) {
      for (const auto& s : op.inputs())
        for (const auto& a : s.arguments()) {
          if (!a.ends_with(ir::kGradSuffix) || produced.count(a)) continue;
          pb::OpDesc zeros;
          zeros.set_type("fill_zeros_like");
          ops::AddInput(zeros, "X", {a.substr(0, a.size() - ir::kGradSuffix.size())});
          ops::AddOutput(zeros, "Out", {a});
          SetRole(&zeros, kRoleBackward);
          out.push_back(std::move(zeros));
          produced.insert(a);
        }
      for (const auto& s : op.outputs())
        for (const auto& a : s.arguments()) produced.insert(a);
      out.push_back(std::move(op));
    }
    ops = std::move(out);
  }

  /// The while_grad of a `while` op (conditional_block_grad of a `conditional_block`), and its gradient
  /// block: the grad ops of the body ops through which the differentiable X (Input) reach Out, last
  /// first. The block is nested in the op's block (as the checker requires) and declares the body's
  /// variables again, for its ops' checks; at run time they resolve to the forward scopes' values.
  /// Every X@GRAD asked for is written (zeros where the body does not read X); the gradients of Out
  /// arrive from the grad op.
  static Status AppendSubBlockGrad(ir::Module& module, ir::Block& block, const pb::OpDesc& fwd,
                                const std::function<bool(const std::string&)>& needs_grad,
                                const std::set<std::string>& trainable, std::vector<pb::OpDesc>& grad_ops,
                                PassContext& ctx) {
    int sub = -1;
    bool is_test = false;
    for (const auto& a : fwd.attrs()) {
      if (a.name() == "sub_block") sub = a.block_idx();
      if (a.name() == "is_test") is_test = a.b();
    }
    auto args = [](const auto& slots, std::string_view name) {
      std::vector<std::string> out;
      for (const auto& s : slots)
        if (s.parameter() == name) out.assign(s.arguments().begin(), s.arguments().end());
      return out;
    };
    const bool loop = fwd.type() == "while";
    const std::string x_slot = loop ? "X" : "Input", scope_slot = loop ? "StepScopes" : "Scope";
    std::vector<std::string> xs = args(fwd.inputs(), x_slot), outs = args(fwd.outputs(), "Out"),
                             steps = args(fwd.outputs(), scope_slot);
    if (loop && is_test)
      return MakeError(ErrorCode::kInvalidArgument, "a while op with is_test keeps no step scopes: it has no gradient");
    if (steps.empty())
      return MakeError(ErrorCode::kInvalidArgument, "the {} op has no {} output, which its gradient reads", fwd.type(),
                       scope_slot)
          .Note(fmt::format("declare a STEP_SCOPES variable and bind it to {}", scope_slot));
    ir::Program& program = module.main();
    if (sub < 0 || sub >= program.num_blocks())
      return MakeError(ErrorCode::kValidation, "the {} op's sub_block {} does not exist", fwd.type(), sub);
    ir::Block& body = program.block(sub);
    auto differentiable = [&](const std::string& v) {
      const pb::VarDesc* d = body.FindVar(v);
      return d != nullptr && !d->stop_gradient() && ir::IsTensorVar(*d) && IsFloating(ir::VarDType(*d));
    };
    auto diff_inputs = [&](const pb::OpDesc& op) {
      std::vector<std::string> out;
      const ops::OpInfo* info = ctx.registry.Find(op.type());
      if (info == nullptr || info->no_gradient()) return out;
      const auto& ng = info->no_grad_inputs();
      for (const auto& s : op.inputs()) {
        int idx = info->InputIndex(s.parameter());
        if (idx < 0 || std::find(ng.begin(), ng.end(), idx) != ng.end()) continue;
        for (const auto& a : s.arguments())
          if (differentiable(a)) out.push_back(a);
      }
      return out;
    };
    // Activity: from the X that need a gradient and the parameters, through the body (twice: what
    // one step makes active, the next reads).
    std::set<std::string> active(trainable.begin(), trainable.end());
    for (const auto& x : xs)
      if (needs_grad(x)) active.insert(x);
    for (int pass = 0; pass < 2; ++pass)
      for (const auto& op : body.desc().ops()) {
        bool any = false;
        for (const auto& v : diff_inputs(op)) any |= active.count(v) > 0;
        if (any)
          for (const auto& s : op.outputs()) active.insert(s.arguments().begin(), s.arguments().end());
      }
    std::set<std::string> wanted;
    for (const auto& o : outs)
      if (needs_grad(o) && differentiable(o)) wanted.insert(o);
    std::vector<int> path;
    for (int pass = 0; pass < 2; ++pass) {
      path.clear();
      for (int i = body.num_ops() - 1; i >= 0; --i) {
        const pb::OpDesc& op = body.desc().ops(i);
        bool feeds = false;
        for (const auto& s : op.outputs())
          for (const auto& a : s.arguments()) feeds |= wanted.count(a) > 0;
        if (!feeds) continue;
        bool on_path = false;
        for (const auto& v : diff_inputs(op))
          if (active.count(v)) {
            wanted.insert(v);
            on_path = true;
          }
        if (on_path) path.insert(path.begin(), i);
      }
    }
    auto body_needs = [&](const std::string& v) { return differentiable(v) && active.count(v) && wanted.count(v); };

    std::vector<pb::OpDesc> ops;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const pb::OpDesc& op = body.desc().ops(*it);
      if (op.type() == "while" || op.type() == "conditional_block")
        return MakeError(ErrorCode::kUnimplemented, "backward through a {} nested in a {} is not supported yet",
                         op.type(), fwd.type());
      std::unordered_set<std::string> no_grad;
      for (const auto& s : op.inputs())
        for (const auto& a : s.arguments())
          if (!body_needs(a)) no_grad.insert(a);
      ops::GradMakerContext gctx(op, no_grad, ctx.registry);
      Status st = ctx.registry.Find(op.type())->grad_maker()(gctx);
      if (!st.ok()) {
        Error e = std::move(st).TakeError();
        e.At(body.op(*it).Location());
        return e;
      }
      for (auto& g : gctx.emitted()) {
        SetRole(&g, kRoleBackward);
        ops.push_back(std::move(g));
      }
    }
    ir::Block& grad_block = program.AppendBlock(block.idx());
    RenameRepeatedGradients(ops, grad_block.idx());
    std::set<std::string> given;
    for (const auto& o : outs)
      if (differentiable(o)) given.insert(ir::GradVarName(o));
    FillMissingGradients(ops, given);
    std::set<std::string> written;
    for (const auto& op : ops)
      for (const auto& s : op.outputs()) written.insert(s.arguments().begin(), s.arguments().end());
    std::vector<std::string> x_grads;
    for (const auto& x : xs) {
      bool want = needs_grad(x) && differentiable(x);
      x_grads.push_back(want ? ir::GradVarName(x) : std::string(ir::kEmptyVarName));
      if (!want || written.count(x_grads.back())) continue;
      pb::OpDesc zeros;
      zeros.set_type("fill_zeros_like");
      ops::AddInput(zeros, "X", {x});
      ops::AddOutput(zeros, "Out", {x_grads.back()});
      SetRole(&zeros, kRoleBackward);
      ops.push_back(std::move(zeros));
    }

    // The gradients crossing the loop are the op block's variables; the body's are declared again here.
    for (const auto& g : x_grads) DeclareGradVar(block, g);
    for (const auto& o : given) DeclareGradVar(block, o);
    for (const auto& v : body.desc().vars())
      if (grad_block.FindVar(v.name()) == nullptr) *grad_block.AddVar(v.name()) = v;
    for (auto& g : ops) {
      *grad_block.AppendOp() = std::move(g);
      ir::Op op = grad_block.op(grad_block.num_ops() - 1);
      for (const auto& s : op.desc().outputs())
        for (const auto& a : s.arguments()) DeclareGradVar(grad_block, a);
      std::vector<Error> errors;
      ops::CheckOp(op, ctx.registry, {}, errors);
      PC_RETURN_IF_ERROR(ops::ToStatus(std::move(errors)));
      PC_RETURN_IF_ERROR(ops::InferShapeAtCompileTime(op, ctx.registry));
    }

    pb::OpDesc grad;
    grad.set_type(fwd.type() + "_grad");
    if (!loop) ops::AddInput(grad, "Cond", args(fwd.inputs(), "Cond"));
    ops::AddInput(grad, x_slot, xs);
    ops::AddInput(grad, "Out", outs);
    std::vector<std::string> out_grads;
    for (const auto& o : outs)
      out_grads.push_back(differentiable(o) ? ir::GradVarName(o) : std::string(ir::kEmptyVarName));
    ops::AddInput(grad, "Out@GRAD", out_grads);
    ops::AddInput(grad, scope_slot, steps);
    ops::AddOutput(grad, x_slot + "@GRAD", x_grads);
    for (const auto& a : fwd.attrs()) {
      auto* copy = grad.add_attrs();
      *copy = a;
      if (a.name() == "sub_block") copy->set_block_idx(grad_block.idx());
    }
    SetRole(&grad, kRoleBackward);
    grad_ops.push_back(std::move(grad));
    return Status::OK();
  }

  /// Declares a gradient variable like its forward variable (shape inference refines it).
  static void DeclareGradVar(ir::Block& block, const std::string& name) {
    if (name == ir::kEmptyVarName || block.FindVar(name) != nullptr) return;
    pb::VarDesc* v = block.AddVar(name);
    std::string fwd = name.substr(0, name.find(ir::kGradSuffix));
    if (const pb::VarDesc* f = block.FindVar(fwd); f != nullptr && ir::IsTensorVar(*f)) {
      auto dims = ir::VarDims(*f);
      ir::SetVarShape(v, dims.ok() ? *dims : Dims(), ir::VarDType(*f));
    }
  }

  std::string loss_;
  std::set<std::string> no_grad_;
};

}  // namespace

std::unique_ptr<Pass> CreateBackwardPass() { return std::make_unique<BackwardPass>(); }

}  // namespace paddlec::passes
