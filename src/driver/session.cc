// Loading, compiling and preparing a program for execution.
#include "session.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "paddlec/core/feed_rules.h"
#include "paddlec/driver/driver.h"
#include "paddlec/io/params.h"
#include "paddlec/ir/op_role.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/passes/signature.h"

namespace paddlec::driver {

StatusOr<std::unique_ptr<Session>> Session::Open(const SessionOptions& options) {
  std::unique_ptr<Session> s(new Session());
  PC_ASSIGN_OR_RETURN(Place place, ParsePlace(options.device));
  std::optional<ir::Format> format;
  if (!options.input_format.empty()) {
    PC_ASSIGN_OR_RETURN(ir::Format f, ir::ParseFormat(options.input_format));
    format = f;
  }
  PC_ASSIGN_OR_RETURN(s->module_, ir::LoadModule(options.program, format));
  if (!options.startup.empty()) PC_RETURN_IF_ERROR(AttachStartup(s->module_, options.startup));
  bool own_training_ops = HasTrainingOps(*s->module_);
  s->optimizer_state_uninitialized_ =
      own_training_ops && !s->module_->was_compiled() && s->module_->startup().global_block().num_ops() == 0;
  passes::PassManager pm;
  if (options.train != nullptr && s->module_->compiled().param_grads_size() == 0 && !own_training_ops) {
    CompileOptions c = *options.train;
    c.train = true;
    if (c.loss.empty()) {
      if (!s->module_->compiled().loss().empty()) {
        c.loss = s->module_->compiled().loss();
      } else {
        PC_ASSIGN_OR_RETURN(c.loss, GuessLoss(*s->module_));
      }
    }
    PC_RETURN_IF_ERROR(pm.AddPipeline(CompilePipeline(c)));
  } else {
    // A compiled program already went through the pipeline; it is still checked, since the file may
    // have been edited since.
    PC_RETURN_IF_ERROR(pm.AddPipeline(s->module_->was_compiled() ? "validate,infer-shape" : options.passes));
  }
  passes::PassContext ctx{ops::GlobalOpRegistry(), options.fetches};
  PC_RETURN_IF_ERROR(pm.Run(*s->module_, ctx));
  passes::ComputeSignature(*s->module_);
  PC_ASSIGN_OR_RETURN(s->executor_, exec::Executor::Create(place, {.num_threads = options.threads,
                                                                   .seed = options.seed,
                                                                   .flush_denormals = !options.keep_denormals,
                                                                   .check_nan_inf = options.check_nan_inf}));
  return s;
}

StatusOr<std::string> GuessLoss(ir::Module& m) {
  ir::Block& b = m.main().global_block();
  ir::DefUse du(b);
  std::vector<std::string> candidates;
  for (const auto& op : b.desc().ops())
    for (const auto& s : op.outputs())
      for (const auto& a : s.arguments()) {
        const auto* v = b.FindVar(a);
        if (v == nullptr || !ir::IsTensorVar(*v) || !IsFloating(ir::VarDType(*v)) || !du.Readers(a).empty()) continue;
        auto d = ir::VarDims(*v);
        if (d.ok() && d->Numel() == 1 && std::find(candidates.begin(), candidates.end(), a) == candidates.end())
          candidates.push_back(a);
      }
  if (candidates.size() == 1) return candidates[0];
  std::string names;
  for (const auto& c : candidates) names += (names.empty() ? "" : ", ") + c;
  return MakeError(ErrorCode::kInvalidArgument, "cannot tell which variable is the loss")
      .Note(candidates.empty() ? std::string("no op writes an unread scalar; pass --loss=NAME")
                               : "candidates: " + names + "; pass --loss=NAME");
}

Status AttachStartup(std::unique_ptr<ir::Module>& m, const std::string& path) {
  PC_ASSIGN_OR_RETURN(ir::pb::ProgramDesc startup, ir::LoadProgramDesc(path));
  *m->compiled().mutable_startup_program() = std::move(startup);
  ir::SourceMap main_source = m->main().source_map();
  paddlec::proto::CompiledProgram compiled = std::move(m->compiled());
  PC_ASSIGN_OR_RETURN(m, ir::Module::Create(std::move(compiled), std::move(main_source)));
  return Status::OK();
}

bool HasTrainingOps(const ir::Module& m) {
  for (const auto& op : m.compiled().main_program().blocks(0).ops())
    if (ir::OpRoleOf(op) & (ir::kOpRoleBackward | ir::kOpRoleOptimize)) return true;
  return false;
}

Status Session::InitializeParameters() {
  if (optimizer_state_uninitialized_)
    return MakeError(ErrorCode::kInvalidArgument,
                     "the program holds its own optimizer ops but no startup program: its learning rate and "
                     "optimizer state would have no initial values")
        .Note("pass PaddlePaddle's startup program with --startup, or every persistable variable with --params");
  return executor_->RunOnce(module_->startup().global_block(), scope_);
}

Status Session::LoadParameters(const std::string& path) {
  const auto& params = module_->compiled().parameters();
  std::vector<std::string> names(params.begin(), params.end());
  return io::LoadParams(path, names, scope_, executor_->device(), &main_block());
}

Status Session::SaveParameters(const std::string& path) {
  const auto& params = module_->compiled().parameters();
  std::vector<std::string> names(params.begin(), params.end());
  return io::SaveParams(path, names, scope_, executor_->device());
}

std::vector<std::string> Session::FeedNames() const {
  std::vector<std::string> out;
  for (const auto& f : module_->compiled().feed_targets()) out.push_back(f.name());
  return out;
}

std::vector<std::string> Session::Unfed() const {
  std::vector<std::string> out;
  for (const auto& n : FeedNames())
    if (std::find(fed_.begin(), fed_.end(), n) == fed_.end()) out.push_back(n);
  return out;
}

StatusOr<std::pair<DType, Dims>> Session::FeedDeclaration(const std::string& name) const {
  for (const auto& f : module_->compiled().feed_targets())
    if (f.name() == name) {
      PC_ASSIGN_OR_RETURN(Dims dims, Dims::FromRange(f.dims().begin(), f.dims().end()));
      return std::make_pair(static_cast<DType>(f.data_type()), dims);
    }
  return MakeError(ErrorCode::kNotFound, "the program has no input named '{}'", name);
}

namespace {

/// `t` converted element by element to `to`.
StatusOr<runtime::Tensor> Convert(const runtime::Tensor& t, DType to, runtime::Allocator& alloc) {
  runtime::Tensor out(to, t.dims());
  PC_RETURN_IF_ERROR(out.Allocate(alloc));
  Status inner;
  PC_RETURN_IF_ERROR(VisitDType(t.dtype(), [&]<class From>() {
    inner = VisitDType(to, [&]<class To>() {
      const From* src = t.data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<To>(src[i]);
    });
  }));
  PC_RETURN_IF_ERROR(inner);
  return out;
}

}  // namespace

Status Session::Feed(const std::string& name, const runtime::Tensor& host) {
  const paddlec::proto::FeedTarget* target = nullptr;
  for (const auto& f : module_->compiled().feed_targets())
    if (f.name() == name) target = &f;
  if (target == nullptr) {
    std::string names;
    for (const auto& n : FeedNames()) names += (names.empty() ? "" : ", ") + n;
    return MakeError(ErrorCode::kInvalidArgument, "the program has no input named '{}'", name)
        .Note(names.empty() ? std::string("it takes no inputs") : "its inputs are: " + names);
  }
  DType want = static_cast<DType>(target->data_type());
  PC_ASSIGN_OR_RETURN(FeedCast cast, CheckFeedDType(name, want, host.dtype()));
  PC_ASSIGN_OR_RETURN(Dims declared, Dims::FromRange(target->dims().begin(), target->dims().end()));
  PC_RETURN_IF_ERROR(CheckFeedDims(name, declared, host.dims()));
  if (cast.convert) {
    if (!cast.warning.empty()) spdlog::warn("{}", cast.warning);
    PC_ASSIGN_OR_RETURN(runtime::Tensor converted, Convert(host, want, *host_alloc_));
    converted.mutable_lod() = host.lod();
    PC_RETURN_IF_ERROR(executor_->device().CopyFromHost(converted, scope_.Var(name).tensor()));
  } else {
    PC_RETURN_IF_ERROR(executor_->device().CopyFromHost(host, scope_.Var(name).tensor()));
  }
  if (std::find(fed_.begin(), fed_.end(), name) == fed_.end()) fed_.push_back(name);
  return Status::OK();
}

StatusOr<runtime::Tensor> Session::Fetch(const std::string& name) {
  runtime::Variable* v = scope_.Find(name);
  if (v == nullptr || !v->tensor().initialized()) {
    if (main_block().FindVar(name) == nullptr)
      return MakeError(ErrorCode::kNotFound, "the program has no variable named '{}'", name);
    return MakeError(ErrorCode::kNotFound, "variable '{}' holds no value after the run", name)
        .Note("it may lie outside --op-range, or no op writes it");
  }
  runtime::Tensor host;
  PC_RETURN_IF_ERROR(executor_->device().CopyToHost(v->tensor(), host, *host_alloc_));
  return host;
}

}  // namespace paddlec::driver
