// sgd, momentum and adam run in place for several steps against double-precision references written
// here, plus out-of-place runs through the op harness and shape errors.
#include <cmath>
#include <cstring>

#include "paddlec/exec/executor.h"
#include "paddlec/ops/grad_maker.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

namespace pb = ::paddle::framework::proto;

/// One optimizer op run repeatedly on one scope with its outputs bound to its inputs' variables
/// (ParamOut = Param, ...), as the optimizer pass emits it. OpTest cannot express that binding.
class InPlaceRun {
 public:
  explicit InPlaceRun(const std::string& type) { op_.set_type(type); }

  /// Binds input `slot` to variable `var`, declared and initialized from `value` (once per variable).
  InPlaceRun& In(const std::string& slot, const std::string& var, const Tensor& value) {
    ops::AddInput(op_, slot, {var});
    if (!values_.count(var)) {
      order_.push_back(var);
      values_[var] = value;
    }
    return *this;
  }
  InPlaceRun& Out(const std::string& slot, const std::string& var) {
    ops::AddOutput(op_, slot, {var});
    return *this;
  }
  template <class T>
  InPlaceRun& Attr(const std::string& name, const T& value) {
    *op_.add_attrs() = ops::MakeAttr<T>(name, value);
    return *this;
  }

  /// Compiles (validate, infer-shape) and builds the plan on a CPU executor with `threads` threads.
  Status Build(int threads = 2) {
    paddlec::proto::CompiledProgram cp;
    pb::BlockDesc* block = cp.mutable_main_program()->add_blocks();
    block->set_idx(0);
    block->set_parent_idx(-1);
    for (const std::string& name : order_) {
      pb::VarDesc* v = block->add_vars();
      v->set_name(name);
      v->set_persistable(true);
      ir::SetVarShape(v, values_[name].dims(), values_[name].dtype());
    }
    *block->add_ops() = op_;
    PC_ASSIGN_OR_RETURN(module_, ir::Module::Create(std::move(cp)));
    passes::PassManager pm;
    PC_RETURN_IF_ERROR(pm.AddPipeline("validate,infer-shape"));
    passes::PassContext pctx{ops::GlobalOpRegistry()};
    PC_RETURN_IF_ERROR(pm.Run(*module_, pctx));
    PC_ASSIGN_OR_RETURN(exec_, exec::Executor::Create(Place::CPU(), {.num_threads = threads}));
    for (const std::string& name : order_)
      PC_RETURN_IF_ERROR(exec_->device().CopyFromHost(values_[name], scope_.Var(name).tensor()));
    PC_ASSIGN_OR_RETURN(plan_, exec_->Prepare(module_->main().global_block(), scope_));
    return Status::OK();
  }

  Status Step() { return plan_->Run(); }
  Tensor& Var(const std::string& name) { return scope_.FindLocal(name)->tensor(); }
  /// Overwrites a variable's values in place (its buffer stays the one the plan bound).
  void Assign(const std::string& name, const Tensor& value) {
    Tensor& t = Var(name);
    REQUIRE(t.dims() == value.dims());
    REQUIRE(t.dtype() == value.dtype());
    std::memcpy(t.raw_data(), value.raw_data(), value.nbytes());
  }

 private:
  pb::OpDesc op_;
  std::vector<std::string> order_;
  std::map<std::string, Tensor> values_;
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<exec::Executor> exec_;
  runtime::Scope scope_;
  std::unique_ptr<exec::Plan> plan_;
};

Tensor Zeros(const Dims& d, DType dt) { return Cast(FullTensor<double>(d, 0.0), dt); }
/// A double reference rounded to the tensor dtype it is compared with.
Tensor AsTensor(const Dims& d, const std::vector<double>& v, DType dt) { return Cast(MakeTensor<double>(d, v), dt); }
Tensor Scalar(double v, DType dt) { return Cast(MakeTensor<double>({1}, {v}), dt); }
/// The value a float attribute holds (attributes are float32).
double F(double v) { return static_cast<float>(v); }
/// A value rounded to the precision of dt, as the kernel stores it. Done through a tensor cast: GCC 12.2's
/// SLP vectorizer drops the rounding of `dt == kFloat32 ? (float)v : v` when two such updates sit side
/// by side (the beta powers), which made this reference wrong at -O2 and above.
double Round(double v, DType dt) { return ToDoubles(Scalar(v, dt))[0]; }

