// Lowering a block to steps with resolved kernels and variables, and running them.
#include "paddlec/exec/plan.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "nan_inf_check.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/runtime/comm.h"
#include "paddlec/runtime/threads.h"

namespace paddlec::exec {

using ops::KernelContext;
using runtime::Tensor;

struct Plan::Step {
  int op_index = 0;
  const ops::OpInfo* info = nullptr;
  const ir::pb::OpDesc* desc = nullptr;
  std::unique_ptr<ops::AttrReader> attrs;
  std::unique_ptr<ops::OpKernel> kernel;
  std::vector<Variable*> vars;  // every bound variable, inputs first; slot spans point in here
  std::vector<KernelContext::SlotTensors> in_slots, out_slots;
  std::unique_ptr<KernelContext> ctx;
  std::vector<int> inplace_outputs;  // positions in `vars` of outputs that are also inputs
  int first_output = 0;              // position in `vars` of the first output
  // Ops whose kernel sizes their outputs (OpInfo::KernelSizesOutputs: feed, control flow, outputs
  // sized by input values): the dims they produced when the later steps were prepared.
  bool kernel_sized = false;
  std::vector<Dims> dynamic_dims;
  // The op's LoD rule at run time (OpInfo::lod_rule): outputs share `lod_source`'s LoD (null: the
  // kernel sets it, or the op has no shape function such as feed and control flow), or lose theirs.
  Variable* lod_source = nullptr;
  bool lod_none = false;
  int64_t calls = 0;
  double total_ms = 0;
};

namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

const ir::pb::OpDesc::Var* FindSlot(const google::protobuf::RepeatedPtrField<ir::pb::OpDesc::Var>& slots,
                                    const std::string& name) {
  for (const auto& s : slots)
    if (s.parameter() == name) return &s;
  return nullptr;
}

/// The dtype that picks the op's kernel, from the compile-time variable declarations.
DType KernelDType(const ops::OpInfo& info, const ir::pb::OpDesc& op, const ir::Block& block,
                  const ops::AttrReader& attrs) {
  const ops::KernelDTypeRule& rule = info.kernel_dtype_rule();
  auto var_dtype = [&](int slot) -> DType {
    const auto* s = FindSlot(op.inputs(), info.proto().inputs(slot).name());
    if (s == nullptr) return DType::kUndefined;
    for (const auto& a : s->arguments()) {
      const auto* v = block.FindVar(a);
      if (v != nullptr && ir::IsTensorVar(*v)) return ir::VarDType(*v);
    }
    return DType::kUndefined;
  };
  switch (rule.kind) {
    case ops::KernelDTypeRule::kFixed: return rule.fixed;
    case ops::KernelDTypeRule::kInput: return var_dtype(rule.slot);
    case ops::KernelDTypeRule::kAttr: {
      auto d = DTypeFromProto(attrs.Get<int>(rule.attr));
      return d.ok() ? *d : DType::kUndefined;
    }
    case ops::KernelDTypeRule::kFirstInput:
      for (int i = 0; i < info.num_inputs(); ++i)
        if (DType d = var_dtype(i); d != DType::kUndefined) return d;
      if (attrs.Has("dtype")) {
        auto d = DTypeFromProto(attrs.Get<int>("dtype"));
        if (d.ok()) return *d;
      }
      return DType::kFloat32;
  }
  return DType::kFloat32;
}

/// Shape inference on live tensors.
class RuntimeShapeContext final : public ops::InferShapeContext {
 public:
  RuntimeShapeContext(const ops::AttrReader& attrs, const ir::pb::OpDesc& desc,
                      std::span<const KernelContext::SlotTensors> ins, std::span<const KernelContext::SlotTensors> outs)
      : InferShapeContext(attrs), desc_(desc), ins_(ins), outs_(outs) {}

  std::string_view op_type() const override { return desc_.type(); }
  int NumInputs(ops::InSlot s) const override {
    return s.index < static_cast<int>(ins_.size()) ? static_cast<int>(ins_[s.index].size()) : 0;
  }
  int NumOutputs(ops::OutSlot s) const override {
    return s.index < static_cast<int>(outs_.size()) ? static_cast<int>(outs_[s.index].size()) : 0;
  }
  Dims InputDims(ops::InSlot s, int i) const override {
    Variable* v = In(s, i);
    return v ? v->tensor().dims() : Dims();
  }
  // A dispensable input may name a variable nothing wrote (PrepareStep allows it): it has no dtype yet.
  DType InputDType(ops::InSlot s, int i) const override {
    Variable* v = In(s, i);
    return v && v->tensor().initialized() ? v->tensor().dtype() : DType::kUndefined;
  }
  std::string_view InputName(ops::InSlot s, int i) const override { return Name(desc_.inputs(), s.name, i); }
  std::string_view OutputName(ops::OutSlot s, int i) const override { return Name(desc_.outputs(), s.name, i); }
  void SetOutput(ops::OutSlot s, int i, const Dims& dims, DType dtype) override {
    if (i >= NumOutputs(s)) return;
    Variable* v = outs_[s.index][i];
    if (v != nullptr) v->tensor().Set(dtype, dims);
  }

