// Pass "optimizer": appends one update op per trainable parameter, and the optimizer state they use.
//
// Requires: backward (param_grads recorded, gradient ops in the main program).
// Guarantees: a global learning-rate variable `learning_rate_0` (0-D as in PaddlePaddle 3,
// persistable, set by the startup program); for each recorded (param, grad), in param order:
//   - gradient clipping by global norm when clip_norm > 0 (PaddlePaddle's composition:
//     squared_l2_norm per gradient, sum, sqrt, elementwise_max with clip_norm, elementwise_div,
//     elementwise_mul), applied before weight decay, as PaddlePaddle does;
//   - L2 weight decay (grad += coeff * param) when weight_decay > 0 or the parameter's
//     `regularizer` attribute says "l2:COEFF" (momentum folds it into its update op);
//   - a per-parameter learning rate when its `learning_rate` attribute (a STRING holding a float
//     multiplier) is not 1: a `scale` of the global rate;
//   - one `sgd`, `momentum` (with nesterov) or `adam` op updating the parameter in place, with its
//     accumulators (`<param>_velocity_0`, `<param>_moment1_0`, `_moment2_0`, `_beta1_pow_acc_0`,
//     `_beta2_pow_acc_0`) as persistable variables initialized in the startup program.
// All new ops have op_role Optimize (2) and op_role_var [param, grad]. Parameters without a
// recorded gradient (stop_gradient, --no-grad) get no update op and no state.
#include <cmath>

#include "paddlec/ir/op_role.h"
#include "paddlec/ops/op_checker.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

namespace pb = ::paddle::framework::proto;

constexpr int kRoleBackward = ir::kOpRoleBackward, kRoleOptimize = ir::kOpRoleOptimize,
              kRoleLRSched = ir::kOpRoleLRSched;

std::string VarAttr(const pb::VarDesc& v, const std::string& name) {
  for (const auto& a : v.attrs())
    if (a.name() == name) return a.s();
  return "";
}

class OptimizerPass final : public Pass {
 public:
  std::string_view Name() const override { return "optimizer"; }
  std::string_view Summary() const override {
    return "append parameter updates (sgd, momentum, adam) with clipping, weight decay and optimizer state";
  }
  std::vector<PassOption> Options() const override {
    return {{"type", PassOption::Type::kString, "sgd", "sgd, momentum or adam"},
            {"lr", PassOption::Type::kFloat, "0.01", "learning rate"},
            {"momentum", PassOption::Type::kFloat, "0.9", "momentum: the decay of the velocity"},
            {"nesterov", PassOption::Type::kBool, "false", "momentum: Nesterov's variant"},
            {"beta1", PassOption::Type::kFloat, "0.9", "adam: decay of the first moment"},
            {"beta2", PassOption::Type::kFloat, "0.999", "adam: decay of the second moment"},
            {"epsilon", PassOption::Type::kFloat, "1e-8", "adam: added to the denominator"},
            {"lazy_mode", PassOption::Type::kBool, "false",
             "adam: a sparse gradient (an is_sparse embedding's) updates only its rows"},
            {"weight_decay", PassOption::Type::kFloat, "0", "L2 weight decay coefficient for every parameter"},
            {"clip_norm", PassOption::Type::kFloat, "0", "clip gradients to this global L2 norm (0: off)"}};
  }
  Status Configure(const PassOptions& o) override {
    type_ = o.GetString("type");
    if (type_ != "sgd" && type_ != "momentum" && type_ != "adam")
      return MakeError(ErrorCode::kInvalidArgument, "unknown optimizer '{}'", type_)
          .Note("expected one of: sgd, momentum, adam");
    lr_ = o.GetFloat("lr");
    mu_ = o.GetFloat("momentum");
    nesterov_ = o.GetBool("nesterov");
    beta1_ = o.GetFloat("beta1");
    beta2_ = o.GetFloat("beta2");
    epsilon_ = o.GetFloat("epsilon");
    lazy_mode_ = o.GetBool("lazy_mode");
    weight_decay_ = o.GetFloat("weight_decay");
    clip_norm_ = o.GetFloat("clip_norm");
    if (!(lr_ > 0) || !std::isfinite(lr_))
      return MakeError(ErrorCode::kInvalidArgument, "the learning rate must be positive, got {}", lr_);
    if (weight_decay_ < 0 || clip_norm_ < 0)
      return MakeError(ErrorCode::kInvalidArgument, "weight_decay and clip_norm must be >= 0");
    if (beta1_ < 0 || beta1_ >= 1 || beta2_ < 0 || beta2_ >= 1)
      return MakeError(ErrorCode::kInvalidArgument, "adam's beta1 and beta2 must be in [0, 1)");
    return Status::OK();
  }

