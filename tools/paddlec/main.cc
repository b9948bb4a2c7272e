// paddlec: the command-line driver. Parses flags with CLI11 and calls paddlec::driver::Run<Command>;
// everything else lives in the library so every command is testable in-process.
#include <fmt/ranges.h>
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "paddlec/core/env.h"
#include "paddlec/core/logging.h"
#include "paddlec/core/suggest.h"
#include "paddlec/driver/driver.h"
#include "paddlec/runtime/threads.h"

namespace {

using paddlec::Status;
namespace driver = paddlec::driver;

/// Help without CLI11's raw type and default decorations ("TEXT:{a,b}=a", "{false}"): a value
/// placeholder after the option, and "(default: X)" after its description.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    std::string type = opt->get_type_name();
    if (opt->get_type_size() == 0 || type.empty()) return "";  // a flag
    type = type.substr(0, type.find(':'));
    std::string out = " " + (type == "TEXT" ? std::string("VALUE") : type);
    if (opt->get_items_expected_max() >= CLI::detail::expected_max_vector_size) out += " ...";
    if (opt->get_required()) out += " REQUIRED";
    return out;
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string desc = opt->get_description();
    if (opt->get_type_size() != 0 && !opt->get_default_str().empty())
      desc += " (default: " + opt->get_default_str() + ")";
    return desc;
  }
};

/// Each occurrence of a repeatable option takes exactly one value, so `--fetch prob PROGRAM`
/// leaves PROGRAM to the positional.
CLI::Option* Repeatable(CLI::Option* o) { return o->allow_extra_args(false); }

/// The subcommand that was chosen and the function that runs it.
struct Command {
  CLI::App* app = nullptr;
  std::function<Status()> run;
};

void AddTrainingFlags(CLI::App& c, driver::CompileOptions& o);

Command AddCompile(CLI::App& app, driver::CompileOptions& o) {
  CLI::App* c = app.add_subcommand("compile", "Validate a program, infer its shapes, run passes, write the result");
  c->add_option("input", o.input, "Program to compile (.pbtxt, .pb/.pdmodel, .json, or a compiled program)")
      ->required();
  c->add_option("-o,--output", o.output, "Write the CompiledProgram here ('-' for stdout)");
  c->add_option("--format", o.output_format, "Output format: text, binary or json (default: from -o's extension)")
      ->check(CLI::IsMember({"text", "binary", "json"}));
  c->add_option("--input-format", o.input_format, "Input format when the extension does not tell")
      ->check(CLI::IsMember({"text", "binary", "json"}));
  c->add_option("--emit", o.emit,
                "compiled (CompiledProgram), program (bare ProgramDesc, as a .pdmodel) or dot (a Graphviz graph: "
                "render it with dot -Tsvg); default: from -o's extension (.pdmodel: program, .dot: dot)")
      ->check(CLI::IsMember({"compiled", "program", "dot"}));
  c->add_flag("--print-shapes", o.print_shapes, "Print every variable's dtype and dims after compiling");
  c->add_flag("--inference", o.inference,
              "Compile for inference: is_test on every op that has it, then the inference fusions");
  c->add_option("--passes", o.passes, "Pass pipeline, e.g. 'validate,infer-shape'")->capture_default_str();
  c->add_option("--pipeline", o.pipeline_file, "Pass pipeline file (PassPipeline textproto), instead of --passes");
  Repeatable(c->add_option("--print-ir-before", o.print_ir_before,
                           "Print the IR listing to stderr before the named pass (or 'all')"))
      ->delimiter(',');
  Repeatable(c->add_option("--print-ir-after", o.print_ir_after,
                           "Print the IR listing to stderr after the named pass (or 'all'); for the full textproto "
                           "use --stop-after N -o - --format=text"))
      ->delimiter(',');
  c->add_flag("--verify-each", o.verify_each, "Check the program against the op protos after every pass");
  c->add_option("--stop-after", o.stop_after, "Run only the first N passes")->check(CLI::NonNegativeNumber);
  c->add_flag("--time-passes", o.time_passes, "Print the time spent parsing, in each pass and writing");
  c->add_option("--startup", o.startup, "A separate startup ProgramDesc (PaddlePaddle's parameter initializers)");
  c->add_flag("--train", o.train, "Append backward and optimizer ops (a training program)")->group("Training");
  AddTrainingFlags(*c, o);
  c->add_option("-O,--opt-level", o.opt_level, "Optimization level: 0 none, 1 fusions, 2 fusions and memory planning")
      ->check(CLI::Range(0, 2));
  return {c, [&o] {
            o.disable_free = true;  // the process ends right after
            return driver::RunCompile(o, std::cout);
          }};
}