 private:
  Variable* In(ops::InSlot s, int i) const { return i < NumInputs(s) ? ins_[s.index][i] : nullptr; }
  static std::string_view Name(const google::protobuf::RepeatedPtrField<ir::pb::OpDesc::Var>& slots,
                               std::string_view slot, int i) {
    for (const auto& s : slots)
      if (s.parameter() == slot && i < s.arguments_size()) return s.arguments(i);
    return "";
  }
  const ir::pb::OpDesc& desc_;
  std::span<const KernelContext::SlotTensors> ins_, outs_;
};

bool HasValue(const Variable& v) { return v.tensor().initialized() || !v.list().empty() || !v.step_scopes().empty(); }

/// Applies an op's LoD rule to its outputs after it ran: outputs with as many rows as the source
/// share its LoD (PaddlePaddle's ShareLoD); `none` drops it. Copies only when something changed, so
/// a step over plain tensors costs two emptiness checks per output.
void ApplyLoDRule(const Variable* source, bool none, std::span<Variable* const> outputs) {
  static const runtime::LoD kEmpty;
  const Tensor* src = source ? &source->tensor() : nullptr;
  const runtime::LoD& lod = src ? src->lod() : kEmpty;
  for (Variable* v : outputs) {
    if (v == nullptr || v == source) continue;
    Tensor& t = v->tensor();
    bool share = !none && !lod.empty() && t.dims().rank() > 0 && src->dims().rank() > 0 &&
                 t.dims()[0] == src->dims()[0];
    if (!share) {
      if (!t.lod().empty()) t.mutable_lod().clear();
    } else if (t.lod() != lod) {
      t.mutable_lod() = lod;
    }
  }
}

}  // namespace

Plan::~Plan() = default;

