// `paddlec run`: execute a program on .npy feeds and write or print the fetched tensors.
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <ostream>

#include "inputs.h"
#include "paddlec/core/file.h"
#include "paddlec/driver/driver.h"
#include "paddlec/io/npy.h"
#include "paddlec/io/npz.h"
#include "session.h"

namespace paddlec::driver {
namespace {

StatusOr<std::pair<int, int>> ParseOpRange(const std::string& spec, int num_ops) {
  size_t colon = spec.find(':');
  auto bad = [&] {
    return MakeError(ErrorCode::kInvalidArgument, "bad --op-range '{}': expected FROM:TO with 0 <= FROM <= TO <= {}",
                     spec, num_ops);
  };
  if (colon == std::string::npos) return bad();
  std::string a = spec.substr(0, colon), b = spec.substr(colon + 1);
  char* end = nullptr;
  long from = a.empty() ? 0 : std::strtol(a.c_str(), &end, 10);
  if (!a.empty() && *end) return bad();
  long to = b.empty() ? num_ops : std::strtol(b.c_str(), &end, 10);
  if (!b.empty() && *end) return bad();
  if (from < 0 || from > to || to > num_ops) return bad();
  return std::make_pair(static_cast<int>(from), static_cast<int>(to));
}

/// "name  float32  [2, 3]  [0.1, 0.2, ...]" with at most 8 values.
std::string Summary(const std::string& name, const runtime::Tensor& t) {
  std::string values;
  int64_t n = std::min<int64_t>(t.numel(), 8);
  Status st = VisitDType(t.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < n; ++i) {
      if (i) values += ", ";
      if constexpr (std::is_floating_point_v<T>) values += fmt::format("{:.6g}", t.data<T>()[i]);
      else values += fmt::format("{}", static_cast<int64_t>(t.data<T>()[i]));
    }
  });
  if (!st.ok()) values = "?";
  if (t.numel() > n) values += ", ...";
  std::string lod;
  for (const auto& level : t.lod()) lod += fmt::format("{}[{}]", lod.empty() ? "  lod=" : ";", fmt::join(level, ","));
  return fmt::format("{}  {}  {}  [{}]{}", name, DTypeName(t.dtype()), t.dims().ToString(), values, lod);
}

/// The tensors of every step, stacked along a new first axis ([steps, ...]); they must agree in
/// dtype and shape.
StatusOr<runtime::Tensor> Stack(const std::vector<runtime::Tensor>& steps, runtime::Allocator& alloc) {
  const runtime::Tensor& first = steps.front();
  Dims dims = first.dims();
  if (dims.rank() == kMaxRank) return MakeError(ErrorCode::kShape, "cannot stack tensors of rank {}", dims.rank());
  dims.insert(0, static_cast<int64_t>(steps.size()));
  runtime::Tensor out(first.dtype(), dims);
  PC_RETURN_IF_ERROR(out.Allocate(alloc));
  char* p = static_cast<char*>(out.raw_data());
  for (const auto& t : steps) {
    if (t.dtype() != first.dtype() || !(t.dims() == first.dims()))
      return MakeError(ErrorCode::kShape, "--each-step: a fetched value changed shape between steps ({} to {})",
                       first.dims().ToString(), t.dims().ToString());
    std::memcpy(p, t.raw_data(), t.nbytes());
    p += t.nbytes();
  }
  return out;
}

std::string FileNameFor(std::string name) {
  std::replace(name.begin(), name.end(), '/', '_');
  return name + ".npy";
}

