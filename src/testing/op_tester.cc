// The op test harness.
#include "testing/op_tester.h"

#include <cmath>
#include <cstring>
#include <random>
#include <unordered_set>

#include "paddlec/exec/executor.h"
#include "paddlec/io/npy.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"

namespace paddlec::testing {

namespace pb = ::paddle::framework::proto;

runtime::Allocator& HostAllocator() {
  static std::shared_ptr<runtime::Allocator> alloc = runtime::CpuCachingAllocator::Create();
  return *alloc;
}

template <class T>
Tensor MakeTensor(const Dims& dims, const std::vector<T>& values) {
  Tensor t(DTypeOf<T>(), dims);
  REQUIRE_MESSAGE(static_cast<int64_t>(values.size()) == t.numel(),
                  "MakeTensor: " << values.size() << " values for dims " << dims.ToString());
  REQUIRE(t.Allocate(HostAllocator()).ok());
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i];
  } else if (!values.empty()) {
    std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  }
  return t;
}

template <class T>
Tensor FullTensor(const Dims& dims, T value) {
  Tensor t(DTypeOf<T>(), dims);
  REQUIRE(t.Allocate(HostAllocator()).ok());
  std::fill(t.data<T>(), t.data<T>() + t.numel(), value);
  return t;
}

template <class T>
std::vector<T> ToVector(const Tensor& t) {
  REQUIRE_MESSAGE(t.dtype() == DTypeOf<T>(), "ToVector: tensor is " << DTypeName(t.dtype()));
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

#define PC_INSTANTIATE_(T)                                              \
  template Tensor MakeTensor<T>(const Dims&, const std::vector<T>&);   \
  template Tensor FullTensor<T>(const Dims&, T);                       \
  template std::vector<T> ToVector<T>(const Tensor&);
PC_INSTANTIATE_(float)
PC_INSTANTIATE_(double)
PC_INSTANTIATE_(int32_t)
PC_INSTANTIATE_(int64_t)
PC_INSTANTIATE_(uint8_t)
PC_INSTANTIATE_(int8_t)
PC_INSTANTIATE_(bool)
#undef PC_INSTANTIATE_

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  Status st = VisitDType(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<double>(p[i]);
  });
  REQUIRE_MESSAGE(st.ok(), "ToDoubles: unsupported dtype " << DTypeName(t.dtype()));
  return out;
}

Tensor Cast(const Tensor& t, DType to) {
  std::vector<double> v = ToDoubles(t);
  Tensor out(to, t.dims());
  REQUIRE(out.Allocate(HostAllocator()).ok());
  Status st = VisitDType(to, [&]<class T>() {
    for (size_t i = 0; i < v.size(); ++i) out.data<T>()[i] = static_cast<T>(v[i]);
  });
  REQUIRE(st.ok());
  out.mutable_lod() = t.lod();
  return out;
}

Tensor Reblock(const Tensor& t, int64_t block, bool to_blocked) {
  const Dims& d = t.dims();
  REQUIRE(d.rank() == 4);
  REQUIRE(d[1] % block == 0);
  const int64_t n = d[0], c = d[1], hw = d[2] * d[3];
  std::vector<double> in = ToDoubles(t), out(in.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t plain = (i * c + ch) * hw + p;
        const int64_t blocked = ((i * (c / block) + ch / block) * hw + p) * block + ch % block;
        out[to_blocked ? blocked : plain] = in[to_blocked ? plain : blocked];
      }
  return Cast(MakeTensor<double>(d, out), t.dtype());
}

Tensor RandomTensor(DType dtype, const Dims& dims, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor out(dtype, dims);
  REQUIRE(out.Allocate(HostAllocator()).ok());
  Status st = VisitDType(dtype, [&]<class T>() {
    for (int64_t i = 0; i < out.numel(); ++i) out.data<T>()[i] = static_cast<T>(dist(rng));
  });
  REQUIRE(st.ok());
  return out;
}