Tolerance TolFor(DType dt) { return dt == DType::kFloat32 ? Tolerance{1e-6, 1e-5} : Tolerance{1e-13, 1e-12}; }

const Dims kSizes[] = {{1}, {7}, {3, 513}, {100003}};  // the last one splits across two threads

// ---- sgd --------------------------------------------------------------------------------------

TEST_CASE("sgd updates the parameter in place over several steps") {
  for (DType dt : {DType::kFloat32, DType::kFloat64})
    for (const Dims& d : kSizes) {
      CAPTURE(DTypeName(dt));
      CAPTURE(d.ToString());
      Tensor w0 = RandomTensor(dt, d, 1);
      InPlaceRun run("sgd");
      // float64 parameters with a float32 learning rate, as PaddlePaddle's default LR variable is.
      run.In("Param", "w", w0)
          .In("LearningRate", "lr", Scalar(0.1, DType::kFloat32))
          .In("Grad", "w@GRAD", Zeros(d, dt));
      run.Out("ParamOut", "w");
      REQUIRE_OK(run.Build());
      std::vector<double> w = ToDoubles(w0);
      for (int step = 0; step < 3; ++step) {
        Tensor g = RandomTensor(dt, d, 10 + step);
        const double lr = F(0.1 / (step + 1));  // a schedule: the kernel must read the rate every run
        run.Assign("w@GRAD", g);
        run.Assign("lr", Scalar(lr, DType::kFloat32));
        REQUIRE_OK(run.Step());
        std::vector<double> gv = ToDoubles(g);
        for (size_t i = 0; i < w.size(); ++i) w[i] -= lr * gv[i];
        ExpectClose(run.Var("w"), AsTensor(d, w, dt), TolFor(dt), fmt::format("w after step {}", step));
      }
    }
}

TEST_CASE("sgd with multi_precision updates the master copy and mirrors it into Param") {
  const Dims d{5, 7};
  Tensor master0 = RandomTensor(DType::kFloat32, d, 2);
  InPlaceRun run("sgd");
  run.In("Param", "w", Zeros(d, DType::kFloat32)).In("LearningRate", "lr", Scalar(0.5, DType::kFloat32));
  run.In("Grad", "w@GRAD", Zeros(d, DType::kFloat32)).In("MasterParam", "w_master", master0);
  run.Out("ParamOut", "w").Out("MasterParamOut", "w_master").Attr("multi_precision", true);
  REQUIRE_OK(run.Build());
  std::vector<double> m = ToDoubles(master0);
  for (int step = 0; step < 2; ++step) {
    Tensor g = RandomTensor(DType::kFloat32, d, 20 + step);
    run.Assign("w@GRAD", g);
    REQUIRE_OK(run.Step());
    std::vector<double> gv = ToDoubles(g);
    for (size_t i = 0; i < m.size(); ++i) m[i] -= 0.5 * gv[i];
    ExpectClose(run.Var("w_master"), AsTensor(d, m, DType::kFloat32), {1e-6, 1e-6}, "master");
    ExpectClose(run.Var("w"), AsTensor(d, m, DType::kFloat32), {1e-6, 1e-6}, "param mirrors the master");
  }
}

TEST_CASE("sgd writes a separate ParamOut when not bound in place") {
  Tensor w = RandomTensor(DType::kFloat64, {7, 3}, 3), g = RandomTensor(DType::kFloat64, {7, 3}, 4);
  OpTest t("sgd");
  t.Input("Param", w).Input("LearningRate", Scalar(0.25, DType::kFloat64)).Input("Grad", g).Output("ParamOut");
  REQUIRE_OK(t.Run());
  std::vector<double> wv = ToDoubles(w), gv = ToDoubles(g);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] -= 0.25 * gv[i];
  t.ExpectOutput("ParamOut", MakeTensor<double>({7, 3}, wv), {1e-15, 1e-15});
}

// ---- momentum ---------------------------------------------------------------------------------

struct MomentumCase {
  const char* name;
  bool nesterov = false;
  bool l2 = false;
  double coeff = 0;
  double rescale = 1;
  double mu = 0.9;
};

