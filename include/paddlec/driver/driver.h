// The driver: one function per `paddlec` subcommand, callable in-process.
//
// tools/paddlec/main.cc only parses flags into these option structs and calls Run<Command>;
// tests call the same functions. Each returns a Status; PrintError renders a failure the way the
// CLI does (error:/note: lines on stderr).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "paddlec/core/error.h"

namespace paddlec::runtime {
class Communicator;
}

namespace paddlec::driver {

/// Writes `e` as "error: ..." and "note: ..." lines.
void PrintError(const Error& e, std::ostream& err);
/// After a failure was printed: in a run of several ranks (mpirun) whose communicator exists, says
/// which rank failed and stops every rank (MPI_Abort), so none waits forever in a collective for
/// this one; otherwise does nothing.
void StopOtherRanks(std::ostream& err);
/// The same for a given communicator (nullptr: nothing to stop).
void StopOtherRanks(runtime::Communicator* comm, std::ostream& err);

/// The default compile pipeline: the program as written (training-mode batch_norm stays so).
inline constexpr const char* kDefaultPipeline = "validate,infer-shape,init-params";
/// The pipeline of --inference: inference mode (is_test) and the inference fusions.
inline constexpr const char* kInferencePipeline = "validate,infer-shape,for-test,fuse-conv-bn-act,init-params";
/// --inference for a bare program (a .pdmodel for PaddlePaddle, which lacks paddlec's fused ops).
inline constexpr const char* kInferencePipelineUnfused = "validate,infer-shape,for-test,init-params";

struct CompileOptions {
  std::string input;
  std::string input_format;   // "" = from the extension or the content
  std::string output;         // "" = write nothing; "-" = stdout
  std::string output_format;  // "" = from the output's extension (text on stdout)
  /// What to write: "compiled" (a CompiledProgram), "program" (only the main ProgramDesc, which is
  /// what PaddlePaddle reads as a .pdmodel) or "dot" (a Graphviz graph of the main program, to
  /// stdout without -o). "" = "program" for .pdmodel outputs, "dot" for .dot ones, else "compiled".
  std::string emit;
  bool print_shapes = false;
  /// Compile for inference (kInferencePipeline) instead of `passes`.
  bool inference = false;
  std::string passes = kDefaultPipeline;
  /// -O0/-O1/-O2: the optimization passes appended to the pipeline (OptimizationPasses); -1 keeps
  /// `passes` (or the inference / training pipeline) as it is.
  int opt_level = -1;
  std::string pipeline_file;  // a PassPipeline textproto; replaces `passes`
  std::vector<std::string> print_ir_before, print_ir_after;  // pass names or "all"
  bool verify_each = false;
  int stop_after = -1;
  bool time_passes = false;
  /// Leave the compiled module allocated when RunCompile returns (clang's -disable-free): the CLI
  /// exits right after, and freeing a large program's messages and source map costs as much as a
  /// third of an end-to-end compile. Library callers keep the default.
  bool disable_free = false;
  /// A separate startup ProgramDesc (PaddlePaddle keeps parameter initializers there).
  std::string startup;