Tensor LoadGolden(const std::string& relative_path) {
  auto t = io::ReadNpy(std::string(PADDLEC_SOURCE_DIR) + "/" + relative_path, HostAllocator());
  REQUIRE_MESSAGE(t.ok(), (t.ok() ? std::string() : t.error().Render()));
  return std::move(t).value();
}

void ExpectClose(const Tensor& actual, const Tensor& expected, Tolerance tol, const std::string& what) {
  INFO(what);
  REQUIRE_MESSAGE(actual.dims() == expected.dims(),
                  "dims " << actual.dims().ToString() << " != expected " << expected.dims().ToString());
  std::vector<double> a = ToDoubles(actual), e = ToDoubles(expected);
  int bad = 0;
  std::string report;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bool ok = a[i] == e[i] || (std::isnan(a[i]) && std::isnan(e[i])) ||
              std::fabs(a[i] - e[i]) <= tol.atol + tol.rtol * std::fabs(e[i]);
    if (!ok) {
      if (bad < 5) report += fmt::format("  [{}] actual {} expected {}\n", i, a[i], e[i]);
      worst = std::max(worst, std::fabs(a[i] - e[i]));
      ++bad;
    }
  }
  if (bad) FAIL_CHECK(fmt::format("{}: {} of {} elements differ (atol {}, rtol {}, worst abs diff {})\n{}", what, bad,
                                  a.size(), tol.atol, tol.rtol, worst, report));
}

// ---- OpTest ---------------------------------------------------------------------------------

namespace {

/// CPU always; the GPU when a CUDA device can be opened (reported once otherwise).
const std::vector<Place>& AvailablePlaces() {
  static std::vector<Place> places = [] {
    std::vector<Place> p{Place::CPU()};
    auto gpu = exec::Executor::Create(Place::CUDA(0));
    if (gpu.ok()) {
      p.push_back(Place::CUDA(0));
    } else if (std::getenv("PADDLEC_REQUIRE_GPU") != nullptr) {
      // Under the gpu label a missing GPU must fail, not quietly test the CPU alone.
      FAIL("PADDLEC_REQUIRE_GPU is set but no GPU can be used: " << gpu.error().message());
    } else {
      MESSAGE("GPU cases skipped: " << gpu.error().message());
    }
    return p;
  }();
  return places;
}

std::string VarName(const std::string& slot, int i, int count) {
  return count == 1 ? slot : fmt::format("{}_{}", slot, i);
}

}  // namespace

struct OpTest::Impl {
  struct In {
    std::string slot;
    std::vector<std::string> names;
    std::vector<Tensor> tensors;
    std::map<int, Dims> compile_dims;
  };
  struct Out {
    std::string slot;
    std::vector<std::string> names;
  };
  std::vector<In> inputs;
  std::vector<Out> outputs;
  std::unique_ptr<ir::Module> module;
  // Results per place, by variable name (host copies).
  std::vector<std::pair<Place, std::map<std::string, Tensor>>> results;

  In* FindIn(const std::string& slot) {
    for (auto& i : inputs)
      if (i.slot == slot) return &i;
    return nullptr;
  }
  const Out* FindOut(const std::string& slot) const {
    for (auto& o : outputs)
      if (o.slot == slot) return &o;
    return nullptr;
  }
};

OpTest::OpTest(std::string op_type) : impl_(std::make_unique<Impl>()), type_(std::move(op_type)) {}
OpTest::~OpTest() = default;

OpTest& OpTest::Input(const std::string& slot, Tensor t) { return Inputs(slot, {std::move(t)}); }

OpTest& OpTest::Inputs(const std::string& slot, std::vector<Tensor> ts) {
  Impl::In in{slot, {}, std::move(ts), {}};
  for (size_t i = 0; i < in.tensors.size(); ++i)
    in.names.push_back(VarName(slot, static_cast<int>(i), static_cast<int>(in.tensors.size())));
  impl_->inputs.push_back(std::move(in));
  return *this;
}

OpTest& OpTest::CompileDims(const std::string& slot, const Dims& dims, int i) {
  Impl::In* in = impl_->FindIn(slot);
  REQUIRE_MESSAGE(in != nullptr, "CompileDims before Input(" << slot << ")");
  in->compile_dims[i] = dims;
  return *this;
}