TEST_CASE("momentum plain, Nesterov, l2_decay and rescale_grad over several steps") {
  const MomentumCase cases[] = {
      {.name = "plain"},
      {.name = "nesterov", .nesterov = true},
      {.name = "l2_decay", .l2 = true, .coeff = 0.05},
      {.name = "nesterov + l2_decay + rescale_grad",
       .nesterov = true,
       .l2 = true,
       .coeff = 0.01,
       .rescale = 0.25,
       .mu = 0.5},
  };
  for (const MomentumCase& c : cases)
    for (DType dt : {DType::kFloat32, DType::kFloat64})
      for (const Dims& d : {Dims{7}, Dims{3, 513}, Dims{100003}}) {
        CAPTURE(c.name);
        CAPTURE(DTypeName(dt));
        CAPTURE(d.ToString());
        Tensor w0 = RandomTensor(dt, d, 30), v0 = RandomTensor(dt, d, 31, -0.1, 0.1);
        InPlaceRun run("momentum");
        run.In("Param", "w", w0).In("Grad", "w@GRAD", Zeros(d, dt)).In("Velocity", "w_velocity_0", v0);
        run.In("LearningRate", "lr", Scalar(0.05, dt));
        run.Out("ParamOut", "w").Out("VelocityOut", "w_velocity_0");
        run.Attr("mu", static_cast<float>(c.mu));  // required: PaddlePaddle gives it no default
        if (c.nesterov) run.Attr("use_nesterov", true);
        if (c.l2) run.Attr("regularization_method", std::string("l2_decay"));
        if (c.coeff != 0) run.Attr("regularization_coeff", static_cast<float>(c.coeff));
        if (c.rescale != 1) run.Attr("rescale_grad", static_cast<float>(c.rescale));
        REQUIRE_OK(run.Build());
        std::vector<double> w = ToDoubles(w0), v = ToDoubles(v0);
        const double mu = F(c.mu), coeff = F(c.coeff), rescale = F(c.rescale);
        for (int step = 0; step < 4; ++step) {
          Tensor g = RandomTensor(dt, d, 40 + step);
          const double lr = Round(0.05 / (step + 1), dt);  // a schedule, read every run
          run.Assign("w@GRAD", g);
          run.Assign("lr", Scalar(lr, dt));
          REQUIRE_OK(run.Step());
          std::vector<double> gv = ToDoubles(g);
          for (size_t i = 0; i < w.size(); ++i) {
            const double gi = rescale * gv[i] + (c.l2 ? coeff * w[i] : 0.0);
            v[i] = mu * v[i] + gi;
            w[i] -= c.nesterov ? lr * (gi + mu * v[i]) : lr * v[i];
          }
          ExpectClose(run.Var("w_velocity_0"), AsTensor(d, v, dt), TolFor(dt), fmt::format("velocity step {}", step));
          ExpectClose(run.Var("w"), AsTensor(d, w, dt), TolFor(dt), fmt::format("param step {}", step));
        }
      }
}

TEST_CASE("momentum writes separate outputs when not bound in place") {
  // Velocity and VelocityOut are different buffers here, so Nesterov must read the new velocity.
  const Dims d{4, 9};
  const DType dt = DType::kFloat64;
  Tensor w = RandomTensor(dt, d, 35), g = RandomTensor(dt, d, 36), v = RandomTensor(dt, d, 37, -0.1, 0.1);
  OpTest t("momentum");
  t.Input("Param", w).Input("Grad", g).Input("Velocity", v).Input("LearningRate", Scalar(0.05, dt));
  t.Attr("mu", 0.9f).Attr("use_nesterov", true).Output("ParamOut").Output("VelocityOut");
  REQUIRE_OK(t.Run());
  std::vector<double> wv = ToDoubles(w), gv = ToDoubles(g), vv = ToDoubles(v);
  const double mu = F(0.9);
  for (size_t i = 0; i < wv.size(); ++i) {
    vv[i] = mu * vv[i] + gv[i];
    wv[i] -= 0.05 * (gv[i] + mu * vv[i]);
  }
  t.ExpectOutput("VelocityOut", MakeTensor<double>(d, vv), TolFor(dt));
  t.ExpectOutput("ParamOut", MakeTensor<double>(d, wv), TolFor(dt));
}

