// Pass "init-params": gives every parameter an initializer op in the startup program.
//
// Requires: validate, infer-shape (parameters have dims and dtypes).
// Guarantees: every persistable tensor of the main program's global block that is read before
// any op writes it (a parameter, a running statistic, optimizer state) has exactly one initializer
// in the startup program, unless the startup program already writes it (e.g. a PaddlePaddle
// startup program passed with --startup). The initializer comes from the variable's `initializer`
// attribute when set, else from how the main program uses it:
//   weights (mul/matmul Y, conv Filter, embedding W, or rank >= 2): Xavier-uniform,
//     limit sqrt(6 / (fan_in + fan_out)), fans from the dims ([in, out]; [O, I, kh, kw] filters);
//   batch_norm / layer_norm Scale and batch_norm Variance: ones;
//   biases, batch_norm Mean and everything else of rank <= 1: zeros.
// The `initializer` attribute (a VarDesc STRING attr) takes "zeros", "ones", "constant:V",
// "uniform:LO:HI", "normal:MEAN:STD", "xavier_uniform" or "xavier_normal".
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "paddlec/ops/attrs.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

namespace pb = ::paddle::framework::proto;

enum class Role { kWeight, kOnes, kZeros };

/// How the main program uses a parameter decides its default initializer: the first use of each
/// variable as an op input, computed once for the whole block.
class Roles {
 public:
  explicit Roles(ir::Block& block) {
    for (const auto& op : block.desc().ops())
      for (const auto& slot : op.inputs())
        for (const auto& a : slot.arguments()) {
          Role r;
          if (Classify(op.type(), slot.parameter(), &r)) roles_.emplace(a, r);  // first use wins
        }
  }
  Role Of(std::string_view name, const Dims& dims) const {
    auto it = roles_.find(name);
    if (it != roles_.end()) return it->second;
    return dims.rank() >= 2 ? Role::kWeight : Role::kZeros;
  }

 private:
  static bool Classify(const std::string& t, const std::string& s, Role* r) {
    if ((t == "mul" || t == "matmul_v2" || t == "matmul") && s == "Y") return *r = Role::kWeight, true;
    if ((t == "conv2d" || t == "depthwise_conv2d") && s == "Filter") return *r = Role::kWeight, true;
    if ((t == "lookup_table_v2" || t == "lookup_table") && s == "W") return *r = Role::kWeight, true;
    if ((t == "batch_norm" || t == "layer_norm") && s == "Scale") return *r = Role::kOnes, true;
    if (t == "batch_norm" && s == "Variance") return *r = Role::kOnes, true;
    if ((t == "batch_norm" || t == "layer_norm") && (s == "Bias" || s == "Mean")) return *r = Role::kZeros, true;
    if (t.starts_with("elementwise_") && s == "Y") return *r = Role::kZeros, true;
    return false;
  }
  std::unordered_map<std::string_view, Role> roles_;  // views into the block's op descs
};

/// Fan-in and fan-out of a weight: [in, out] matrices, [O, I, k...] convolution filters.
std::pair<double, double> Fans(const Dims& d) {
  if (d.rank() < 2) return {static_cast<double>(d.Numel()), static_cast<double>(d.Numel())};
  if (d.rank() == 2) return {static_cast<double>(d[0]), static_cast<double>(d[1])};
  double receptive = static_cast<double>(d.Product(2, d.rank()));
  return {d[1] * receptive, d[0] * receptive};
}

void SetCommon(pb::OpDesc* op, const std::string& var, const Dims& dims, DType dtype) {
  auto* out = op->add_outputs();
  out->set_parameter("Out");
  out->add_arguments(var);
  *op->add_attrs() = ops::MakeAttr("shape", std::vector<int64_t>(dims.begin(), dims.end()));
  *op->add_attrs() = ops::MakeAttr("dtype", DTypeToProto(dtype));
}

void Constant(pb::OpDesc* op, const std::string& var, const Dims& dims, DType dtype, float value) {
  op->set_type("fill_constant");
  SetCommon(op, var, dims, dtype);
  *op->add_attrs() = ops::MakeAttr("value", value);
}

void Uniform(pb::OpDesc* op, const std::string& var, const Dims& dims, DType dtype, float lo, float hi) {
  op->set_type("uniform_random");
  SetCommon(op, var, dims, dtype);
  *op->add_attrs() = ops::MakeAttr("min", lo);
  *op->add_attrs() = ops::MakeAttr("max", hi);
}