  StatusOr<bool> Run(ir::Module& module, PassContext& ctx) override {
    if (module.compiled().param_grads_size() == 0)
      return MakeError(ErrorCode::kInvalidArgument, "the optimizer pass needs gradients: run the backward pass first");
    main_ = &module.main().global_block();
    startup_ = &module.startup().global_block();
    registry_ = &ctx.registry;
    first_new_ = main_->num_ops();

    std::string lr = Persistable("learning_rate_0", {}, DType::kFloat32, lr_);
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const auto& pg : module.compiled().param_grads()) pairs.emplace_back(pg.param(), pg.grad());
    if (clip_norm_ > 0) ClipByGlobalNorm(pairs);

    for (auto& [param, grad] : pairs) {
      const pb::VarDesc* pv = main_->FindVar(param);
      if (pv == nullptr) return MakeError(ErrorCode::kNotFound, "parameter '{}' is not declared", param);
      PC_ASSIGN_OR_RETURN(Dims dims, ir::VarDims(*pv));
      DType dtype = ir::VarDType(*pv);
      double decay = weight_decay_;
      if (std::string reg = VarAttr(*pv, "regularizer"); !reg.empty()) {
        if (!reg.starts_with("l2:"))
          return MakeError(ErrorCode::kInvalidArgument, "parameter '{}': unknown regularizer '{}' (expected l2:COEFF)",
                           param, reg);
        decay = std::strtod(reg.c_str() + 3, nullptr);
      }
      if (decay > 0 && type_ != "momentum") {
        std::string scaled = Temp(grad + "@DECAY", dims, dtype);
        Op("scale", {{"X", {param}}}, {{"Out", {scaled}}}, {ops::MakeAttr("scale", static_cast<float>(decay))},
           kRoleBackward, param, grad);
        std::string regularized = Temp(grad + "@REG", dims, dtype);
        Op("sum", {{"X", {grad, scaled}}}, {{"Out", {regularized}}}, {}, kRoleBackward, param, grad);
        grad = regularized;
      }
      std::string param_lr = lr;
      if (std::string mult = VarAttr(*pv, "learning_rate"); !mult.empty() && std::strtod(mult.c_str(), nullptr) != 1.0) {
        param_lr = Temp(param + "@LR", {}, DType::kFloat32);
        Op("scale", {{"X", {lr}}}, {{"Out", {param_lr}}},
           {ops::MakeAttr("scale", static_cast<float>(std::strtod(mult.c_str(), nullptr)))}, kRoleLRSched, param, grad);
      }
      if (type_ == "sgd") {
        Op("sgd", {{"Param", {param}}, {"LearningRate", {param_lr}}, {"Grad", {grad}}}, {{"ParamOut", {param}}}, {},
           kRoleOptimize, param, grad);
      } else if (type_ == "momentum") {
        std::string v = Persistable(param + "_velocity_0", dims, dtype, 0.0);
        std::vector<pb::OpDesc::Attr> attrs = {ops::MakeAttr("mu", static_cast<float>(mu_)),
                                               ops::MakeAttr("use_nesterov", nesterov_)};
        if (decay > 0) {
          attrs.push_back(ops::MakeAttr("regularization_method", std::string("l2_decay")));
          attrs.push_back(ops::MakeAttr("regularization_coeff", static_cast<float>(decay)));
        }
        Op("momentum", {{"Param", {param}}, {"Grad", {grad}}, {"Velocity", {v}}, {"LearningRate", {param_lr}}},
           {{"ParamOut", {param}}, {"VelocityOut", {v}}}, attrs, kRoleOptimize, param, grad);
      } else {
        std::string m1 = Persistable(param + "_moment1_0", dims, dtype, 0.0);
        std::string m2 = Persistable(param + "_moment2_0", dims, dtype, 0.0);
        std::string b1 = Persistable(param + "_beta1_pow_acc_0", {1}, DType::kFloat32, beta1_);
        std::string b2 = Persistable(param + "_beta2_pow_acc_0", {1}, DType::kFloat32, beta2_);
        Op("adam",
           {{"Param", {param}}, {"Grad", {grad}}, {"LearningRate", {param_lr}}, {"Moment1", {m1}}, {"Moment2", {m2}},
            {"Beta1Pow", {b1}}, {"Beta2Pow", {b2}}},
           {{"ParamOut", {param}}, {"Moment1Out", {m1}}, {"Moment2Out", {m2}}, {"Beta1PowOut", {b1}},
            {"Beta2PowOut", {b2}}},
           {ops::MakeAttr("beta1", static_cast<float>(beta1_)), ops::MakeAttr("beta2", static_cast<float>(beta2_)),
            ops::MakeAttr("epsilon", static_cast<float>(epsilon_)), ops::MakeAttr("lazy_mode", lazy_mode_)},
           kRoleOptimize, param, grad);
      }
    }
    // Check and infer the new ops like any others.
    for (int i = first_new_; i < main_->num_ops(); ++i) {
      std::vector<Error> errors;
      ops::CheckOp(main_->op(i), *registry_, {}, errors);
      PC_RETURN_IF_ERROR(ops::ToStatus(std::move(errors)));
      PC_RETURN_IF_ERROR(ops::InferShapeAtCompileTime(main_->op(i), *registry_));
    }
    return true;
  }

 private:
  using Slots = std::vector<std::pair<std::string, std::vector<std::string>>>;

  void Op(const std::string& type, const Slots& ins, const Slots& outs, const std::vector<pb::OpDesc::Attr>& attrs,
          int role, const std::string& param, const std::string& grad) {
    pb::OpDesc* op = main_->AppendOp();
    op->set_type(type);
    for (const auto& [slot, args] : ins) ops::AddInput(*op, slot, args);
    for (const auto& [slot, args] : outs) ops::AddOutput(*op, slot, args);
    for (const auto& a : attrs) *op->add_attrs() = a;
    *op->add_attrs() = ops::MakeAttr("op_role", role);
    if (!param.empty()) *op->add_attrs() = ops::MakeAttr("op_role_var", std::vector<std::string>{param, grad});
  }

  /// A temporary of the main program.
  std::string Temp(const std::string& name, const Dims& dims, DType dtype) {
    ir::SetVarShape(main_->AddVar(name), dims, dtype);
    return name;
  }

  /// Optimizer state: persistable in the main program, filled with `value` by the startup program.
  std::string Persistable(const std::string& name, const Dims& dims, DType dtype, double value) {
    pb::VarDesc* v = main_->AddVar(name);
    ir::SetVarShape(v, dims, dtype);
    v->set_persistable(true);
    v->set_stop_gradient(true);
    *startup_->AddVar(name) = *v;
    pb::OpDesc* init = startup_->AppendOp();
    init->set_type("fill_constant");
    ops::AddOutput(*init, "Out", {name});
    *init->add_attrs() = ops::MakeAttr("shape", std::vector<int64_t>(dims.begin(), dims.end()));
    *init->add_attrs() = ops::MakeAttr("dtype", DTypeToProto(dtype));
    *init->add_attrs() = ops::MakeAttr("value", static_cast<float>(value));
    return name;
  }

  /// PaddlePaddle's ClipGradByGlobalNorm: g *= clip / max(clip, sqrt(sum_i |g_i|^2)).
  void ClipByGlobalNorm(std::vector<std::pair<std::string, std::string>>& pairs) {
    std::vector<std::string> squares;
    for (const auto& [param, grad] : pairs) {
      std::string sq = Temp(grad + "@SQUARED_NORM", {1}, DType::kFloat32);
      Op("squared_l2_norm", {{"X", {grad}}}, {{"Out", {sq}}}, {}, kRoleOptimize, param, grad);
      squares.push_back(sq);
    }
    std::string total = Temp("global_norm@SQUARED", {1}, DType::kFloat32);
    Op("sum", {{"X", squares}}, {{"Out", {total}}}, {}, kRoleOptimize, "", "");
    std::string norm = Temp("global_norm", {1}, DType::kFloat32);
    Op("sqrt", {{"X", {total}}}, {{"Out", {norm}}}, {}, kRoleOptimize, "", "");
    std::string clip = Temp("global_norm@CLIP", {1}, DType::kFloat32);
    Op("fill_constant", {}, {{"Out", {clip}}},
       {ops::MakeAttr("shape", std::vector<int64_t>{1}), ops::MakeAttr("value", static_cast<float>(clip_norm_)),
        ops::MakeAttr("dtype", DTypeToProto(DType::kFloat32))},
       kRoleOptimize, "", "");
    std::string denom = Temp("global_norm@MAX", {1}, DType::kFloat32);
    Op("elementwise_max", {{"X", {norm}}, {"Y", {clip}}}, {{"Out", {denom}}}, {}, kRoleOptimize, "", "");
    std::string factor = Temp("global_norm@FACTOR", {1}, DType::kFloat32);
    Op("elementwise_div", {{"X", {clip}}, {"Y", {denom}}}, {{"Out", {factor}}}, {}, kRoleOptimize, "", "");
    for (auto& [param, grad] : pairs) {
      const pb::VarDesc* g = main_->FindVar(grad);
      auto dims = g ? ir::VarDims(*g) : StatusOr<Dims>(Dims());
      std::string clipped = Temp(grad + "@CLIP", dims.ok() ? *dims : Dims(), g ? ir::VarDType(*g) : DType::kFloat32);
      Op("elementwise_mul", {{"X", {grad}}, {"Y", {factor}}}, {{"Out", {clipped}}}, {}, kRoleOptimize, param, grad);
      grad = clipped;
    }
  }

  std::string type_;
  bool lazy_mode_ = false;
  double lr_ = 0.01, mu_ = 0.9, beta1_ = 0.9, beta2_ = 0.999, epsilon_ = 1e-8, weight_decay_ = 0, clip_norm_ = 0;
  bool nesterov_ = false;
  ir::Block* main_ = nullptr;
  ir::Block* startup_ = nullptr;
  const ops::OpRegistry* registry_ = nullptr;
  int first_new_ = 0;
};

}  // namespace

std::unique_ptr<Pass> CreateOptimizerPass() { return std::make_unique<OptimizerPass>(); }

}  // namespace paddlec::passes