// ---- adam -------------------------------------------------------------------------------------

/// Adam in double (PaddlePaddle's formula); beta powers are stored in the kernel's dtype.
struct RefAdam {
  std::vector<double> w, m1, m2;
  double b1pow, b2pow;
  void Step(const std::vector<double>& g, double lr, double b1, double b2, double eps, DType pow_dtype,
            bool advance_pows = true) {
    const double lr_t = lr * std::sqrt(1 - b2pow) / (1 - b1pow), eps_t = eps * std::sqrt(1 - b2pow);
    for (size_t i = 0; i < w.size(); ++i) {
      m1[i] = b1 * m1[i] + (1 - b1) * g[i];
      m2[i] = b2 * m2[i] + (1 - b2) * g[i] * g[i];
      w[i] -= lr_t * m1[i] / (std::sqrt(m2[i]) + eps_t);
    }
    if (advance_pows) {
      b1pow = Round(b1pow * b1, pow_dtype);
      b2pow = Round(b2pow * b2, pow_dtype);
    }
  }
};

/// An in-place adam run with PaddlePaddle's accumulator names and initial values (pows = betas).
InPlaceRun& AdamRun(InPlaceRun& run, const Dims& d, DType dt, const RefAdam& ref, double lr) {
  run.In("Param", "w", AsTensor(d, ref.w, dt)).In("Grad", "w@GRAD", Zeros(d, dt));
  run.In("LearningRate", "lr", Scalar(lr, dt));
  run.In("Moment1", "w_moment1_0", AsTensor(d, ref.m1, dt)).In("Moment2", "w_moment2_0", AsTensor(d, ref.m2, dt));
  run.In("Beta1Pow", "w_beta1_pow_acc_0", Scalar(ref.b1pow, dt));
  run.In("Beta2Pow", "w_beta2_pow_acc_0", Scalar(ref.b2pow, dt));
  run.Out("ParamOut", "w").Out("Moment1Out", "w_moment1_0").Out("Moment2Out", "w_moment2_0");
  run.Out("Beta1PowOut", "w_beta1_pow_acc_0").Out("Beta2PowOut", "w_beta2_pow_acc_0");
  return run;
}

void ExpectAdamState(InPlaceRun& run, const RefAdam& ref, const Dims& d, DType dt, int step) {
  ExpectClose(run.Var("w"), AsTensor(d, ref.w, dt), TolFor(dt), fmt::format("param step {}", step));
  ExpectClose(run.Var("w_moment1_0"), AsTensor(d, ref.m1, dt), TolFor(dt), fmt::format("moment1 step {}", step));
  ExpectClose(run.Var("w_moment2_0"), AsTensor(d, ref.m2, dt), TolFor(dt), fmt::format("moment2 step {}", step));
  ExpectClose(run.Var("w_beta1_pow_acc_0"), Scalar(ref.b1pow, dt), {0, 0}, fmt::format("beta1 pow step {}", step));
  ExpectClose(run.Var("w_beta2_pow_acc_0"), Scalar(ref.b2pow, dt), {0, 0}, fmt::format("beta2 pow step {}", step));
}

/// A reference starting state: random parameter and moments (second moments >= 0), pows = betas.
RefAdam InitialAdam(const Dims& d, DType dt, double b1, double b2) {
  return {ToDoubles(RandomTensor(dt, d, 50)), ToDoubles(RandomTensor(dt, d, 51, -0.1, 0.1)),
          ToDoubles(RandomTensor(dt, d, 52, 0, 0.01)), Round(b1, dt), Round(b2, dt)};
}

