// `paddlec compile`: parse a program, run the pass pipeline, write the CompiledProgram.
#include <spdlog/spdlog.h>

#include <chrono>
#include <ostream>

#include "paddlec/core/file.h"
#include "paddlec/driver/driver.h"
#include "paddlec/ir/paddle_export.h"
#include "paddlec/ir/printer.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/passes/signature.h"
#include "session.h"

namespace paddlec::driver {

std::string OptimizationPasses(int level, bool inference) {
  std::string p;
  if (level >= 1)
    p += inference ? ",fold,fuse-conv-bn-act,fuse-conv-bias-act,fuse-conv-pool,fuse-fc,fuse-elementwise,dce"
                   : ",fold,fuse-conv-bias-act,fuse-fc,fuse-elementwise,dce";
  // layout renames the tensors it keeps blocked, so like plan-memory it belongs to -O2.
  if (level >= 2) p += ",layout,plan-memory";
  return p;
}

namespace {

/// The pipeline of the options before -O's passes.
std::string BasePipeline(const CompileOptions& o) {
  if (!o.train) {
    if (!o.inference) return o.passes;
    // kInferencePipeline is -O1's inference pipeline; -O levels rebuild it from its parts.
    return o.opt_level < 0 ? kInferencePipeline : "validate,infer-shape,for-test,init-params";
  }
  std::string no_grad;
  for (const auto& v : o.no_grad) no_grad += (no_grad.empty() ? "" : ";") + v;
  std::string backward = "backward";
  std::vector<std::string> bopts;
  if (!o.loss.empty()) bopts.push_back("loss=" + o.loss);
  if (!no_grad.empty()) bopts.push_back("no_grad=" + no_grad);
  if (!bopts.empty()) {
    backward += "{";
    for (size_t i = 0; i < bopts.size(); ++i) backward += (i ? "," : "") + bopts[i];
    backward += "}";
  }
  std::string opt = fmt::format("optimizer{{type={},lr={}", o.optimizer, o.lr);
  if (o.optimizer == "momentum") opt += fmt::format(",momentum={},nesterov={}", o.momentum, o.nesterov);
  if (o.optimizer == "adam") opt += fmt::format(",beta1={},beta2={},epsilon={}", o.beta1, o.beta2, o.epsilon);
  if (o.optimizer == "adam" && o.lazy) opt += ",lazy_mode=true";
  if (o.weight_decay > 0) opt += fmt::format(",weight_decay={}", o.weight_decay);
  if (o.clip_norm > 0) opt += fmt::format(",clip_norm={}", o.clip_norm);
  opt += "}";
  std::string dp;
  if (o.data_parallel)
    dp = fmt::format(",data-parallel{{nranks={},bucket_mb={},sync_bn={}}}", o.nranks, o.bucket_mb, o.sync_bn);
  return "validate,infer-shape," + backward + "," + opt + ",init-params" + dp;
}

}  // namespace

std::string CompilePipeline(const CompileOptions& o) {
  std::string base = BasePipeline(o);
  return o.opt_level < 0 ? base : base + OptimizationPasses(o.opt_level, o.inference && !o.train);
}

Status RunCompile(const CompileOptions& options, std::ostream& out) {
  auto t0 = std::chrono::steady_clock::now();
  if (options.train && options.inference)
    return MakeError(ErrorCode::kInvalidArgument, "--train and --inference exclude each other");
  std::optional<ir::Format> in_format;
  if (!options.input_format.empty()) {
    PC_ASSIGN_OR_RETURN(ir::Format f, ir::ParseFormat(options.input_format));
    in_format = f;
  }
  ir::Format out_format = ir::Format::kBinary;
  if (!options.output_format.empty()) {
    PC_ASSIGN_OR_RETURN(out_format, ir::ParseFormat(options.output_format));
  } else if (options.output == "-") {
    out_format = ir::Format::kText;
  } else if (!options.output.empty()) {
    out_format = ir::FormatFromPath(options.output).value_or(ir::Format::kBinary);
  }

  // A bare ProgramDesc is for PaddlePaddle, which has no fused_conv2d_bn_act and would not know
  // the variables -O2 renamed: optimized programs stay paddlec's own.
  std::string emit = options.emit;
  if (emit.empty())
    emit = FileExtension(options.output) == ".dot" ? "dot"
           : ir::IsBareProgramPath(options.output) ? "program"
                                                   : "compiled";
  if (emit != "program" && emit != "compiled" && emit != "dot")
    return MakeError(ErrorCode::kInvalidArgument, "--emit must be 'compiled', 'program' or 'dot', not '{}'", emit);
  if (emit == "program" && options.opt_level > 0)
    return MakeError(ErrorCode::kInvalidArgument,
                     "-O{} writes paddlec's fused ops and shared buffers, which PaddlePaddle cannot run, so it "
                     "cannot be combined with a .pdmodel (--emit=program) output",
                     options.opt_level)
        .Note("compile for PaddlePaddle without -O; -O is for paddlec's own outputs (.pb, .pbtxt, .json) and runs");

  passes::PassManagerOptions pm_options;
  pm_options.verify_each = options.verify_each;
  pm_options.print_ir_before = options.print_ir_before;
  pm_options.print_ir_after = options.print_ir_after;
  pm_options.stop_after = options.stop_after;
  passes::PassManager pm(pm_options);
  PC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, ir::LoadModule(options.input, in_format));
  if (!options.startup.empty()) PC_RETURN_IF_ERROR(AttachStartup(module, options.startup));
  CompileOptions effective = options;
  if (options.train && HasTrainingOps(*module)) {
    // PaddlePaddle's training programs carry their backward and optimizer ops: they are kept.
    spdlog::info("{} already holds backward and optimizer ops; --train appends none", options.input);
    effective.train = false;
  }
  if (effective.train && options.loss.empty()) {
    if (!module->compiled().loss().empty()) {
      effective.loss = module->compiled().loss();
    } else {
      PC_ASSIGN_OR_RETURN(effective.loss, GuessLoss(*module));
    }
  }
  // A bare program is for PaddlePaddle, which has none of paddlec's fused ops: --inference writes
  // it unfused.
  if (emit == "program" && options.inference && !options.train) {
    effective.inference = false;
    effective.passes = kInferencePipelineUnfused;
  }
  if (!options.pipeline_file.empty()) PC_RETURN_IF_ERROR(pm.AddPipelineFile(options.pipeline_file));
  else PC_RETURN_IF_ERROR(pm.AddPipeline(CompilePipeline(effective)));
  auto t_parsed = std::chrono::steady_clock::now();