StatusOr<std::unique_ptr<Plan>> Plan::Build(ir::Block& block, Scope& scope, DeviceContext& device,
                                            const ops::OpRegistry& registry, const PlanOptions& options) {
  int n = block.num_ops();
  int begin = options.op_begin, end = options.op_end < 0 ? n : options.op_end;
  if (begin < 0 || begin > end || end > n)
    return MakeError(ErrorCode::kInvalidArgument, "op range [{}, {}) is outside block {} which has {} ops", begin,
                     end, block.idx(), n);
  std::unique_ptr<Plan> plan(new Plan());
  plan->block_ = &block;
  plan->device_ = &device;
  plan->profile_ = options.profile;
  plan->use_graph_ = options.cuda_graph;
  plan->flush_denormals_ = options.flush_denormals;
  if (device.place().is_cpu()) plan->cpu_threads_ = static_cast<runtime::CpuContext&>(device).num_threads();
  // Control-flow ops run other blocks of the program through plans of their own: over a child scope
  // of this plan's scope (conditional_block), or over scopes the op makes itself (while's steps).
  ir::Program* program = &block.program();
  plan->scoped_sub_blocks_ = std::make_unique<ops::ScopedSubBlockFactory>(
      [program, &device, &registry, options](int idx, Scope& in) -> StatusOr<std::unique_ptr<ops::SubBlockRunner>> {
        if (idx < 0 || idx >= program->num_blocks())
          return MakeError(ErrorCode::kValidation, "sub-block {} does not exist", idx);
        PlanOptions sub = options;
        sub.op_begin = 0;
        sub.op_end = -1;
        PC_ASSIGN_OR_RETURN(auto plan, Plan::Build(program->block(idx), in, device, registry, sub));
        struct Runner final : ops::SubBlockRunner {
          std::unique_ptr<Plan> plan;
          Status Run() override { return plan->Run(); }
        };
        auto runner = std::make_unique<Runner>();
        runner->plan = std::move(plan);
        return std::unique_ptr<ops::SubBlockRunner>(std::move(runner));
      });
  plan->sub_blocks_ = std::make_unique<ops::SubBlockFactory>(
      [scoped = plan->scoped_sub_blocks_.get(), &scope](int idx) { return (*scoped)(idx, scope.NewChild()); });

  for (int i = begin; i < end; ++i) {
    ir::Op op = block.op(i);
    const ops::OpInfo* info = registry.Find(op.type());
    if (info == nullptr)
      return MakeError(ErrorCode::kValidation, "unknown op type '{}'", op.type()).At(op.Location());
    auto step = std::make_unique<Step>();
    step->op_index = i;
    step->info = info;
    step->desc = &op.desc();
    step->attrs = std::make_unique<ops::AttrReader>(op.desc(), info);
    step->kernel_sized = info->KernelSizesOutputs(op.desc());

    // Bind variables slot by slot in proto order, so slot constants index them directly.
    std::vector<std::pair<int, int>> in_ranges, out_ranges;  // (offset, count) into vars
    // Variables resolve through parent scopes first: parameters live in the outer scope.
    auto resolve = [&](const std::string& name) -> Variable* {
      if (Variable* v = scope.Find(name)) return v;
      return &scope.Var(name);
    };
    for (const auto& ps : info->proto().inputs()) {
      const auto* s = FindSlot(op.desc().inputs(), ps.name());
      int offset = static_cast<int>(step->vars.size()), count = s ? s->arguments_size() : 0;
      for (int k = 0; k < count; ++k)
        step->vars.push_back(s->arguments(k) == ir::kEmptyVarName ? nullptr : resolve(s->arguments(k)));
      in_ranges.emplace_back(offset, count);
    }
    int first_output = static_cast<int>(step->vars.size());
    step->first_output = first_output;
    for (const auto& ps : info->proto().outputs()) {
      const auto* s = FindSlot(op.desc().outputs(), ps.name());
      int offset = static_cast<int>(step->vars.size()), count = s ? s->arguments_size() : 0;
      for (int k = 0; k < count; ++k)
        step->vars.push_back(s->arguments(k) == ir::kEmptyVarName ? nullptr : resolve(s->arguments(k)));
      out_ranges.emplace_back(offset, count);
    }
    for (int k = first_output; k < static_cast<int>(step->vars.size()); ++k)
      if (step->vars[k] != nullptr &&
          std::find(step->vars.begin(), step->vars.begin() + first_output, step->vars[k]) !=
              step->vars.begin() + first_output)
        step->inplace_outputs.push_back(k);
    for (auto [off, cnt] : in_ranges) step->in_slots.emplace_back(step->vars.data() + off, cnt);
    for (auto [off, cnt] : out_ranges) step->out_slots.emplace_back(step->vars.data() + off, cnt);
    step->ctx = std::make_unique<KernelContext>(step->in_slots, step->out_slots, &device);
    if (info->infer_shape() != nullptr) {
      const ops::LoDRule& rule = info->lod_rule();
      step->lod_none = rule.kind == ops::LoDRule::kNone;
      if (rule.kind == ops::LoDRule::kShareInput && rule.slot < static_cast<int>(in_ranges.size()) &&
          in_ranges[rule.slot].second > 0)
        step->lod_source = step->vars[in_ranges[rule.slot].first];
    }

    DType dtype = KernelDType(*info, op.desc(), block, *step->attrs);
    DeviceType dev = device.place().type;
    const ops::KernelFactory* factory = info->FindKernel(dev, dtype);
    if (factory == nullptr) {
      std::string have;
      for (auto [d, t] : info->KernelKeys()) have += fmt::format("{}{}:{}", have.empty() ? "" : ", ", DeviceTypeName(d), DTypeName(t));
      return MakeError(ErrorCode::kUnimplemented, "op '{}' has no {} kernel for {}", op.type(), DeviceTypeName(dev),
                       DTypeName(dtype))
          .At(op.Location())
          .Note(have.empty() ? std::string("it has no kernels at all") : "kernels available: " + have);
    }
    uint64_t seed = SplitMix64(options.seed * 0x100000001B3ull + static_cast<uint64_t>(i) + 1);
    ops::KernelInit init{*step->attrs,
                         seed,
                         &device,
                         plan->sub_blocks_.get(),
                         options.start_step,
                         &scope,
                         plan->scoped_sub_blocks_.get()};
    auto kernel = (*factory)(init);
    if (!kernel.ok()) {
      Error e = std::move(kernel).status().TakeError();
      if (e.location().op < 0) e.At(op.Location());
      return e;
    }
    step->kernel = std::move(kernel).value();
    if (options.check_nan_inf) step->kernel = CheckNanInfAfter(std::move(step->kernel), *info, op.desc());
    if (plan->use_graph_ && !step->kernel->Replayable()) {
      spdlog::warn("op {} ({}) cannot be replayed from a CUDA graph; running op by op", i, op.type());
      plan->use_graph_ = false;
    }
    plan->steps_.push_back(std::move(step));
  }
  if (plan->use_graph_ && !device.place().is_cuda()) {
    spdlog::warn("CUDA graphs need a GPU place, not {}; running op by op", device.place().ToString());
    plan->use_graph_ = false;
  }
  return plan;
}