/// The inputs not fed from files, made from --input-shape and --fill (shapes default to the
/// declaration, with unknown sizes taken as 1).
Status FillInputs(const RunOptions& options, Session& session, runtime::Allocator& alloc) {
  std::map<std::string, Dims> shapes;
  for (const auto& spec : options.input_shapes) {
    PC_ASSIGN_OR_RETURN(auto parsed, ParseInputShape(spec));
    if (!shapes.emplace(parsed.first, parsed.second).second)
      return MakeError(ErrorCode::kInvalidArgument, "--input-shape names '{}' twice", parsed.first);
  }
  if (options.fill.empty() && shapes.empty()) return Status::OK();
  PC_ASSIGN_OR_RETURN(Fill fill, ParseFill(options.fill.empty() ? "random" : options.fill));
  std::vector<std::string> unfed = session.Unfed();
  for (const auto& [name, dims] : shapes)
    if (std::find(unfed.begin(), unfed.end(), name) == unfed.end()) {
      std::vector<std::string> inputs = session.FeedNames();
      bool is_input = std::find(inputs.begin(), inputs.end(), name) != inputs.end();
      return MakeError(ErrorCode::kInvalidArgument, "--input-shape names '{}', {}", name,
                       is_input ? "which is also fed from a file" : "which is not an input of the program")
          .Note(fmt::format("its inputs are: {}", fmt::join(inputs, ", ")));
    }
  for (const auto& name : unfed) {
    PC_ASSIGN_OR_RETURN(auto declared, session.FeedDeclaration(name));
    Dims dims = declared.second;
    if (auto it = shapes.find(name); it != shapes.end()) {
      dims = it->second;
    } else {
      for (int i = 0; i < dims.rank(); ++i)
        if (dims[i] < 0) dims[i] = 1;
    }
    PC_ASSIGN_OR_RETURN(runtime::Tensor t, MakeInput(name, declared.first, dims, fill, options.seed, alloc));
    PC_RETURN_IF_ERROR(session.Feed(name, t));
  }
  return Status::OK();
}

/// --scope-in: the arrays of an earlier run's --scope-out, each checked to be a variable of the program.
StatusOr<io::NamedTensors> ReadScopeIn(const std::string& path, Session& session, runtime::Allocator& alloc) {
  if (path.empty()) return io::NamedTensors{};
  PC_ASSIGN_OR_RETURN(io::NamedTensors arrays, io::ReadNpz(path, alloc));
  for (const auto& [name, t] : arrays)
    if (session.main_block().FindVar(name) == nullptr)
      return MakeError(ErrorCode::kInvalidArgument, "--scope-in {}: '{}' is not a variable of the program", path, name)
          .Note("--scope-in takes the --scope-out of an earlier run of the same program");
  return arrays;
}

/// The inputs neither fed nor given by --scope-in.
std::vector<std::string> Unfed(Session& session, const io::NamedTensors& scope_in) {
  std::vector<std::string> missing = session.Unfed();
  std::erase_if(missing, [&](const std::string& n) {
    return std::any_of(scope_in.begin(), scope_in.end(), [&](const auto& kv) { return kv.first == n; });
  });
  return missing;
}

/// --scope-out: every variable of the run's scope holding a tensor (feeds, parameters, the outputs of
/// the ops run), copied to the host. Sub-block scopes and feed/fetch holders are left out.
Status WriteScopeOut(const std::string& path, Session& session, runtime::Allocator& alloc) {
  io::NamedTensors out;
  for (const auto& name : session.scope().LocalNames()) {
    runtime::Variable* v = session.scope().FindLocal(name);
    if (!v->tensor().initialized()) continue;
    runtime::Tensor host;
    PC_RETURN_IF_ERROR(session.executor().device().CopyToHost(v->tensor(), host, alloc));
    out.emplace_back(name, std::move(host));
  }
  return io::WriteNpz(path, out);
}

}  // namespace