TEST_CASE("adam over several steps advances the beta powers") {
  for (DType dt : {DType::kFloat32, DType::kFloat64})
    for (const Dims& d : kSizes) {
      CAPTURE(DTypeName(dt));
      CAPTURE(d.ToString());
      const double b1 = F(0.9), b2 = F(0.999), eps = F(1e-8), lr = Round(0.01, dt);
      RefAdam ref = InitialAdam(d, dt, b1, b2);
      InPlaceRun run("adam");
      REQUIRE_OK(AdamRun(run, d, dt, ref, 0.01).Build());
      for (int step = 0; step < 5; ++step) {
        Tensor g = RandomTensor(dt, d, 60 + step);
        run.Assign("w@GRAD", g);
        REQUIRE_OK(run.Step());
        ref.Step(ToDoubles(g), lr, b1, b2, eps, dt);
        ExpectAdamState(run, ref, d, dt, step);
      }
      // Five steps after initialization at beta: beta^6.
      CHECK(ToDoubles(run.Var("w_beta1_pow_acc_0"))[0] == doctest::Approx(std::pow(b1, 6)).epsilon(1e-6));
    }
}

TEST_CASE("adam with use_global_beta_pow leaves the powers alone") {
  const Dims d{4, 7};
  const DType dt = DType::kFloat32;
  const double b1 = F(0.9), b2 = F(0.999);
  RefAdam ref = InitialAdam(d, dt, b1, b2);
  ref.b1pow = Round(0.5, dt);  // e.g. advanced elsewhere
  ref.b2pow = Round(0.75, dt);
  InPlaceRun run("adam");
  AdamRun(run, d, dt, ref, 0.01).Attr("use_global_beta_pow", true);
  REQUIRE_OK(run.Build());
  for (int step = 0; step < 3; ++step) {
    Tensor g = RandomTensor(dt, d, 70 + step);
    run.Assign("w@GRAD", g);
    REQUIRE_OK(run.Step());
    ref.Step(ToDoubles(g), F(0.01), b1, b2, F(1e-8), dt, /*advance_pows=*/false);
    ExpectAdamState(run, ref, d, dt, step);
  }
}

TEST_CASE("adam reads Beta1Tensor, Beta2Tensor and EpsilonTensor over the attributes") {
  const Dims d{513};
  const DType dt = DType::kFloat64;
  const double b1 = 0.8, b2 = 0.99, eps = 1e-3;  // epsilon large enough to matter
  RefAdam ref = InitialAdam(d, dt, b1, b2);
  InPlaceRun run("adam");
  AdamRun(run, d, dt, ref, 0.01).In("Beta1Tensor", "beta1", Scalar(b1, DType::kFloat32));
  run.In("Beta2Tensor", "beta2", Scalar(b2, DType::kFloat32)).In("EpsilonTensor", "eps", Scalar(eps, DType::kFloat32));
  REQUIRE_OK(run.Build());
  for (int step = 0; step < 3; ++step) {
    Tensor g = RandomTensor(dt, d, 80 + step);
    run.Assign("w@GRAD", g);
    REQUIRE_OK(run.Step());
    ref.Step(ToDoubles(g), 0.01, F(b1), F(b2), F(eps), dt);
    ExpectAdamState(run, ref, d, dt, step);
  }
}

TEST_CASE("adam with SkipUpdate true keeps every state, false updates") {
  const Dims d{9};
  const DType dt = DType::kFloat32;
  RefAdam ref = InitialAdam(d, dt, F(0.9), F(0.999));
  InPlaceRun run("adam");
  AdamRun(run, d, dt, ref, 0.01).In("SkipUpdate", "skip", MakeTensor<bool>({1}, {true}));
  REQUIRE_OK(run.Build());
  Tensor g = RandomTensor(dt, d, 90);
  run.Assign("w@GRAD", g);
  REQUIRE_OK(run.Step());
  ExpectAdamState(run, ref, d, dt, 0);
  run.Assign("skip", MakeTensor<bool>({1}, {false}));
  REQUIRE_OK(run.Step());
  ref.Step(ToDoubles(g), F(0.01), F(0.9), F(0.999), F(1e-8), dt);
  ExpectAdamState(run, ref, d, dt, 1);
}

TEST_CASE("adam with multi_precision updates the master copy") {
  const Dims d{6, 5};
  const DType dt = DType::kFloat32;
  RefAdam ref = InitialAdam(d, dt, F(0.9), F(0.999));
  InPlaceRun run("adam");
  AdamRun(run, d, dt, ref, 0.01).In("MasterParam", "w_master", AsTensor(d, ref.w, dt));
  run.Out("MasterParamOut", "w_master").Attr("multi_precision", true);
  REQUIRE_OK(run.Build());
  run.Assign("w", Zeros(d, dt));  // Param's own values must not matter
  Tensor g = RandomTensor(dt, d, 95);
  run.Assign("w@GRAD", g);
  REQUIRE_OK(run.Step());
  ref.Step(ToDoubles(g), F(0.01), F(0.9), F(0.999), F(1e-8), dt);
  ExpectAdamState(run, ref, d, dt, 0);
  ExpectClose(run.Var("w_master"), AsTensor(d, ref.w, dt), TolFor(dt), "master");
}