Error Plan::StepError(const Step& step, Error e) const {
  if (e.location().op < 0) {
    SourceLocation loc = block_->op(step.op_index).Location();
    loc.var = e.location().var;
    e.At(loc);
  }
  return e;
}

bool Plan::ExternalShapesChanged() const {
  for (const auto& e : externals_)
    if (!(e.var->tensor().dims() == e.dims)) return true;
  return false;
}

void Plan::Unprepare(int i) {
  prepared_ = std::min(prepared_, i);
  std::erase_if(externals_, [i](const External& e) { return e.step >= i; });
  std::erase_if(producer_, [i](const auto& kv) { return kv.second >= i; });
}

Status Plan::PrepareStep(int i) {
  if (i == 0) ++shape_inferences_;
  Step& s = *steps_[i];
  auto produced = [&](Variable* v) { return producer_.count(v) > 0; };
  // Every input must hold a value: fed, initialized by the startup program, or produced earlier.
  for (int slot = 0; slot < static_cast<int>(s.in_slots.size()); ++slot) {
    for (size_t k = 0; k < s.in_slots[slot].size(); ++k) {
      Variable* v = s.in_slots[slot][k];
      if (v == nullptr || produced(v)) continue;
      bool seen = std::any_of(externals_.begin(), externals_.end(), [v](const External& e) { return e.var == v; });
      if (!seen) externals_.push_back({v, v->tensor().dims(), i});
      if (HasValue(*v) || s.info->proto().inputs(slot).dispensable()) continue;
      const std::string& slot_name = s.info->proto().inputs(slot).name();
      std::string var_name;
      for (const auto& ds : s.desc->inputs())
        if (ds.parameter() == slot_name && static_cast<int>(k) < ds.arguments_size()) var_name = ds.arguments(k);
      Error e = MakeError(ErrorCode::kRuntime, "input '{}' reads variable '{}', which holds no value", slot_name,
                          var_name);
      e.mutable_location().var = var_name;
      e.Advise(
          "feed it (--feed " + var_name + "=FILE.npy), initialize it in the startup program, or load it with --params",
          "feed it (feed={'" + var_name +
              "': array}), run the startup program first, or load it with "
              "paddlec.io.load_params");
      return StepError(s, std::move(e));
    }
  }
  bool dynamic = s.kernel_sized;
  if (!dynamic) {
    RuntimeShapeContext ctx(*s.attrs, *s.desc, s.in_slots, s.out_slots);
    Status st = s.info->infer_shape()(ctx);
    if (!st.ok()) return StepError(s, std::move(st).TakeError());
  }
  for (int k = s.first_output; k < static_cast<int>(s.vars.size()); ++k) {
    Variable* v = s.vars[k];
    if (v == nullptr) continue;
    producer_.emplace(v, i);
    if (dynamic) continue;  // sized by the kernel itself; checked after it runs
    Tensor& t = v->tensor();
    if (!t.dims().IsFullyKnown())
      return StepError(s, MakeError(ErrorCode::kShape, "output '{}' has unknown dims {} at run time",
                                    s.desc->outputs().empty() ? "" : s.desc->outputs(0).arguments(0),
                                    t.dims().ToString()));
    bool inplace = std::find(s.inplace_outputs.begin(), s.inplace_outputs.end(), k) != s.inplace_outputs.end();
    if (inplace && t.initialized()) continue;
    Status st = t.Allocate(device_->allocator());
    if (!st.ok()) return StepError(s, std::move(st).TakeError());
  }
  return Status::OK();
}