OpTest& OpTest::Output(const std::string& slot, int count) {
  Impl::Out out{slot, {}};
  for (int i = 0; i < count; ++i) out.names.push_back(VarName(slot, i, count));
  impl_->outputs.push_back(std::move(out));
  return *this;
}

static pb::OpDesc ForwardDesc(const std::string& type, const std::vector<pb::OpDesc::Attr>& attrs,
                              const std::vector<OpTest::GradCheck>*, const void* impl_ptr) {
  const auto* impl = static_cast<const OpTest::Impl*>(impl_ptr);
  pb::OpDesc op;
  op.set_type(type);
  for (const auto& in : impl->inputs) {
    auto* v = op.add_inputs();
    v->set_parameter(in.slot);
    for (const auto& n : in.names) v->add_arguments(n);
  }
  for (const auto& out : impl->outputs) {
    auto* v = op.add_outputs();
    v->set_parameter(out.slot);
    for (const auto& n : out.names) v->add_arguments(n);
  }
  for (const auto& a : attrs) *op.add_attrs() = a;
  return op;
}

static StatusOr<std::unique_ptr<ir::Module>> CompileOps(const OpTest::Impl& impl, const std::vector<pb::OpDesc>& ops,
                                                        const std::map<std::string, std::pair<Dims, DType>>& extra_vars,
                                                        std::optional<DType> float_as) {
  paddlec::proto::CompiledProgram cp;
  auto* block = cp.mutable_main_program()->add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  for (const auto& in : impl.inputs) {
    for (size_t i = 0; i < in.names.size(); ++i) {
      auto* v = block->add_vars();
      v->set_name(in.names[i]);
      auto it = in.compile_dims.find(static_cast<int>(i));
      Dims d = it != in.compile_dims.end() ? it->second : in.tensors[i].dims();
      DType t = in.tensors[i].dtype();
      if (float_as && IsFloating(t)) t = *float_as;
      ir::SetVarShape(v, d, t);
      // A sequence batch declares its nesting, as layers.data(lod_level=...) does.
      if (!in.tensors[i].lod().empty())
        v->mutable_type()->mutable_lod_tensor()->set_lod_level(static_cast<int>(in.tensors[i].lod().size()));
    }
  }
  for (const auto& [name, dt] : extra_vars) {
    auto* v = block->add_vars();
    v->set_name(name);
    ir::SetVarShape(v, dt.first, dt.second);
  }
  for (const auto& op : ops) *block->add_ops() = op;
  PC_ASSIGN_OR_RETURN(auto module, ir::Module::Create(std::move(cp)));
  passes::PassManager pm;
  PC_RETURN_IF_ERROR(pm.AddPipeline("validate,infer-shape"));
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  PC_RETURN_IF_ERROR(pm.Run(*module, ctx));
  return module;
}

/// Runs block 0 of `module` on `place` with `feeds`, returning host copies of `fetch`.
static StatusOr<std::map<std::string, Tensor>> Execute(ir::Module& module, Place place,
                                                       const std::map<std::string, Tensor>& feeds,
                                                       const std::vector<std::string>& fetch) {
  PC_ASSIGN_OR_RETURN(auto exec, exec::Executor::Create(place, {.num_threads = 1, .seed = 7}));
  runtime::Scope scope;
  for (const auto& [name, t] : feeds) PC_RETURN_IF_ERROR(exec->device().CopyFromHost(t, scope.Var(name).tensor()));
  PC_ASSIGN_OR_RETURN(auto plan, exec->Prepare(module.main().global_block(), scope));
  PC_RETURN_IF_ERROR(plan->Run());
  PC_RETURN_IF_ERROR(exec->device().Synchronize());
  std::map<std::string, Tensor> out;
  for (const auto& name : fetch) {
    runtime::Variable* v = scope.FindLocal(name);
    if (v == nullptr || !v->tensor().initialized())
      return MakeError(ErrorCode::kNotFound, "variable '{}' was not produced", name);
    Tensor host;
    PC_RETURN_IF_ERROR(exec->device().CopyToHost(v->tensor(), host, HostAllocator()));
    out[name] = std::move(host);
  }
  return out;
}