  // Training: with `train`, the pipeline gains backward and optimizer passes.
  bool train = false;
  std::string loss;             // "" = the one scalar output no op reads
  std::string optimizer = "sgd";
  double lr = 0.01;
  double momentum = 0.9;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  bool lazy = false;  // adam: a sparse gradient updates only its rows (PaddlePaddle's lazy_mode)
  double weight_decay = 0;
  double clip_norm = 0;
  std::vector<std::string> no_grad;
  /// Data parallelism (pass "data-parallel"): average gradients over `nranks` ranks (0: the
  /// launcher's), `bucket_mb` MiB per allreduce, batch_norm statistics averaged when `sync_bn`.
  bool data_parallel = false;
  int nranks = 0;
  double bucket_mb = 25;
  bool sync_bn = false;
};

/// The optimization passes of -O`level` (0, 1 or 2) after a pipeline's other passes: -O1 folds
/// constants, fuses (fc, element-wise op + activation; conv + batch_norm + relu for inference) and
/// removes dead code, -O2 also plans memory. "" for -O0.
std::string OptimizationPasses(int level, bool inference);

/// The pass pipeline `compile` runs for these options (exposed for tests and `train`).
std::string CompilePipeline(const CompileOptions& options);

/// `paddlec compile`: parse, run the pass pipeline, write the CompiledProgram.
Status RunCompile(const CompileOptions& options, std::ostream& out);

struct DumpOpProtosOptions {
  std::string format = "json";  // json | text | md
  std::vector<std::string> ops;  // empty = all
};

struct RunOptions {
  std::string program;
  std::string input_format;
  std::string device = "cpu";
  std::vector<std::string> feeds;         // NAME=FILE.npy, or FILE.npz (each array feeds the input of its name)
  std::vector<std::string> lods;          // NAME=0,2,5[;...]: the LoD of a fed input (a sequence batch)
  std::vector<std::string> input_shapes;  // NAME:D0xD1x...: the shape of an input made by `fill`
  std::string fill;                       // random | zeros | ones: make the inputs not fed ("" = random if
                                          // input_shapes is set, else none)
  std::vector<std::string> fetches;  // empty = the program's fetch targets
  std::string out_dir;               // write NAME.npy per fetch here, or all into one FILE.npz; "" = print
  std::string startup;               // a separate startup ProgramDesc (PaddlePaddle's initializers)
  std::string params;                // load parameters from this file instead of the startup program
  std::string save_params;           // write the parameters here after the run
  std::string op_range;              // "FROM:TO" = run only main-program ops [FROM, TO)
  std::string scope_in;   // FILE.npz: variables put in the scope before the run (an earlier range's)
  std::string scope_out;  // FILE.npz: every variable holding a value after the run
  bool inference = false;            // compile an uncompiled program with kInferencePipeline
  int opt_level = -1;                // -O0/-O1/-O2 for an uncompiled program (CompileOptions::opt_level)
  int steps = 1;
  bool each_step = false;  // fetch after every step: one line (or one .npy row) per step
  bool profile = false;
  bool cuda_graph = false;           // replay the steady-state step as a CUDA graph (GPU)
  uint64_t seed = 0;
  int threads = 0;
  bool keep_denormals = false;  // CPU: IEEE gradual underflow instead of FTZ/DAZ
  bool check_nan_inf = false;   // fail at the first op whose output holds a NaN or Inf
};

/// `paddlec run`: initialize or load parameters, feed, run the main program, fetch.
Status RunRun(const RunOptions& options, std::ostream& out);

struct TrainOptions {
  std::string program;
  std::string input_format;
  std::string dataset = "fashion-mnist";  // "fashion-mnist[:DIR]" (DIR holds the four IDX files)
  int epochs = 1;
  int batch_size = 64;
  std::string device = "cpu";
  std::string save_dir;        // checkpoints: DIR/epoch-NNNN/{params.pdiparams,checkpoint.json}, DIR/LATEST
  std::string resume;          // a checkpoint directory, or a --save directory (its LATEST)
  int eval_every = 0;          // also evaluate every N steps (0: at the end of each epoch only)
  std::string metrics_file;    // one JSON object per evaluation
  uint64_t seed = 1;
  int threads = 0;
  bool keep_denormals = false;  // CPU: IEEE gradual underflow instead of FTZ/DAZ
  bool check_nan_inf = false;   // fail at the first op whose output holds a NaN or Inf
  int64_t limit_train = 0;     // use only the first N training / test samples (0: all)
  int64_t limit_test = 0;
  std::string normalize = "unit";  // unit | meanstd
  std::string image_var, label_var, predictions_var;  // "" = found from the program
  std::string save_params;     // after training, write the parameters (model only) here
  bool progress = true;
  bool cuda_graph = false;     // replay the training step as a CUDA graph (GPU)
  bool allow_nonfinite_loss = false;  // keep training when the loss is NaN/Inf (default: stop with an error)
  /// How to compile a program that has no backward ops yet (optimizer, lr, ...).
  CompileOptions compile;
};

/// `paddlec train`: compile for training if needed, train on a dataset, evaluate, checkpoint.
Status RunTrain(const TrainOptions& options, std::ostream& out);

/// `paddlec dump-opprotos`: every registered OpProto with defaults and checks, sorted by type.
Status RunDumpOpProtos(const DumpOpProtosOptions& options, std::ostream& out);

struct ListPassesOptions {
  std::string format = "text";  // text | md (docs/passes.md)
};
/// `paddlec list-passes`: every pass of passes.def with its summary and options.
Status RunListPasses(const ListPassesOptions& options, std::ostream& out);

/// One keyword argument of a generated Python operator function (`paddlec gen-python`).
struct PythonArg {
  enum class Kind { kInput, kOutput, kAttr };
  Kind kind;
  std::string proto_name;   // the slot or attribute name in the OpProto
  std::string python_name;  // the keyword: snake_case; a slot colliding with an attribute gets "_var"
};
/// The keyword arguments of op `op_type`'s function, in signature order: input slots, output slots,
/// then attributes (each in proto order; attributes flagged extra are left out).
StatusOr<std::vector<PythonArg>> PythonArgs(std::string_view op_type);
/// The name of op `op_type`'s function.
std::string PythonFunctionName(std::string_view op_type);
/// The source of the Python module of operator functions (paddlec.ops), one function per op.
std::string GeneratePythonOps();

struct GenPythonOptions {
  std::string output;  // "" or "-" = stdout
};
/// `paddlec gen-python`: writes GeneratePythonOps() to a file (atomically) or to `out`.
Status RunGenPython(const GenPythonOptions& options, std::ostream& out);

}  // namespace paddlec::driver