TEST_CASE("adam writes separate outputs when not bound in place") {
  const Dims d{3, 7};
  const DType dt = DType::kFloat64;
  RefAdam ref = InitialAdam(d, dt, 0.9, 0.999);
  Tensor g = RandomTensor(dt, d, 97);
  OpTest t("adam");
  t.Input("Param", AsTensor(d, ref.w, dt)).Input("Grad", g).Input("LearningRate", Scalar(0.01, dt));
  t.Input("Moment1", AsTensor(d, ref.m1, dt)).Input("Moment2", AsTensor(d, ref.m2, dt));
  t.Input("Beta1Pow", Scalar(F(0.9), dt)).Input("Beta2Pow", Scalar(F(0.999), dt)).Attr("beta1", 0.85f);
  t.Output("ParamOut").Output("Moment1Out").Output("Moment2Out").Output("Beta1PowOut").Output("Beta2PowOut");
  REQUIRE_OK(t.Run());
  ref.b1pow = F(0.9);
  ref.b2pow = F(0.999);
  ref.Step(ToDoubles(g), 0.01, F(0.85), F(0.999), F(1e-8), dt);
  t.ExpectOutput("ParamOut", AsTensor(d, ref.w, dt), TolFor(dt));
  t.ExpectOutput("Moment1Out", AsTensor(d, ref.m1, dt), TolFor(dt));
  t.ExpectOutput("Moment2Out", AsTensor(d, ref.m2, dt), TolFor(dt));
  t.ExpectOutput("Beta1PowOut", Scalar(ref.b1pow, dt), {0, 0});
  t.ExpectOutput("Beta2PowOut", Scalar(ref.b2pow, dt), {0, 0});
}

// ---- shape errors -----------------------------------------------------------------------------

struct ErrorCase {
  const char* op;
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::vector<std::string> outputs;
  std::vector<pb::OpDesc::Attr> attrs;
  const char* message;
};