/// The flags that choose how a program is compiled for training (compile --train, and train).
void AddTrainingFlags(CLI::App& c, driver::CompileOptions& o) {
  const char* g = "Training";
  c.add_option("--loss", o.loss, "The loss variable (default: the one unread scalar)")->group(g);
  c.add_option("--optimizer", o.optimizer, "sgd, momentum or adam")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}))
      ->capture_default_str()
      ->group(g);
  c.add_option("--lr", o.lr, "Learning rate")->capture_default_str()->check(CLI::PositiveNumber)->group(g);
  c.add_option("--momentum", o.momentum, "Momentum's decay (--optimizer=momentum)")->capture_default_str()->group(g);
  c.add_flag("--nesterov", o.nesterov, "Nesterov momentum")->group(g);
  c.add_option("--beta1", o.beta1, "Adam's first-moment decay")->capture_default_str()->group(g);
  c.add_option("--beta2", o.beta2, "Adam's second-moment decay")->capture_default_str()->group(g);
  c.add_option("--epsilon", o.epsilon, "Adam's epsilon")->capture_default_str()->group(g);
  c.add_flag("--lazy", o.lazy,
             "Adam: a sparse gradient (an is_sparse embedding's) updates only the rows it holds (lazy_mode), so a "
             "step costs the rows a batch touches, not the table")
      ->group(g);
  c.add_option("--weight-decay", o.weight_decay, "L2 weight decay for every parameter")->group(g);
  c.add_option("--clip-norm", o.clip_norm, "Clip gradients to this global L2 norm")->group(g);
  Repeatable(c.add_option("--no-grad", o.no_grad, "Variables that get no gradient (frozen)"))->delimiter(',')->group(g);
  const char* dp = "Data parallel";
  c.add_flag(
       "--data-parallel", o.data_parallel,
       "Average gradients over the ranks of mpirun (pass data-parallel); each rank trains on its part of the batch")
      ->group(dp);
  c.add_option("--nranks", o.nranks, "Ranks to compile for (default: mpirun's, 1 without it)")
      ->check(CLI::NonNegativeNumber)
      ->group(dp);
  c.add_option("--bucket-mb", o.bucket_mb, "MiB of gradients per allreduce")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group(dp);
  c.add_flag("--sync-bn", o.sync_bn,
             "Synchronized batch norm: training batch_norm normalizes with the global batch's statistics "
             "(sync_batch_norm, CPU only)")->group(dp);
}