Status OpTest::Compile() {
  std::vector<pb::OpDesc> ops{ForwardDesc(type_, attrs_, nullptr, impl_.get())};
  PC_ASSIGN_OR_RETURN(impl_->module, CompileOps(*impl_, ops, {}, std::nullopt));
  return Status::OK();
}

std::string CompileError(OpTest& t) {
  Status st = t.Compile();
  REQUIRE_FALSE(st.ok());
  return st.error().message();
}

Status OpTest::Run() {
  PC_RETURN_IF_ERROR(Compile());
  std::map<std::string, Tensor> feeds;
  for (const auto& in : impl_->inputs)
    for (size_t i = 0; i < in.names.size(); ++i) feeds[in.names[i]] = in.tensors[i];
  std::vector<std::string> fetch;
  for (const auto& out : impl_->outputs)
    for (const auto& n : out.names) fetch.push_back(n);
  impl_->results.clear();
  for (Place place : AvailablePlaces()) {
    auto r = Execute(*impl_->module, place, feeds, fetch);
    if (!r.ok()) {
      Error e = std::move(r).status().TakeError();
      e.Note("while running on " + place.ToString());
      return e;
    }
    impl_->results.emplace_back(place, std::move(r).value());
  }
  // Compile-time shapes must agree with what the kernels produced.
  ir::Block& block = impl_->module->main().global_block();
  for (const auto& [name, t] : impl_->results.front().second) {
    const auto* v = block.FindVar(name);
    if (v == nullptr) continue;
    auto d = ir::VarDims(*v);
    // A SelectedRows holds some rows of the declared table: its height stands for the row count.
    Dims run_dims = t.dims();
    if (t.is_selected_rows() && run_dims.rank() > 0) run_dims[0] = t.height();
    if (d.ok() && !DimsMatch(*d, run_dims))
      return MakeError(ErrorCode::kShape, "{}: compile-time dims {} of '{}' disagree with run-time dims {}", type_,
                       d->ToString(), name, run_dims.ToString());
    if (ir::VarDType(*v) != t.dtype())
      return MakeError(ErrorCode::kShape, "{}: compile-time dtype {} of '{}' disagrees with run-time dtype {}", type_,
                       DTypeName(ir::VarDType(*v)), name, DTypeName(t.dtype()));
  }
  return Status::OK();
}

const Tensor& OpTest::Out(const std::string& slot, int i) const {
  REQUIRE_MESSAGE(!impl_->results.empty(), "Out() before a successful Run()");
  const Impl::Out* out = impl_->FindOut(slot);
  REQUIRE_MESSAGE(out != nullptr, "no output slot " << slot << " was declared");
  return impl_->results.front().second.at(out->names.at(i));
}

void OpTest::ExpectOutput(const std::string& slot, const Tensor& expected, Tolerance tol, int i) {
  REQUIRE_MESSAGE(!impl_->results.empty(), "ExpectOutput() before a successful Run()");
  const Impl::Out* out = impl_->FindOut(slot);
  REQUIRE_MESSAGE(out != nullptr, "no output slot " << slot << " was declared");
  for (const auto& [place, values] : impl_->results)
    ExpectClose(values.at(out->names.at(i)), expected, tol,
                fmt::format("{} output {}[{}] on {}", type_, slot, i, place.ToString()));
}

Dims OpTest::CompiledDims(const std::string& slot, int i) {
  REQUIRE_MESSAGE(impl_->module != nullptr, "CompiledDims() before Compile()/Run()");
  const Impl::Out* out = impl_->FindOut(slot);
  REQUIRE(out != nullptr);
  const auto* v = impl_->module->main().global_block().FindVar(out->names.at(i));
  REQUIRE(v != nullptr);
  auto d = ir::VarDims(*v);
  REQUIRE(d.ok());
  return *d;
}