TEST_CASE("optimizer shape errors name the slots and shapes") {
  const DType f32 = DType::kFloat32;
  auto w = [&](const Dims& d, DType dt = DType::kFloat32) { return Zeros(d, dt); };
  const Tensor lr = Scalar(0.1, f32);
  const std::vector<std::string> sgd_out{"ParamOut"}, mom_out{"ParamOut", "VelocityOut"};
  const std::vector<std::string> adam_out{"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"};
  auto adam_in = [&](Dims m2, DType m2_dtype, std::vector<std::pair<std::string, Tensor>> extra = {}) {
    std::vector<std::pair<std::string, Tensor>> in{{"Param", w({3, 4})},
                                                   {"Grad", w({3, 4})},
                                                   {"LearningRate", lr},
                                                   {"Moment1", w({3, 4})},
                                                   {"Moment2", w(m2, m2_dtype)},
                                                   {"Beta1Pow", Scalar(0.9, f32)},
                                                   {"Beta2Pow", Scalar(0.999, f32)}};
    in.insert(in.end(), extra.begin(), extra.end());
    return in;
  };
  const ErrorCase cases[] = {
      {"sgd",
       {{"Param", w({3, 4})}, {"LearningRate", lr}, {"Grad", w({4, 3})}},
       sgd_out,
       {},
       "Param has shape [3, 4] but Grad has shape [4, 3]: they must be equal"},
      {"sgd",
       {{"Param", w({3, 4})}, {"LearningRate", lr}, {"Grad", w({3, 4}, DType::kFloat64)}},
       sgd_out,
       {},
       "Grad is float64 but Param is float32: they must have one dtype"},
      {"sgd",
       {{"Param", w({3, 4})}, {"LearningRate", w({2})}, {"Grad", w({3, 4})}},
       sgd_out,
       {},
       "LearningRate has shape [2] but must hold one value ([1])"},
      {"sgd",
       {{"Param", w({3, 4})}, {"LearningRate", Scalar(1, DType::kInt64)}, {"Grad", w({3, 4})}},
       sgd_out,
       {},
       "LearningRate is int64 but must be float32 or float64"},
      {"sgd",
       {{"Param", w({3, 4})}, {"LearningRate", lr}, {"Grad", w({3, 4})}},
       sgd_out,
       {ops::MakeAttr("multi_precision", true)},
       "multi_precision is true but MasterParam is not bound: the update runs on that copy"},
      {"sgd",
       {{"Param", w({3, 4})}, {"LearningRate", lr}, {"Grad", w({3, 4})}, {"MasterParam", w({3, 4})}},
       sgd_out,
       {ops::MakeAttr("multi_precision", true)},
       "multi_precision is true but MasterParamOut is not bound: the updated copy would be lost"},
      {"momentum",
       {{"Param", w({3, 4})}, {"Grad", w({3, 4})}, {"Velocity", w({4})}, {"LearningRate", lr}},
       mom_out,
       {ops::MakeAttr("mu", 0.9f)},
       "Param has shape [3, 4] but Velocity has shape [4]: optimizer state must match its parameter"},
      {"momentum",
       {{"Param", w({3, 4})}, {"Grad", w({3, 4})}, {"Velocity", w({3, 4})}, {"LearningRate", lr}},
       mom_out,
       {ops::MakeAttr("mu", 0.9f), ops::MakeAttr("regularization_method", std::string("l1_decay"))},
       "attribute 'regularization_method' value 'l1_decay' is not allowed: expected one of '', 'l2_decay'"},
      {"momentum",
       {{"Param", w({3, 4})}, {"Grad", w({3, 4})}, {"Velocity", w({3, 4})}, {"LearningRate", lr}},
       mom_out,
       {},
       "missing required attribute 'mu' (FLOAT, The momentum coefficient; required, as in PaddlePaddle.)"},
      {"adam",
       adam_in({3, 4}, DType::kFloat64),
       adam_out,
       {},
       "Moment2 is float64 but Param is float32: they must have one dtype"},
      {"adam",
       adam_in({12}, f32),
       adam_out,
       {},
       "Param has shape [3, 4] but Moment2 has shape [12]: optimizer state must match its parameter"},
      {"adam",
       adam_in({3, 4}, f32, {{"Beta1Tensor", w({1, 2})}}),
       adam_out,
       {},
       "Beta1Tensor has shape [1, 2] but must hold one value ([1])"},
      {"adam",
       adam_in({3, 4}, f32, {{"SkipUpdate", Scalar(1, f32)}}),
       adam_out,
       {},
       "SkipUpdate is float32 but must be bool"},
      {"adam",
       adam_in({3, 4}, f32),
       adam_out,
       {ops::MakeAttr("beta1", 1.0f)},
       "beta1 is 1 but must lie in [0, 1): Adam's bias correction divides by 1 - beta1^t"},
  };
  for (const ErrorCase& c : cases) {
    CAPTURE(c.message);
    OpTest t(c.op);
    for (const auto& [slot, value] : c.inputs) t.Input(slot, value);
    for (const auto& o : c.outputs) t.Output(o);
    for (const auto& a : c.attrs) {
      if (a.type() == pb::BOOLEAN)
        t.Attr(a.name(), a.b());
      else if (a.type() == pb::FLOAT)
        t.Attr(a.name(), a.f());
      else
        t.Attr(a.name(), a.s());
    }
    Status st = t.Compile();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == c.message);
  }
}

TEST_CASE("adam beta1 = 1 is accepted when Beta1Tensor overrides it") {
  const Dims d{2};
  RefAdam ref = InitialAdam(d, DType::kFloat32, F(0.9), F(0.999));
  InPlaceRun run("adam");
  AdamRun(run, d, DType::kFloat32, ref, 0.01).In("Beta1Tensor", "beta1", Scalar(0.9, DType::kFloat32));
  run.Attr("beta1", 1.0f);
  REQUIRE_OK(run.Build());
  REQUIRE_OK(run.Step());
}

}  // namespace
}  // namespace paddlec::testing