void Normal(pb::OpDesc* op, const std::string& var, const Dims& dims, DType dtype, float mean, float std) {
  op->set_type("gaussian_random");
  SetCommon(op, var, dims, dtype);
  *op->add_attrs() = ops::MakeAttr("mean", mean);
  *op->add_attrs() = ops::MakeAttr("std", std);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

/// Builds the initializer named by an `initializer` attribute.
Status FromSpec(const std::string& spec, pb::OpDesc* op, const std::string& var, const Dims& dims, DType dtype) {
  std::vector<std::string> parts = Split(spec, ':');
  auto number = [&](size_t i, float* v) {
    if (i >= parts.size()) return false;
    char* end = nullptr;
    *v = std::strtof(parts[i].c_str(), &end);
    return !parts[i].empty() && end == parts[i].c_str() + parts[i].size();
  };
  auto [fan_in, fan_out] = Fans(dims);
  float a = 0, b = 0;
  const std::string& kind = parts[0];
  if (kind == "zeros" && parts.size() == 1) Constant(op, var, dims, dtype, 0.f);
  else if (kind == "ones" && parts.size() == 1) Constant(op, var, dims, dtype, 1.f);
  else if (kind == "constant" && parts.size() == 2 && number(1, &a)) Constant(op, var, dims, dtype, a);
  else if (kind == "uniform" && parts.size() == 3 && number(1, &a) && number(2, &b) && a <= b)
    Uniform(op, var, dims, dtype, a, b);
  else if (kind == "normal" && parts.size() == 3 && number(1, &a) && number(2, &b) && b >= 0)
    Normal(op, var, dims, dtype, a, b);
  else if (kind == "xavier_uniform" && parts.size() == 1) {
    float limit = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
    Uniform(op, var, dims, dtype, -limit, limit);
  } else if (kind == "xavier_normal" && parts.size() == 1) {
    Normal(op, var, dims, dtype, 0.f, static_cast<float>(std::sqrt(2.0 / (fan_in + fan_out))));
  } else {
    return MakeError(ErrorCode::kValidation, "variable '{}' has an invalid initializer '{}'", var, spec)
        .Note("expected zeros, ones, constant:V, uniform:LO:HI, normal:MEAN:STD, xavier_uniform or xavier_normal");
  }
  return Status::OK();
}

class InitParamsPass final : public Pass {
 public:
  std::string_view Name() const override { return "init-params"; }
  std::string_view Summary() const override {
    return "add an initializer op to the startup program for every parameter";
  }

  StatusOr<bool> Run(ir::Module& module, PassContext&) override {
    ir::Block& main = module.main().global_block();
    ir::Block& startup = module.startup().global_block();
    // Views into the programs' descs: this pass only appends to the startup block, which leaves
    // existing messages (and their strings) where they are.
    std::unordered_set<std::string_view> initialized;
    for (const auto& op : startup.desc().ops())
      for (const auto& slot : op.outputs())
        for (const auto& a : slot.arguments()) initialized.insert(a);

    // Persistable variables read before any op of the main program writes them.
    std::unordered_set<std::string_view> written, needed;
    for (const auto& op : main.desc().ops()) {
      for (const auto& slot : op.inputs())
        for (const auto& a : slot.arguments())
          if (!written.count(a)) needed.insert(a);
      for (const auto& slot : op.outputs())
        for (const auto& a : slot.arguments()) written.insert(a);
    }

    Roles roles(main);
    bool changed = false;
    for (int i = 0; i < main.num_vars(); ++i) {
      const pb::VarDesc& v = main.desc().vars(i);
      if (!v.persistable() || !ir::IsTensorVar(v) || !needed.count(v.name()) || initialized.count(v.name()))
        continue;
      PC_ASSIGN_OR_RETURN(Dims dims, ir::VarDims(v));
      if (!dims.IsFullyKnown())
        return MakeError(ErrorCode::kValidation, "parameter '{}' has shape {}; parameters need known dims",
                         v.name(), dims.ToString())
            .At({.file = module.main().source_map().file(), .block = 0, .var = v.name()});
      DType dtype = ir::VarDType(v);
      pb::VarDesc* decl = startup.AddVar(v.name());
      *decl = v;
      pb::OpDesc* op = startup.AppendOp();
      std::string spec;
      for (const auto& a : v.attrs())
        if (a.name() == "initializer") spec = a.s();
      if (!spec.empty()) {
        PC_RETURN_IF_ERROR(FromSpec(spec, op, v.name(), dims, dtype));
      } else {
        switch (roles.Of(v.name(), dims)) {
          case Role::kWeight: {
            auto [fan_in, fan_out] = Fans(dims);
            float limit = static_cast<float>(std::sqrt(6.0 / std::max(1.0, fan_in + fan_out)));
            Uniform(op, v.name(), dims, dtype, -limit, limit);
            break;
          }
          case Role::kOnes: Constant(op, v.name(), dims, dtype, 1.f); break;
          case Role::kZeros: Constant(op, v.name(), dims, dtype, 0.f); break;
        }
      }
      initialized.insert(v.name());
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateInitParamsPass() { return std::make_unique<InitParamsPass>(); }

}  // namespace paddlec::passes