Command AddTrain(CLI::App& app, driver::TrainOptions& o) {
  CLI::App* c = app.add_subcommand("train", "Train a program on a dataset, evaluating and checkpointing");
  c->add_option("program", o.program, "A forward program (compiled for training on the fly) or `compile --train` output")
      ->required();
  c->add_option("--dataset", o.dataset, "fashion-mnist[:DIR] or mnist:DIR (four IDX files, .gz or plain)")
      ->capture_default_str();
  c->add_option("--epochs", o.epochs, "Epochs to train")->capture_default_str();
  c->add_option("--batch-size", o.batch_size, "Samples per step")->capture_default_str();
  c->add_option("--device", o.device, "cpu, gpu or gpu:N")->capture_default_str();
  c->add_option("--save", o.save_dir, "Write a checkpoint here after each epoch (DIR/epoch-N, DIR/LATEST)");
  c->add_option("--resume", o.resume, "Continue from a checkpoint (or the LATEST one of a --save directory)");
  c->add_option("--eval-every", o.eval_every, "Also evaluate on the test set every N steps");
  c->add_option("--metrics", o.metrics_file, "Append one JSON line per evaluation to this file");
  c->add_option("--seed", o.seed, "Seed of parameter initialization, shuffling and random ops")->capture_default_str();
  c->add_option("--threads", o.threads, "CPU threads (default: one per core)");
  c->add_flag("--keep-denormals", o.keep_denormals,
              "CPU: keep IEEE denormals (gradual underflow) instead of flushing them to zero (FTZ/DAZ)");
  c->add_flag("--check-nan-inf", o.check_nan_inf,
              "After every op (forward, backward, optimizer), fail at the first NaN or Inf in its outputs");
  c->add_option("--limit-train", o.limit_train, "Use only the first N training samples");
  c->add_option("--limit-test", o.limit_test, "Use only the first N test samples");
  c->add_option("--normalize", o.normalize, "Pixel scaling: unit ([0, 1]) or meanstd")
      ->check(CLI::IsMember({"unit", "meanstd"}))
      ->capture_default_str();
  c->add_option("--image-var", o.image_var, "The image input (default: the float input)");
  c->add_option("--label-var", o.label_var, "The label input (default: the integer input)");
  c->add_option("--predictions-var", o.predictions_var, "The class scores (default: the last [batch, classes] output)");
  c->add_option("--save-params", o.save_params, "Write the trained model's parameters here at the end");
  c->add_flag("--allow-nonfinite-loss", o.allow_nonfinite_loss,
              "Keep training when the loss becomes NaN or Inf (by default the run stops with an error before "
              "the epoch's checkpoint, keeping the last good one)");
  c->add_option("--startup", o.compile.startup,
                "The startup ProgramDesc of a program that holds its own training ops (PaddlePaddle's)");
  c->add_flag_callback(
      "--no-progress", [&o] { o.progress = false; }, "No progress bar while training (as -q)");
  c->add_flag("--cuda-graph", o.cuda_graph, "GPU: record the training step once as a CUDA graph and replay it");
  c->add_option("--input-format", o.input_format, "Program format when the extension does not tell")
      ->check(CLI::IsMember({"text", "binary", "json"}));
  o.compile.optimizer = "adam";
  o.compile.lr = 0.001;
  AddTrainingFlags(*c, o.compile);
  c->add_option("-O,--opt-level", o.compile.opt_level,
                "Optimization level: 0 none, 1 fusions, 2 fusions and memory planning")
      ->check(CLI::Range(0, 2));
  return {c, [&o] { return driver::RunTrain(o, std::cout); }};
}