Status RunRun(const RunOptions& options, std::ostream& out) {
  if (options.steps < 1) return MakeError(ErrorCode::kInvalidArgument, "--steps must be at least 1");
  PC_ASSIGN_OR_RETURN(
      auto session,
      Session::Open({.program = options.program,
                     .input_format = options.input_format,
                     .startup = options.startup,
                     .device = options.device,
                     .seed = options.seed,
                     .threads = options.threads,
                     .keep_denormals = options.keep_denormals,
                     .check_nan_inf = options.check_nan_inf,
                     .passes = CompilePipeline({.inference = options.inference, .opt_level = options.opt_level}),
                     .fetches = options.fetches}));

  // Check everything the user gave before running anything.
  auto host_alloc = runtime::CpuCachingAllocator::Create();
  std::map<std::string, runtime::LoD> lods;
  for (const auto& spec : options.lods) {
    PC_ASSIGN_OR_RETURN(auto parsed, ParseLoDSpec(spec));
    if (!lods.emplace(parsed.first, std::move(parsed.second)).second)
      return MakeError(ErrorCode::kInvalidArgument, "--lod names '{}' twice", parsed.first);
  }
  std::set<std::string> fed;
  auto feed = [&](const std::string& name, runtime::Tensor& t) -> Status {
    if (auto it = lods.find(name); it != lods.end()) {
      std::string problem = runtime::LoDProblem(it->second, t.dims().rank() ? t.dims()[0] : -1);
      if (t.dims().rank() == 0) problem = "a scalar cannot carry a LoD";
      if (!problem.empty())
        return MakeError(ErrorCode::kInvalidArgument, "--lod {}: {}", name, problem)
            .Note("offsets start at 0, never decrease, and the last level ends at the fed array's row count");
      t.mutable_lod() = it->second;
    }
    fed.insert(name);
    return session->Feed(name, t);
  };
  for (const auto& spec : options.feeds) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos && spec.ends_with(".npz")) {
      // An archive feeds each of its arrays to the input of the same name.
      PC_ASSIGN_OR_RETURN(io::NamedTensors arrays, io::ReadNpz(spec, *host_alloc));
      for (auto& [name, t] : arrays) PC_RETURN_IF_ERROR(feed(name, t));
      continue;
    }
    if (eq == std::string::npos || eq == 0)
      return MakeError(ErrorCode::kInvalidArgument, "bad --feed '{}': expected NAME=FILE.npy or FILE.npz", spec);
    PC_ASSIGN_OR_RETURN(runtime::Tensor t, io::ReadNpy(spec.substr(eq + 1), *host_alloc));
    PC_RETURN_IF_ERROR(feed(spec.substr(0, eq), t));
  }
  for (const auto& [name, lod] : lods)
    if (!fed.count(name))
      return MakeError(ErrorCode::kInvalidArgument, "--lod names '{}', which is not fed with --feed", name)
          .Note(fmt::format("feed it: --feed {}=FILE.npy --lod {}=...", name, name));
  PC_RETURN_IF_ERROR(FillInputs(options, *session, *host_alloc));
  std::vector<std::string> fetches = options.fetches;
  if (fetches.empty())
    for (const auto& f : session->module().compiled().fetch_targets()) fetches.push_back(f);
  for (const auto& f : fetches)
    if (session->main_block().FindVar(f) == nullptr)
      return MakeError(ErrorCode::kNotFound, "cannot fetch '{}': the program has no variable of that name", f);

  PC_ASSIGN_OR_RETURN(io::NamedTensors scope_in, ReadScopeIn(options.scope_in, *session, *host_alloc));

  int num_ops = session->main_block().num_ops();
  exec::PlanOptions plan_options{.profile = options.profile, .cuda_graph = options.cuda_graph};
  bool partial = !options.op_range.empty();
  if (partial) {
    PC_ASSIGN_OR_RETURN(auto range, ParseOpRange(options.op_range, num_ops));
    plan_options.op_begin = range.first;
    plan_options.op_end = range.second;
  } else if (std::vector<std::string> missing = Unfed(*session, scope_in); !missing.empty()) {
    std::string names;
    for (const auto& n : missing) names += (names.empty() ? "'" : ", '") + n + "'";
    return MakeError(ErrorCode::kInvalidArgument, "missing input{} {}", missing.size() > 1 ? "s" : "", names)
        .Note("pass each as --feed NAME=FILE.npy (or --feed FILE.npz), or make them with --fill random|zeros|ones");
  }

  if (!options.params.empty()) PC_RETURN_IF_ERROR(session->LoadParameters(options.params));
  else PC_RETURN_IF_ERROR(session->InitializeParameters());
  // After the parameters: a continued run finds them as the earlier range left them.
  for (const auto& [name, t] : scope_in)
    PC_RETURN_IF_ERROR(session->executor().device().CopyFromHost(t, session->scope().Var(name).tensor()));

  PC_ASSIGN_OR_RETURN(auto plan, session->executor().Prepare(session->main_block(), session->scope(), plan_options));
  // With several steps the first is the warm-up (buffers allocated, caches cold): it is reported
  // apart and kept out of the profile and the step statistics.
  bool warm_up = options.steps > 1;
  if (warm_up) plan->set_profiling(false);
  std::vector<double> step_ms;
  double warm_up_ms = 0;
  // Fetch everything before writing anything, so a failure leaves no partial output. With
  // --each-step, every step's values (a training program's loss per step), stacked.
  std::vector<std::pair<std::string, std::vector<runtime::Tensor>>> per_step;
  for (const auto& f : fetches) per_step.emplace_back(f, std::vector<runtime::Tensor>{});
  for (int i = 0; i < options.steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    PC_RETURN_IF_ERROR(plan->Run());
    PC_RETURN_IF_ERROR(session->executor().device().Synchronize());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (options.each_step || i + 1 == options.steps)
      for (auto& [name, values] : per_step) {
        PC_ASSIGN_OR_RETURN(runtime::Tensor t, session->Fetch(name));
        values.push_back(std::move(t));
      }
    if (warm_up && i == 0) {
      warm_up_ms = ms;
      plan->set_profiling(options.profile);
      continue;
    }
    step_ms.push_back(ms);
  }
  io::NamedTensors results;
  for (const auto& [name, values] : per_step) {
    PC_ASSIGN_OR_RETURN(runtime::Tensor t, options.each_step ? Stack(values, *host_alloc) : values.back());
    results.emplace_back(name, std::move(t));
  }
  if (!options.save_params.empty()) PC_RETURN_IF_ERROR(session->SaveParameters(options.save_params));
  if (!options.scope_out.empty()) PC_RETURN_IF_ERROR(WriteScopeOut(options.scope_out, *session, *host_alloc));
  if (options.out_dir.ends_with(".npz")) {
    PC_RETURN_IF_ERROR(io::WriteNpz(options.out_dir, results));
  } else if (!options.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.out_dir, ec);
    if (ec) return MakeError(ErrorCode::kIO, "cannot create output directory '{}': {}", options.out_dir, ec.message());
    for (const auto& [name, t] : results)
      PC_RETURN_IF_ERROR(io::WriteNpy((std::filesystem::path(options.out_dir) / FileNameFor(name)).string(), t));
  } else {
    for (size_t i = 0; i < (options.each_step ? static_cast<size_t>(options.steps) : 1); ++i)
      for (const auto& [name, values] : per_step)
        out << (options.each_step ? fmt::format("step {}  ", i + 1) : "") << Summary(name, values[i]) << "\n";
  }

  if (options.steps > 1 || options.profile) {
    std::vector<double> sorted = step_ms;
    std::sort(sorted.begin(), sorted.end());
    if (warm_up) out << fmt::format("warm-up step: {:.4g} ms (not in the figures below)\n", warm_up_ms);
    out << fmt::format("{} step(s): median {:.4g} ms, min {:.4g} ms\n", sorted.size(), sorted[sorted.size() / 2],
                       sorted.front());
  }
  if (options.profile) {
    if (!warm_up)
      out << "note: the profile is of one step, the warm-up included; use --steps N for steady-state steps\n";
    double total = plan->profiled_ms();
    out << fmt::format("{:<28} {:>8} {:>12} {:>8}\n", "op type", "calls", "total ms", "% step");
    for (const auto& p : plan->ProfileByType())
      out << fmt::format("{:<28} {:>8} {:>12.3f} {:>7.1f}%\n", p.type, p.calls, p.total_ms,
                         total > 0 ? 100.0 * p.total_ms / total : 0.0);
  }
  return Status::OK();
}

}  // namespace paddlec::driver