template <bool kProfile>
Status Plan::RunSteps() {
  if (prepared_ > 0 && ExternalShapesChanged()) Unprepare(0);
  const int n = static_cast<int>(steps_.size());
  for (int i = 0; i < n; ++i) {
    Step& s = *steps_[i];
    if (i >= prepared_) [[unlikely]] {
      PC_RETURN_IF_ERROR(PrepareStep(i));
      prepared_ = i + 1;
      if (s.kernel_sized) {
        s.dynamic_dims.clear();
        for (int k = s.first_output; k < static_cast<int>(s.vars.size()); ++k)
          s.dynamic_dims.push_back(s.vars[k] ? s.vars[k]->tensor().dims() : Dims());
      }
    }
    std::chrono::steady_clock::time_point t0;
    if constexpr (kProfile) t0 = std::chrono::steady_clock::now();
    Status st = s.kernel->Run(*s.ctx);
    if constexpr (kProfile) {
      if (st.ok()) st = device_->Synchronize();
      ++s.calls;
      s.total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    if (!st.ok()) [[unlikely]]
      return StepError(s, std::move(st).TakeError());
    if (s.lod_source != nullptr || s.lod_none)
      ApplyLoDRule(s.lod_source, s.lod_none,
                   std::span<Variable* const>(s.vars.data() + s.first_output, s.vars.size() - s.first_output));
    if (!s.dynamic_dims.empty()) {
      // An op that sizes its own outputs: the ops after it must see the shapes it produced.
      for (int k = s.first_output, j = 0; k < static_cast<int>(s.vars.size()); ++k, ++j) {
        Dims now = s.vars[k] ? s.vars[k]->tensor().dims() : Dims();
        if (!(now == s.dynamic_dims[j])) {
          s.dynamic_dims[j] = now;
          Unprepare(i + 1);
        }
      }
    }
  }
  return Status::OK();
}

Status Plan::RunRecorded() {
  if (graph_ && !ExternalShapesChanged()) return graph_->Launch();
  graph_.reset();
  // Record only a step whose shapes and memory are settled: the first run after a change prepares
  // (allocates) and runs eagerly.
  if (prepared_ < static_cast<int>(steps_.size()) || ExternalShapesChanged()) return RunSteps<false>();
  PC_RETURN_IF_ERROR(device_->BeginCapture());
  Status recorded = RunSteps<false>();
  auto graph = device_->EndCapture();
  if (!recorded.ok() || !graph.ok()) {
    use_graph_ = false;
    spdlog::warn("recording the step as a CUDA graph failed ({}); running op by op",
                 recorded.ok() ? graph.error().message() : recorded.error().message());
    return RunSteps<false>();
  }
  graph_ = std::move(graph).value();
  return graph_->Launch();
}

Status Plan::Run() {
  // The CPU context's thread count and denormal mode, in this thread (and the OpenMP workers it
  // uses) for this run only: executors with other settings, and the caller, keep theirs.
  struct RunScope {
    bool active;
    runtime::KernelThreadState saved;
    ~RunScope() {
      if (active) runtime::LeaveKernelThreads(saved);
    }
  } scope{cpu_threads_ > 0,
          cpu_threads_ > 0 ? runtime::EnterKernelThreads(cpu_threads_, flush_denormals_, tasks_on_openmp_)
                           : runtime::KernelThreadState{}};
  // After a run whose kernels started oneDNN primitives on several threads, the next runs paddlec's
  // own loops on the same OpenMP workers (runtime/threads.h, RunTasks). An inference's first run
  // multiplies on oneDNN before its weights are packed, so the choice follows the latest run.
  const int64_t onednn_runs = runtime::ParallelOneDnnRuns();
  Status st;
  if (use_graph_ && !profile_) {
    st = Finish(RunRecorded());
  } else if (!profile_) {
    st = Finish(RunSteps<false>());
  } else {
    auto start = std::chrono::steady_clock::now();
    st = Finish(RunSteps<true>());
    profiled_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  tasks_on_openmp_ = runtime::ParallelOneDnnRuns() != onednn_runs;
  return st;
}

Status Plan::Finish(Status st) {
  // A collective started without a c_sync_comm_stream after it must not outlive the run: the next
  // one rewrites its buffer. On a GPU that is an event the compute stream waits for, queued even
  // after an error: the host does not wait, and the memory the collective uses is freed (Python may
  // go on after the exception) into an allocator whose reuse is safe in compute-stream order only.
  Status joined = device_->JoinPendingWork();
  // On the CPU, after an error the run is abandoned (its peers may never join the collective, and
  // the driver stops every rank), so nothing is waited for.
  if (!st.ok()) return st;
  PC_RETURN_IF_ERROR(joined);
  return runtime::WaitForCollectives();
}

std::vector<OpTypeProfile> Plan::ProfileByType() const {
  std::map<std::string, OpTypeProfile> by_type;
  for (const auto& s : steps_) {
    auto& p = by_type[s->desc->type()];
    p.type = s->desc->type();
    p.calls += s->calls;
    p.total_ms += s->total_ms;
  }
  std::vector<OpTypeProfile> out;
  for (auto& [k, v] : by_type) out.push_back(v);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  return out;
}

}  // namespace paddlec::exec