Command AddRun(CLI::App& app, driver::RunOptions& o) {
  CLI::App* c = app.add_subcommand("run", "Run a program on .npy inputs and write or print the fetched tensors");
  c->add_option("program", o.program, "Program (.pbtxt, .pb/.pdmodel, .json, or from `paddlec compile`)")->required();
  c->add_option("--device", o.device, "cpu, gpu or gpu:N")->capture_default_str();
  Repeatable(c->add_option("--feed", o.feeds,
                           "NAME=FILE.npy, or FILE.npz feeding each array to the input of its name (repeatable)"));
  Repeatable(c->add_option("--lod", o.lods,
                           "NAME=OFFSETS (repeatable): the fed input's sequence offsets (LoD), e.g. words=0,2,5; "
                           "levels separated by ';'"));
  Repeatable(c->add_option("--input-shape", o.input_shapes,
                           "NAME:D0xD1x... (repeatable): the shape of an input made by --fill, e.g. img:1x3x224x224"));
  c->add_option("--fill", o.fill,
                "Make the inputs not fed: random (seeded by --seed), zeros or ones; random when --input-shape is "
                "given")
      ->check(CLI::IsMember({"random", "zeros", "ones"}));
  Repeatable(c->add_option("--fetch", o.fetches, "Variable to fetch (repeatable; default: the program's outputs)"));
  c->add_option("--out", o.out_dir,
                "Write the fetched variables into FILE.npz, or as DIR/NAME.npy each, instead of printing them");
  c->add_option("--startup", o.startup, "A separate startup ProgramDesc (PaddlePaddle's parameter initializers)");
  c->add_option("--params", o.params, "Load parameters from this file (PaddlePaddle combined format)");
  c->add_option("--save-params", o.save_params, "Write the parameters to this file after the run");
  c->add_option("--op-range", o.op_range, "Run only main-program ops [FROM, TO), e.g. 0:5");
  c->add_option("--scope-in", o.scope_in,
                "FILE.npz: put its arrays in the scope before running (a --scope-out of an earlier --op-range)");
  c->add_option("--scope-out", o.scope_out,
                "FILE.npz: write every variable of the scope that holds a value after the run, so a later "
                "--op-range can continue from it");
  c->add_flag("--inference", o.inference, "Compile the program for inference (as compile --inference) first");
  c->add_option("-O,--opt-level", o.opt_level, "Optimization level: 0 none, 1 fusions, 2 fusions and memory planning")
      ->check(CLI::Range(0, 2));
  c->add_option("--steps", o.steps, "Run the program this many times (timing)")->capture_default_str();
  c->add_flag("--each-step", o.each_step,
              "Fetch after every step: one line per step, or with --out each fetch stacked as [steps, ...]");
  c->add_flag("--profile", o.profile, "Print time per op type over the steps after the warm-up step");
  c->add_flag("--cuda-graph", o.cuda_graph, "GPU: record the steady-state step once as a CUDA graph and replay it");
  c->add_option("--seed", o.seed, "Program random seed (random ops with seed 0 derive theirs from it)");
  c->add_option("--threads", o.threads, "CPU threads (default: one per core)");
  c->add_flag("--keep-denormals", o.keep_denormals,
              "CPU: keep IEEE denormals (gradual underflow) instead of flushing them to zero (FTZ/DAZ)");
  c->add_flag("--check-nan-inf", o.check_nan_inf,
              "After every op (forward, backward, optimizer), fail at the first NaN or Inf in its outputs");
  c->add_option("--input-format", o.input_format, "Program format when the extension does not tell")
      ->check(CLI::IsMember({"text", "binary", "json"}));
  return {c, [&o] { return driver::RunRun(o, std::cout); }};
}

Command AddDumpOpProtos(CLI::App& app, driver::DumpOpProtosOptions& o) {
  CLI::App* c = app.add_subcommand("dump-opprotos", "Print every registered OpProto with defaults and checks");
  c->add_option("--format", o.format,
                "json, text, md (the generated operator reference) or paddle-md (the PaddlePaddle op table)")
      ->check(CLI::IsMember({"json", "text", "md", "paddle-md"}))
      ->capture_default_str();
  Repeatable(c->add_option("--op", o.ops, "Only these ops (repeatable)"));
  return {c, [&o] { return driver::RunDumpOpProtos(o, std::cout); }};
}

Command AddListPasses(CLI::App& app, driver::ListPassesOptions& o) {
  CLI::App* c = app.add_subcommand("list-passes", "List the compile passes with their options");
  c->add_option("--format", o.format, "text or md (the generated pass list)")
      ->check(CLI::IsMember({"text", "md"}))
      ->capture_default_str();
  return {c, [&o] { return driver::RunListPasses(o, std::cout); }};
}

Command AddGenPython(CLI::App& app, driver::GenPythonOptions& o) {
  CLI::App* c = app.add_subcommand("gen-python", "Write the Python operator functions (paddlec.ops) generated from the OpProtos");
  c->add_option("-o,--output", o.output, "Write the module here (default: stdout)");
  return {c, [&o] { return driver::RunGenPython(o, std::cout); }};
}

}  // namespace

