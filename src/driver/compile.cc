// `paddlec compile`: parse a program, run the pass pipeline, write the CompiledProgram.
#include <spdlog/spdlog.h>

#include <chrono>
#include <ostream>

#include "paddlec/driver/driver.h"
#include "paddlec/ir/printer.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/passes/signature.h"

namespace paddlec::driver {

Status RunCompile(const CompileOptions& options, std::ostream& out) {
  auto t0 = std::chrono::steady_clock::now();
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

  passes::PassManagerOptions pm_options;
  pm_options.verify_each = options.verify_each;
  pm_options.print_ir_after = options.print_ir_after;
  pm_options.stop_after = options.stop_after;
  passes::PassManager pm(pm_options);
  if (!options.pipeline_file.empty()) PC_RETURN_IF_ERROR(pm.AddPipelineFile(options.pipeline_file));
  else PC_RETURN_IF_ERROR(pm.AddPipeline(options.passes));

  PC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, ir::LoadModule(options.input, in_format));
  auto t_parsed = std::chrono::steady_clock::now();

  const ops::OpRegistry& registry = ops::GlobalOpRegistry();
  passes::PassContext ctx{registry};
  PC_RETURN_IF_ERROR(pm.Run(*module, ctx));
  passes::ComputeSignature(*module);
  auto t_passes = std::chrono::steady_clock::now();

  if (options.print_shapes) out << ir::FormatShapes(module->main());
  if (options.output == "-") {
    PC_ASSIGN_OR_RETURN(std::string bytes, ir::Serialize(module->compiled(), out_format));
    out << bytes;
  } else if (!options.output.empty()) {
    PC_RETURN_IF_ERROR(ir::SaveModule(*module, options.output, out_format));
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
  return Status::OK();
}

}  // namespace paddlec::driver
