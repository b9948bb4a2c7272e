// Running pipelines of passes, with verification, IR printing and timing.
#include "paddlec/passes/pass_manager.h"

#include <google/protobuf/text_format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "paddlec/core/file.h"
#include "paddlec/ir/printer.h"
#include "paddlec/ops/op_checker.h"

namespace paddlec::passes {

StatusOr<std::vector<std::pair<std::string, std::map<std::string, std::string>>>> ParsePipelineSpec(
    std::string_view spec) {
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> out;
  size_t i = 0;
  auto trim = [](std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return std::string(s);
  };
  while (i < spec.size()) {
    size_t j = spec.find_first_of(",{", i);
    std::string name = trim(spec.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    std::map<std::string, std::string> opts;
    if (j != std::string_view::npos && spec[j] == '{') {
      size_t close = spec.find('}', j);
      if (close == std::string_view::npos)
        return MakeError(ErrorCode::kInvalidArgument, "unbalanced '{{' in pass pipeline '{}'", spec);
      std::string_view body = spec.substr(j + 1, close - j - 1);
      size_t k = 0;
      while (k < body.size()) {
        size_t comma = body.find(',', k);
        std::string_view kv = body.substr(k, comma == std::string_view::npos ? std::string_view::npos : comma - k);
        size_t eq = kv.find('=');
        if (eq == std::string_view::npos)
          return MakeError(ErrorCode::kInvalidArgument, "pass option '{}' of '{}' is not key=value", trim(kv), name);
        opts[trim(kv.substr(0, eq))] = trim(kv.substr(eq + 1));
        if (comma == std::string_view::npos) break;
        k = comma + 1;
      }
      j = close + 1;
      while (j < spec.size() && std::isspace(static_cast<unsigned char>(spec[j]))) ++j;
      if (j < spec.size() && spec[j] != ',')
        return MakeError(ErrorCode::kInvalidArgument, "expected ',' after '}}' in pass pipeline '{}'", spec);
    }
    if (name.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty pass name in pipeline '{}'", spec);
    out.emplace_back(std::move(name), std::move(opts));
    if (j == std::string_view::npos || j >= spec.size()) break;
    i = j + 1;
  }
  return out;
}

PassManager::PassManager(PassManagerOptions options) : options_(std::move(options)) {}
PassManager::~PassManager() = default;
PassManager::PassManager(PassManager&&) noexcept = default;

Status PassManager::AddPass(std::string_view name, const std::map<std::string, std::string>& options) {
  PC_ASSIGN_OR_RETURN(auto pass, CreatePass(name));
  PC_ASSIGN_OR_RETURN(PassOptions parsed, PassOptions::Parse(name, pass->Options(), options));
  PC_RETURN_IF_ERROR(pass->Configure(parsed));
  passes_.push_back({std::move(pass), std::move(parsed)});
  return Status::OK();
}

Status PassManager::AddPipeline(std::string_view spec) {
  PC_ASSIGN_OR_RETURN(auto entries, ParsePipelineSpec(spec));
  for (const auto& [name, opts] : entries) PC_RETURN_IF_ERROR(AddPass(name, opts));
  return Status::OK();
}

Status PassManager::AddPipelineFile(const std::string& path) {
  PC_ASSIGN_OR_RETURN(std::string text, ReadFile(path, 16 << 20));
  paddlec::proto::PassPipeline pipeline;
  if (!google::protobuf::TextFormat::ParseFromString(text, &pipeline))
    return MakeError(ErrorCode::kParse, "'{}' is not a PassPipeline textproto", path);
  for (const auto& p : pipeline.passes()) {
    std::map<std::string, std::string> opts;
    for (const auto& kv : p.options()) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos)
        return MakeError(ErrorCode::kInvalidArgument, "{}: option '{}' of pass '{}' is not key=value", path, kv,
                         p.name());
      opts[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    PC_RETURN_IF_ERROR(AddPass(p.name(), opts));
  }
  return Status::OK();
}

std::string PassManager::ToString() const {
  std::string s;
  for (const auto& e : passes_) {
    if (!s.empty()) s += ",";
    s += std::string(e.pass->Name());
    std::string o = e.options.ToString();
    if (!o.empty()) s += "{" + o + "}";
  }
  return s;
}

Status VerifyModule(ir::Module& module, const ops::OpRegistry& registry) {
  std::vector<Error> errors;
  ops::CheckOptions check{.fix = false};
  for (ir::Program* p : {&module.startup(), &module.main()}) {
    for (int b = 0; b < p->num_blocks(); ++b) {
      ir::Block& block = p->block(b);
      ops::CheckVars(block, errors);
      for (int i = 0; i < block.num_ops(); ++i) ops::CheckOp(block.op(i), registry, check, errors);
    }
  }
  return ops::ToStatus(std::move(errors));
}

namespace {

bool Named(const std::vector<std::string>& names, std::string_view pass) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n == "all" || n == pass; });
}

}  // namespace

Status PassManager::Run(ir::Module& module, PassContext& ctx) {
  std::ostream& ir_out = options_.ir_stream ? *options_.ir_stream : std::cerr;
  for (size_t i = 0; i < passes_.size(); ++i) {
    if (options_.stop_after >= 0 && static_cast<int>(i) >= options_.stop_after) {
      spdlog::info("stopping after {} pass(es) (--stop-after)", i);
      break;
    }
    Entry& e = passes_[i];
    if (Named(options_.print_ir_before, e.pass->Name()))
      ir_out << "# ----- IR before " << e.pass->Name() << " -----\n" << ir::FormatListing(module);
    auto start = std::chrono::steady_clock::now();
    StatusOr<bool> changed = e.pass->Run(module, ctx);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!changed.ok()) return std::move(changed).status();
    timings_.push_back({std::string(e.pass->Name()), ms, *changed});
    std::string applied(e.pass->Name());
    if (std::string o = e.options.ToString(); !o.empty()) applied += "{" + o + "}";
    module.compiled().add_passes_applied(applied);
    spdlog::debug("pass {}: {:.3f} ms{}", e.pass->Name(), ms, *changed ? " (changed)" : "");

    if (options_.verify_each) {
      Status v = VerifyModule(module, ctx.registry);
      if (!v.ok()) {
        Error err = std::move(v).TakeError();
        err.Note(fmt::format("the module no longer verifies after pass '{}' (--verify-each)", e.pass->Name()));
        return err;
      }
    }
    if (Named(options_.print_ir_after, e.pass->Name()))
      ir_out << "# ----- IR after " << e.pass->Name() << (*changed ? "" : " (unchanged)") << " -----\n"
             << ir::FormatListing(module);
  }
  return Status::OK();
}

}  // namespace paddlec::passes