int OpTest::CompiledLoDLevel(const std::string& slot, int i) {
  REQUIRE_MESSAGE(impl_->module != nullptr, "CompiledLoDLevel() before Compile()/Run()");
  const Impl::Out* out = impl_->FindOut(slot);
  REQUIRE(out != nullptr);
  const auto* v = impl_->module->main().global_block().FindVar(out->names.at(i));
  REQUIRE(v != nullptr);
  return v->type().lod_tensor().lod_level();
}

void OpTest::CheckGrad(const GradCheck& check) {
  const ops::OpRegistry& registry = ops::GlobalOpRegistry();
  const ops::OpInfo* info = registry.Find(type_);
  REQUIRE_MESSAGE(info != nullptr, "unknown op " << type_);
  REQUIRE_MESSAGE(info->grad_maker() != nullptr, type_ << " has no gradient maker");
  INFO("gradient check of " << type_);

  pb::OpDesc fwd = ForwardDesc(type_, attrs_, nullptr, impl_.get());
  // Generate the grad ops first to learn which kernels they need.
  std::unordered_set<std::string> no_grad;
  ops::GradMakerContext gctx(fwd, no_grad, registry);
  REQUIRE_OK(info->grad_maker()(gctx));
  std::vector<pb::OpDesc> grad_ops = gctx.emitted();
  REQUIRE_MESSAGE(!grad_ops.empty(), type_ << "'s gradient maker emitted no ops");

  bool f64 = check.prefer_float64 && info->FindKernel(DeviceType::kCPU, DType::kFloat64) != nullptr;
  for (const auto& g : grad_ops) {
    const ops::OpInfo* gi = registry.Find(g.type());
    REQUIRE_MESSAGE(gi != nullptr, "grad op " << g.type() << " is not registered");
    f64 = f64 && gi->FindKernel(DeviceType::kCPU, DType::kFloat64) != nullptr;
  }
  std::optional<DType> float_as = f64 ? std::optional<DType>(DType::kFloat64) : std::nullopt;
  auto convert = [&](const Tensor& t) { return (f64 && IsFloating(t.dtype())) ? Cast(t, DType::kFloat64) : t; };

  std::map<std::string, Tensor> feeds;
  for (const auto& in : impl_->inputs)
    for (size_t i = 0; i < in.names.size(); ++i) feeds[in.names[i]] = convert(in.tensors[i]);

  // Forward once to learn the output's shape.
  auto fwd_module = CompileOps(*impl_, {fwd}, {}, float_as);
  REQUIRE_OK(fwd_module.status());
  std::vector<std::string> out_names;
  for (const auto& o : impl_->outputs)
    for (const auto& n : o.names) out_names.push_back(n);
  auto base = Execute(**fwd_module, Place::CPU(), feeds, out_names);
  REQUIRE_OK(base.status());
  const Impl::Out* target = impl_->FindOut(check.output);
  REQUIRE_MESSAGE(target != nullptr, "no output slot " << check.output);
  const std::string& y = target->names.at(0);
  const Tensor& y0 = base->at(y);
  Tensor w = RandomTensor(y0.dtype(), y0.dims(), 1234, 0.5, 1.5);

  // Gradient feeds: W for the checked output, zeros for the others the grad ops read.
  std::map<std::string, std::pair<Dims, DType>> grad_vars;
  feeds[ir::GradVarName(y)] = w;
  grad_vars[ir::GradVarName(y)] = {y0.dims(), y0.dtype()};
  for (const auto& g : grad_ops)
    for (const auto& slot : g.inputs())
      for (const auto& a : slot.arguments()) {
        if (!a.ends_with(ir::kGradSuffix) || grad_vars.count(a)) continue;
        std::string fwd_name = a.substr(0, a.size() - ir::kGradSuffix.size());
        auto it = base->find(fwd_name);
        REQUIRE_MESSAGE(it != base->end(), "grad op reads " << a << " but " << fwd_name << " is no output");
        grad_vars[a] = {it->second.dims(), it->second.dtype()};
        feeds[a] = Cast(FullTensor<double>(it->second.dims(), 0.0), it->second.dtype());
      }
  std::vector<pb::OpDesc> all{fwd};
  all.insert(all.end(), grad_ops.begin(), grad_ops.end());
  auto grad_module = CompileOps(*impl_, all, grad_vars, float_as);
  REQUIRE_OK(grad_module.status());

  std::vector<std::string> grad_names;
  for (const auto& slot : check.inputs) {
    Impl::In* in = impl_->FindIn(slot);
    REQUIRE_MESSAGE(in != nullptr, "no input slot " << slot);
    for (const auto& n : in->names) grad_names.push_back(ir::GradVarName(n));
  }

  // Numeric gradients on the CPU: central differences of L = sum(W * Y).
  auto loss = [&](const std::map<std::string, Tensor>& f) {
    auto r = Execute(**fwd_module, Place::CPU(), f, {y});
    REQUIRE_OK(r.status());
    std::vector<double> yv = ToDoubles(r->at(y)), wv = ToDoubles(w);
    double s = 0;
    for (size_t k = 0; k < yv.size(); ++k) s += yv[k] * wv[k];
    return s;
  };
  std::map<std::string, Tensor> numeric;
  for (const auto& slot : check.inputs) {
    Impl::In* in = impl_->FindIn(slot);
    for (const auto& name : in->names) {
      Tensor x = feeds.at(name);
      REQUIRE_MESSAGE(IsFloating(x.dtype()), "cannot differentiate non-float input " << name);
      std::vector<double> xv = ToDoubles(x), g(xv.size());
      for (size_t k = 0; k < xv.size(); ++k) {
        std::map<std::string, Tensor> f = feeds;
        std::vector<double> plus = xv, minus = xv;
        plus[k] += check.eps;
        minus[k] -= check.eps;
        Tensor tp(x.dtype(), x.dims()), tm(x.dtype(), x.dims());
        REQUIRE(tp.Allocate(HostAllocator()).ok());
        REQUIRE(tm.Allocate(HostAllocator()).ok());
        tp.mutable_lod() = x.lod();
        tm.mutable_lod() = x.lod();
        REQUIRE(VisitDType(x.dtype(), [&]<class T>() {
                  for (size_t q = 0; q < xv.size(); ++q) {
                    tp.data<T>()[q] = static_cast<T>(plus[q]);
                    tm.data<T>()[q] = static_cast<T>(minus[q]);
                  }
                }).ok());
        f[name] = tp;
        double lp = loss(f);
        f[name] = tm;
        double lm = loss(f);
        // Divide by the step actually taken in the tensor's precision.
        double step = ToDoubles(tp)[k] - ToDoubles(tm)[k];
        g[k] = (lp - lm) / step;
      }
      Tensor gt = Cast(FullTensor<double>(x.dims(), 0.0), DType::kFloat64);
      std::copy(g.begin(), g.end(), gt.data<double>());
      numeric[ir::GradVarName(name)] = gt;
    }
  }

  for (Place place : AvailablePlaces()) {
    auto r = Execute(**grad_module, place, feeds, grad_names);
    REQUIRE_OK(r.status());
    // The grad ops' shape functions must agree with their kernels, as the forward's must (Run()).
    for (const auto& gname : grad_names) {
      const auto* v = (*grad_module)->main().global_block().FindVar(gname);
      REQUIRE_MESSAGE(v != nullptr, "the grad ops declare no variable " << gname);
      auto d = ir::VarDims(*v);
      REQUIRE_OK(d.status());
      CHECK_MESSAGE(DimsMatch(*d, r->at(gname).dims()), type_ << ": compile-time dims " << d->ToString() << " of '"
                                                              << gname << "' disagree with run-time dims "
                                                              << r->at(gname).dims().ToString());
    }
    for (const auto& gname : grad_names)
      ExpectClose(Cast(r->at(gname), DType::kFloat64), numeric.at(gname), check.tol,
                  fmt::format("{} analytic vs numeric {} on {} ({})", type_, gname, place.ToString(),
                              f64 ? "float64" : "float32"));
  }
}

}  // namespace paddlec::testing