int main(int argc, char** argv) {
  // The commands that run kernels start over once with libgomp's spin bounded (runtime/threads.h).
  if (argc > 1 && (std::string_view(argv[1]) == "run" || std::string_view(argv[1]) == "train")) {
    // Before the copy starts: the error is given once, and nothing has run under a misspelled switch.
    if (paddlec::Status st = paddlec::CheckEnvSwitches(); !st.ok()) {
      std::cerr << st.error().Render();
      return 2;
    }
    paddlec::runtime::ReexecWithBoundedSpin(argv);
    paddlec::runtime::BindTeamsToCpus();  // this process's threads are its own
  }
  // glibc returns freed large blocks to the OS and page-faults them back on the next parse or GEMM
  // buffer (2-4x slower first parses here, docs/performance.md); keep them instead.
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  CLI::App app{"paddlec: a compiler and runtime for PaddlePaddle ProgramDescs"};
  app.set_version_flag("--version", std::string("paddlec ") + PADDLEC_VERSION);
  app.formatter(std::make_shared<HelpFormatter>());
  app.require_subcommand(1);
  app.fallthrough();
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "More logging on stderr (-v info, -vv debug)");
  app.add_flag("-q,--quiet", quiet, "Only errors on stderr");

  driver::CompileOptions compile;
  driver::RunOptions run;
  driver::TrainOptions train;
  driver::DumpOpProtosOptions dump;
  driver::GenPythonOptions gen_python;
  driver::ListPassesOptions list_passes;
  std::vector<Command> commands = {AddCompile(app, compile),
                                   AddRun(app, run),
                                   AddTrain(app, train),
                                   AddDumpOpProtos(app, dump),
                                   AddListPasses(app, list_passes),
                                   AddGenPython(app, gen_python)};

  // CLI11 reports a mistyped command as "A subcommand is required", and a mistyped flag as an
  // unexpected argument; say what went wrong, with the likely intended name.
  std::vector<std::string> command_names;
  for (const Command& c : commands) command_names.push_back(c.app->get_name());
  const CLI::App* chosen = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.starts_with("--") && arg != "--help" && arg != "--version") {
      std::string name(arg.substr(0, arg.find('=')));
      const CLI::App* scope = chosen != nullptr ? chosen : &app;
      if (scope->get_option_no_throw(name) != nullptr || app.get_option_no_throw(name) != nullptr) continue;
      std::vector<std::string> known;
      for (const CLI::App* a : {scope, static_cast<const CLI::App*>(&app)})
        for (const CLI::Option* o : a->get_options())
          for (const std::string& l : o->get_lnames()) known.push_back("--" + l);
      std::cerr << "error: unknown option '" << name << "'"
                << (chosen != nullptr ? " for '" + chosen->get_name() + "'" : std::string()) << "\n";
      if (std::string hint = paddlec::ClosestName(name, known); !hint.empty())
        std::cerr << "note: did you mean '" << hint << "'?\n";
      std::cerr << "note: run 'paddlec " << (chosen != nullptr ? chosen->get_name() + " " : std::string())
                << "--help' for the options\n";
      return 2;
    }
    if (arg.starts_with("-") || chosen != nullptr) continue;
    for (const Command& c : commands)
      if (c.app->get_name() == arg) chosen = c.app;
    if (chosen == nullptr) {
      std::cerr << "error: unknown command '" << arg << "'\n";
      if (std::string hint = paddlec::ClosestName(arg, command_names); !hint.empty())
        std::cerr << "note: did you mean '" << hint << "'?\n";
      std::cerr << "note: commands are: " << fmt::format("{}", fmt::join(command_names, ", ")) << "\n";
      return 2;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\n";
    std::cerr << "note: run 'paddlec --help' or 'paddlec <command> --help' for usage\n";
    return 2;
  }
  paddlec::InitLogging(quiet ? -1 : verbosity);
  if (quiet) train.progress = false;

  try {
    for (const Command& c : commands) {
      if (!c.app->parsed()) continue;
      Status st = c.run();
      if (!st.ok()) {
        driver::PrintError(st.error(), std::cerr);
        driver::StopOtherRanks(std::cerr);
        return 1;
      }
      return 0;
    }
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: internal error: " << e.what() << "\n";
    driver::StopOtherRanks(std::cerr);
    return 1;
  }
  return 0;
}