  const ops::OpRegistry& registry = ops::GlobalOpRegistry();
  passes::PassContext ctx{registry};
  PC_RETURN_IF_ERROR(pm.Run(*module, ctx));
  passes::ComputeSignature(*module);
  auto t_passes = std::chrono::steady_clock::now();

  if (options.print_shapes) out << ir::FormatShapes(module->main());
  std::string bytes;
  if (emit == "dot") {
    bytes = ir::FormatDot(module->main());
  } else if (emit == "program" && !options.output.empty()) {
    // The bare program, as PaddlePaddle's loaders take it: feed and fetch ops for the signature.
    ir::pb::ProgramDesc for_paddle = module->compiled().main_program();
    std::vector<std::string> feeds,
        fetches(module->compiled().fetch_targets().begin(), module->compiled().fetch_targets().end());
    for (const auto& f : module->compiled().feed_targets()) feeds.push_back(f.name());
    PC_RETURN_IF_ERROR(ir::ExportForPaddle(for_paddle, feeds, fetches));
    PC_ASSIGN_OR_RETURN(bytes, ir::Serialize(for_paddle, out_format));
  } else if (!options.output.empty()) {
    PC_ASSIGN_OR_RETURN(bytes, ir::Serialize(module->compiled(), out_format));
  }
  // A graph goes to stdout unless -o names a file.
  if (options.output == "-" || (emit == "dot" && options.output.empty())) {
    out << bytes;
  } else if (!options.output.empty()) {
    PC_RETURN_IF_ERROR(WriteFileAtomic(options.output, bytes));
  }
  auto t_end = std::chrono::steady_clock::now();

  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  if (options.time_passes) {
    out << fmt::format("{:<16} {:>10}\n", "phase", "ms");
    out << fmt::format("{:<16} {:>10.3f}\n", "parse", ms(t0, t_parsed));
    for (const auto& t : pm.timings()) out << fmt::format("{:<16} {:>10.3f}\n", t.name, t.ms);
    out << fmt::format("{:<16} {:>10.3f}\n", "write", ms(t_passes, t_end));
    out << fmt::format("{:<16} {:>10.3f}\n", "total", ms(t0, t_end));
  }
  spdlog::info("compiled {}: {} ops in {} block(s), {:.1f} ms", options.input,
               module->main().global_block().num_ops(), module->main().num_blocks(), ms(t0, t_end));
  if (options.disable_free) {
    // Reachable from a static, so leak checkers see it as still in use rather than lost.
    static auto* kept = new std::vector<std::unique_ptr<ir::Module>>();
    kept->push_back(std::move(module));
  }
  return Status::OK();
}

}  // namespace paddlec::driver
