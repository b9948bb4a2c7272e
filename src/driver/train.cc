// `paddlec train`: the training loop over an image classification dataset, with evaluation,
// progress reporting, metrics, and atomic checkpoints that resume exactly.
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <thread>

#include "paddlec.pb.h"
#include "paddlec/core/file.h"
#include "paddlec/driver/driver.h"
#include "paddlec/io/checkpoint.h"
#include "paddlec/io/dataset.h"
#include "paddlec/io/params.h"
#include "paddlec/ir/op_role.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/runtime/comm.h"
#include "progress.h"
#include "session.h"

namespace paddlec::driver {
namespace {

namespace fs = std::filesystem;
namespace pb = ::paddle::framework::proto;
using Clock = std::chrono::steady_clock;

constexpr char kDefaultFashionMnist[] = "/usr/share/datasets/fashion-mnist";

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

/// What the training loop feeds and reads, found from the program unless given.
/// How the images are fed, chosen by the image input's declaration.
enum class ImageFeed {
  kPixels,    // a plain tensor of H*W pixels per image ([-1, 784], [-1, 1, 28, 28])
  kRows,      // a sequence batch (lod_level 1) of rows [-1, W]: each image's rows up to the last one with
              // ink, so that the lengths differ (a recurrent network's input, configs/dynamic_rnn_rows.py)
  kPatterns,  // a sequence batch of int64 ids [-1, 1]: each image's bag of hashed 4x4 pixel patterns, the
              // vocabulary being the rows of the embedding table they index (configs/sparse_bow.py)
};

struct Interface {
  std::string image, label, loss, predictions;
  Dims image_dims, label_dims;  // declared, batch dim -1
  ImageFeed feed = ImageFeed::kPixels;
  int64_t vocab = 0;  // kPatterns
};

bool IsSequence(const pb::VarDesc* v) {
  return v != nullptr && v->type().has_lod_tensor() && v->type().lod_tensor().lod_level() > 0;
}

/// The rows of the embedding table a lookup op reads `ids` into (0 when no lookup reads them).
int64_t LookupVocabulary(ir::Block& b, const std::string& ids) {
  for (const auto& op : b.desc().ops()) {
    if (op.type() != "lookup_table_v2" && op.type() != "lookup_table") continue;
    std::string table;
    bool reads = false;
    for (const auto& s : op.inputs()) {
      if (s.parameter() == "Ids") reads = std::find(s.arguments().begin(), s.arguments().end(), ids) != s.arguments().end();
      if (s.parameter() == "W" && s.arguments_size() == 1) table = s.arguments(0);
    }
    const pb::VarDesc* w = reads ? b.FindVar(table) : nullptr;
    if (w == nullptr) continue;
    auto d = ir::VarDims(*w);
    if (d.ok() && d->rank() == 2) return (*d)[0];
  }
  return 0;
}

StatusOr<Interface> FindInterface(ir::Module& m, const TrainOptions& o, int64_t width, int64_t pixels,
                                  int64_t classes) {
  Interface io;
  ir::Block& b = m.main().global_block();
  for (const auto& f : m.compiled().feed_targets()) {
    DType t = static_cast<DType>(f.data_type());
    bool ids = t == DType::kInt64 || t == DType::kInt32, sequence = IsSequence(b.FindVar(f.name()));
    // Integer sequences are words (pattern ids), not labels.
    if (o.image_var.empty() && (IsFloating(t) || (ids && sequence)) && io.image.empty()) io.image = f.name();
    if (o.label_var.empty() && ids && !sequence && io.label.empty()) io.label = f.name();
  }
  if (!o.image_var.empty()) io.image = o.image_var;
  if (!o.label_var.empty()) io.label = o.label_var;
  if (io.image.empty() || io.label.empty())
    return MakeError(ErrorCode::kInvalidArgument, "cannot find the image and label inputs of the program")
        .Note("name them with --image-var and --label-var");
  for (auto [name, dims] : {std::pair{&io.image, &io.image_dims}, std::pair{&io.label, &io.label_dims}}) {
    const pb::VarDesc* v = b.FindVar(*name);
    if (v == nullptr) return MakeError(ErrorCode::kNotFound, "the program has no variable '{}'", *name);
    PC_ASSIGN_OR_RETURN(*dims, ir::VarDims(*v));
  }
  const pb::VarDesc* image = b.FindVar(io.image);
  if (IsSequence(image)) io.feed = IsFloating(ir::VarDType(*image)) ? ImageFeed::kRows : ImageFeed::kPatterns;
  if (io.feed == ImageFeed::kRows && (io.image_dims.rank() != 2 || io.image_dims[1] != width))
    return MakeError(ErrorCode::kInvalidArgument,
                     "input '{}' is a sequence batch of shape {}, which does not hold {}-pixel image rows", io.image,
                     io.image_dims.ToString(), width)
        .Note(fmt::format("declare it [-1, {}] with lod_level 1 (each image a sequence of its rows), or [-1, {}] "
                          "without a LoD",
                          width, pixels));
  if (io.feed == ImageFeed::kPatterns) {
    if (ir::VarDType(*image) != DType::kInt64 || io.image_dims.rank() != 2 || io.image_dims[1] != 1)
      return MakeError(ErrorCode::kInvalidArgument,
                       "input '{}' is a sequence batch of {} {}, not of int64 ids [-1, 1] (an image's bag of pixel "
                       "patterns)",
                       io.image, DTypeName(ir::VarDType(*image)), io.image_dims.ToString());
    io.vocab = LookupVocabulary(b, io.image);
    if (io.vocab < 1)
      return MakeError(ErrorCode::kInvalidArgument,
                       "input '{}' holds ids, but no lookup_table_v2 reads them: the vocabulary is unknown", io.image)
          .Note("an embedding of the ids (layers.embedding) gives their vocabulary: the rows of its table");
  }
  if (io.feed == ImageFeed::kPixels &&
      (io.image_dims.rank() < 2 || io.image_dims.Product(1, io.image_dims.rank()) != pixels))
    return MakeError(ErrorCode::kInvalidArgument, "input '{}' has shape {}, which does not hold {}-pixel images",
                     io.image, io.image_dims.ToString(), pixels);
  if (io.label_dims.Product(1, io.label_dims.rank()) != 1)
    return MakeError(ErrorCode::kInvalidArgument, "label input '{}' has shape {}; expected [-1] or [-1, 1]", io.label,
                     io.label_dims.ToString());
  io.loss = m.compiled().loss();
  io.predictions = o.predictions_var;
  if (io.predictions.empty()) {
    // The last forward output shaped [batch, classes]: logits or probabilities, same argmax.
    for (const auto& op : b.desc().ops()) {
      if (!ir::IsForwardOp(op)) break;
      for (const auto& s : op.outputs())
        for (const auto& a : s.arguments()) {
          const pb::VarDesc* v = b.FindVar(a);
          if (v == nullptr || !ir::IsTensorVar(*v) || !IsFloating(ir::VarDType(*v))) continue;
          auto d = ir::VarDims(*v);
          if (d.ok() && d->rank() == 2 && (*d)[1] == classes) io.predictions = a;
        }
    }
    if (io.predictions.empty())
      return MakeError(ErrorCode::kInvalidArgument, "cannot find the class scores ([batch, {}]) of the program", classes)
          .Note("name them with --predictions-var");
  }
  return io;
}

/// Copies samples order[begin, end) into host tensors shaped like the declared inputs.
void FillBatch(const io::ClassificationSet& set, const std::vector<int64_t>& order, int64_t begin, int64_t end,
               const Interface& io, DType label_type, runtime::Tensor& images, runtime::Tensor& labels,
               runtime::Allocator& alloc) {
  int64_t n = end - begin, pixels = set.height * set.width;
  std::vector<uint64_t> offsets{0};  // sequences: where each image's rows or ids start
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n && io.feed != ImageFeed::kPixels; ++i) {
    if (io.feed == ImageFeed::kRows) offsets.push_back(offsets.back() + set.InkedRows(order[begin + i]));
    if (io.feed == ImageFeed::kPatterns) {
      set.AppendPatternIds(order[begin + i], io.vocab, ids);
      offsets.push_back(ids.size());
    }
  }
  Dims idims = io.image_dims;
  idims[0] = io.feed == ImageFeed::kPixels ? n : static_cast<int64_t>(offsets.back());
  Dims ldims = io.label_dims;
  ldims[0] = n;
  images.Set(io.feed == ImageFeed::kPatterns ? DType::kInt64 : DType::kFloat32, idims);
  labels.Set(label_type, ldims);
  (void)images.Allocate(alloc);
  (void)labels.Allocate(alloc);
  images.mutable_lod().clear();
  switch (io.feed) {
    case ImageFeed::kPixels:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(images.data<float>() + i * pixels, set.images.data() + order[begin + i] * pixels,
                    pixels * sizeof(float));
      break;
    case ImageFeed::kRows:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(images.data<float>() + offsets[i] * set.width, set.images.data() + order[begin + i] * pixels,
                    (offsets[i + 1] - offsets[i]) * set.width * sizeof(float));
      break;
    case ImageFeed::kPatterns:
      if (!ids.empty()) std::memcpy(images.data<int64_t>(), ids.data(), ids.size() * sizeof(int64_t));
      break;
  }
  if (io.feed != ImageFeed::kPixels) images.mutable_lod() = {std::move(offsets)};
  for (int64_t i = 0; i < n; ++i) {
    int64_t l = set.labels[order[begin + i]];
    if (label_type == DType::kInt64) labels.data<int64_t>()[i] = l;
    else labels.data<int32_t>()[i] = static_cast<int32_t>(l);
  }
}

struct EvalResult {
  double loss = 0, accuracy = 0;
};

/// Which samples of an epoch one rank trains on. The epoch's order is cut into global batches of
/// nranks * batch_size samples and each global batch into nranks equal contiguous parts, rank r
/// taking part r, so N ranks train on what one process would with batch N * batch_size. The last
/// n % nranks samples of the order are left out, so that every rank has the same number of steps.
struct RankSplit {
  int64_t rank = 0, nranks = 1, batch_size = 64, samples = 0;
  int64_t used() const { return samples - samples % nranks; }
  int64_t global_batch() const { return batch_size * nranks; }
  int64_t steps() const { return (used() + global_batch() - 1) / global_batch(); }
  /// [begin, end) of this rank's part of global batch `b`.
  std::pair<int64_t, int64_t> Part(int64_t b) const {
    int64_t gbegin = b * global_batch(), gend = std::min(used(), gbegin + global_batch());
    int64_t each = (gend - gbegin) / nranks;
    return {gbegin + rank * each, gbegin + (rank + 1) * each};
  }
};

/// Test hook (PADDLEC_FAULT_INJECT=error-on-rank:R): rank R fails at its second step, as a rank whose
/// data or device broke would, to show that every rank stops with that rank's message.
bool InjectedFault(int64_t rank, int64_t step) {
  const char* fault = std::getenv("PADDLEC_FAULT_INJECT");
  return fault != nullptr && step == 2 && std::string_view(fault) == fmt::format("error-on-rank:{}", rank);
}

class Trainer {
 public:
  Trainer(const TrainOptions& o, std::ostream& out) : o_(o), out_(out) {}

  Status Run() {
    if (o_.epochs < 1) return MakeError(ErrorCode::kInvalidArgument, "--epochs must be at least 1");
    if (o_.batch_size < 1) return MakeError(ErrorCode::kInvalidArgument, "--batch-size must be at least 1");
    compile_ = o_.compile;
    std::string device = o_.device;
    int threads = o_.threads;
    if (compile_.data_parallel) {
      // The communicator first, so that an error from here on stops every rank (StopOtherRanks).
      PC_ASSIGN_OR_RETURN(comm_, runtime::WorldCommunicator());
      if (compile_.nranks != 0 && compile_.nranks != comm_->size())
        return MakeError(ErrorCode::kInvalidArgument, "--nranks={} but mpirun started {} ranks", compile_.nranks,
                         comm_->size());
      compile_.nranks = comm_->size();
      // One GPU per rank: `--device=gpu` means the GPU of the rank's local index.
      if (device == "gpu" && comm_->size() > 1)
        if (const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) device = fmt::format("gpu:{}", local);
      // The ranks of one machine share its cores: OpenMP pools spinning against each other ran 3x
      // slower (src/runtime/device_context.h), so each rank takes its share unless --threads says.
      const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
      if (threads == 0 && local_size != nullptr && std::atoi(local_size) > 1)
        threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / std::atoi(local_size));
    }
    split_.rank = comm_ ? comm_->rank() : 0;
    split_.nranks = comm_ ? comm_->size() : 1;
    split_.batch_size = o_.batch_size;
    leader_ = split_.rank == 0;
    PC_RETURN_IF_ERROR(LoadData());
    PC_ASSIGN_OR_RETURN(session_, Session::Open({.program = o_.program,
                                                 .input_format = o_.input_format,
                                                 .startup = o_.compile.startup,
                                                 .device = device,
                                                 .seed = o_.seed,
                                                 .threads = threads,
                                                 .keep_denormals = o_.keep_denormals,
                                                 .check_nan_inf = o_.check_nan_inf,
                                                 .train = &compile_}));
    ir::Module& m = session_->module();
    if (m.compiled().param_grads_size() == 0)
      return MakeError(ErrorCode::kInvalidArgument, "the program has no parameters to train");
    for (const auto& op : m.main().global_block().desc().ops())
      buckets_ += op.type() == "c_allreduce_sum" || op.type() == "all_reduce";
    if (split_.nranks > 1 && !HasAllReduce(m))
      return MakeError(ErrorCode::kInvalidArgument,
                       "'{}' was compiled without the data-parallel pass: its ranks would not average gradients",
                       o_.program)
          .Note("compile it with --data-parallel, or pass the forward program");
    PC_ASSIGN_OR_RETURN(io_, FindInterface(m, o_, data_.train.width, data_.train.height * data_.train.width, classes_));
    label_type_ = ir::VarDType(*m.main().global_block().FindVar(io_.label));
    const auto& params = m.compiled().parameters();
    param_names_.assign(params.begin(), params.end());

    // The evaluation program: the forward ops, with is_test set.
    paddlec::proto::CompiledProgram test;
    *test.mutable_main_program() = ir::CloneForTest(m.compiled().main_program());
    PC_ASSIGN_OR_RETURN(test_, ir::Module::Create(std::move(test)));

    // What runs killed while checkpointing left behind (a full disk, kill -9) goes before anything new.
    if (!o_.save_dir.empty()) io::RemoveStaleTemporaries(o_.save_dir);
    if (!o_.resume.empty() && o_.resume != o_.save_dir) io::RemoveStaleTemporaries(o_.resume);
    int64_t start_epoch = 0;
    if (!o_.resume.empty()) {
      PC_ASSIGN_OR_RETURN(start_epoch, Resume());
    } else {
      PC_RETURN_IF_ERROR(session_->InitializeParameters());
    }
    runtime::Scope& root = session_->scope();
    train_scope_ = &root.NewChild();
    eval_scope_ = &root.NewChild();
    auto& exec = session_->executor();
    PC_ASSIGN_OR_RETURN(
        train_plan_,
        exec.Prepare(m.main().global_block(), *train_scope_,
                     {.seed = o_.seed, .start_step = static_cast<uint64_t>(step_), .cuda_graph = o_.cuda_graph}));
    PC_ASSIGN_OR_RETURN(eval_plan_, exec.Prepare(test_->main().global_block(), *eval_scope_, {.seed = o_.seed}));

    if (leader_ && !o_.metrics_file.empty() && start_epoch == 0)
      PC_RETURN_IF_ERROR(WriteFileAtomic(o_.metrics_file, ""));
    int64_t n = data_.train.count;
    split_.samples = n;
    int64_t batches = split_.steps();
    if (split_.used() == 0)
      return MakeError(ErrorCode::kInvalidArgument, "{} training samples cannot be shared by {} ranks", n,
                       split_.nranks);
    Progress progress(out_, o_.progress && leader_, ::isatty(STDOUT_FILENO), (o_.epochs - start_epoch) * batches);
    auto run_start = Clock::now();
    double train_seconds = 0, comm_seconds = 0;
    for (int64_t epoch = start_epoch; epoch < o_.epochs; ++epoch) {
      std::vector<int64_t> order = io::EpochOrder(n, o_.seed, epoch);
      double loss_sum = 0;
      int64_t seen = 0;
      auto t0 = Clock::now();
      double comm0 = comm_ ? comm_->seconds_in_collectives() : 0;
      for (int64_t b = 0; b < batches; ++b) {
        auto [begin, end] = split_.Part(b);
        FillBatch(data_.train, order, begin, end, io_, label_type_, host_images_, host_labels_, *host_alloc_);
        auto& dev = exec.device();
        PC_RETURN_IF_ERROR(dev.CopyFromHost(host_images_, train_scope_->Var(io_.image).tensor()));
        PC_RETURN_IF_ERROR(dev.CopyFromHost(host_labels_, train_scope_->Var(io_.label).tensor()));
        PC_RETURN_IF_ERROR(train_plan_->Run());
        ++step_;
        if (InjectedFault(split_.rank, step_))
          return MakeError(ErrorCode::kRuntime, "fault injected at step {} (PADDLEC_FAULT_INJECT)", step_);
        PC_ASSIGN_OR_RETURN(double loss, Scalar(*train_scope_, io_.loss));
        if (!std::isfinite(loss) && !o_.allow_nonfinite_loss)
          return MakeError(ErrorCode::kRuntime, "the loss became {} at step {} (epoch {})", loss, step_, epoch + 1)
              .Note("lower the learning rate (--lr) or clip gradients (--clip-norm)");
        loss_sum += loss * (end - begin);
        seen += end - begin;
        double sps = seen * split_.nranks / std::max(1e-9, Seconds(t0, Clock::now()));
        progress.Update(static_cast<int>(epoch + 1), o_.epochs, b + 1, batches, loss_sum / seen, sps);
        if (leader_ && o_.eval_every > 0 && step_ % o_.eval_every == 0 && b + 1 < batches) {
          PC_ASSIGN_OR_RETURN(EvalResult r, Evaluate());
          PC_RETURN_IF_ERROR(Report(epoch, loss_sum / seen, r, sps, Seconds(run_start, Clock::now()), false));
        }
      }
      double train_s = Seconds(t0, Clock::now());
      train_seconds += train_s;
      if (comm_ != nullptr) comm_seconds += comm_->seconds_in_collectives() - comm0;
      PC_RETURN_IF_ERROR(SumOverRanks(loss_sum, seen));
      double sps = seen / std::max(1e-9, train_s);
      if (!leader_) continue;  // only rank 0 evaluates, reports and checkpoints
      PC_ASSIGN_OR_RETURN(EvalResult r, Evaluate());
      PC_RETURN_IF_ERROR(Report(epoch, loss_sum / seen, r, sps, Seconds(run_start, Clock::now()), true));
      out_ << fmt::format(
                  "epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%, {:.1f} s, {:.0f} "
                  "samples/s\n",
                  epoch + 1, o_.epochs, loss_sum / seen, r.loss, 100 * r.accuracy, train_s, sps)
           << std::flush;
      if (!o_.save_dir.empty()) PC_RETURN_IF_ERROR(SaveCheckpoint(epoch + 1, r.accuracy));
    }
    if (comm_ != nullptr) PC_RETURN_IF_ERROR(ReportCollectives(comm_seconds, train_seconds));
    if (leader_ && !o_.save_params.empty()) {
      // The model's own parameters only (no optimizer state): what inference needs.
      std::vector<std::string> model;
      for (const auto& pg : m.compiled().param_grads()) model.push_back(pg.param());
      for (const auto& p : param_names_)
        if (std::find(model.begin(), model.end(), p) == model.end() && !p.starts_with("learning_rate") &&
            p.find("_moment") == std::string::npos && p.find("_velocity_") == std::string::npos &&
            p.find("_pow_acc_") == std::string::npos)
          model.push_back(p);
      std::sort(model.begin(), model.end());
      PC_RETURN_IF_ERROR(io::SaveParams(o_.save_params, model, session_->scope(), exec.device()));
    }
    return Status::OK();
  }

 private:
  Status LoadData() {
    std::string spec = o_.dataset, dir;
    size_t colon = spec.find(':');
    std::string name = spec.substr(0, colon);
    if (colon != std::string::npos) dir = spec.substr(colon + 1);
    if (name != "fashion-mnist" && name != "mnist")
      return MakeError(ErrorCode::kInvalidArgument, "unknown dataset '{}'", name)
          .Note("expected fashion-mnist[:DIR] or mnist:DIR");
    if (dir.empty()) {
      if (name == "mnist") return MakeError(ErrorCode::kInvalidArgument, "--dataset=mnist needs a directory: mnist:DIR");
      dir = kDefaultFashionMnist;
    }
    if (o_.normalize != "unit" && o_.normalize != "meanstd")
      return MakeError(ErrorCode::kInvalidArgument, "--normalize must be unit or meanstd, not '{}'", o_.normalize);
    PC_ASSIGN_OR_RETURN(data_, io::LoadImageDataset(dir, o_.normalize == "unit" ? io::Normalization::kUnit
                                                                                 : io::Normalization::kMeanStd));
    classes_ = data_.train.num_classes();
    auto limit = [](io::ClassificationSet& set, int64_t n) {
      if (n <= 0 || n >= set.count) return;
      set.count = n;
      set.images.resize(static_cast<size_t>(n * set.height * set.width));
      set.labels.resize(static_cast<size_t>(n));
    };
    limit(data_.train, o_.limit_train);
    limit(data_.test, o_.limit_test);
    return Status::OK();
  }

  StatusOr<double> Scalar(runtime::Scope& scope, const std::string& name) {
    runtime::Variable* v = scope.Find(name);
    if (v == nullptr || !v->tensor().initialized())
      return MakeError(ErrorCode::kNotFound, "variable '{}' holds no value after the step", name);
    runtime::Tensor host;
    PC_RETURN_IF_ERROR(session_->executor().device().CopyToHost(v->tensor(), host, *host_alloc_));
    double value = 0;
    PC_RETURN_IF_ERROR(VisitDType(host.dtype(), [&]<class T>() { value = static_cast<double>(host.data<T>()[0]); }));
    return value;
  }

  StatusOr<EvalResult> Evaluate() {
    const io::ClassificationSet& set = data_.test;
    std::vector<int64_t> order(static_cast<size_t>(set.count));
    for (int64_t i = 0; i < set.count; ++i) order[i] = i;
    int64_t bs = std::max<int64_t>(o_.batch_size, 500), correct = 0;
    double loss_sum = 0;
    auto& dev = session_->executor().device();
    for (int64_t begin = 0; begin < set.count; begin += bs) {
      int64_t end = std::min(set.count, begin + bs);
      FillBatch(set, order, begin, end, io_, label_type_, host_images_, host_labels_, *host_alloc_);
      PC_RETURN_IF_ERROR(dev.CopyFromHost(host_images_, eval_scope_->Var(io_.image).tensor()));
      PC_RETURN_IF_ERROR(dev.CopyFromHost(host_labels_, eval_scope_->Var(io_.label).tensor()));
      PC_RETURN_IF_ERROR(eval_plan_->Run());
      PC_ASSIGN_OR_RETURN(double loss, Scalar(*eval_scope_, io_.loss));
      loss_sum += loss * (end - begin);
      runtime::Variable* p = eval_scope_->Find(io_.predictions);
      if (p == nullptr) return MakeError(ErrorCode::kNotFound, "'{}' holds no value after evaluation", io_.predictions);
      runtime::Tensor scores;
      PC_RETURN_IF_ERROR(dev.CopyToHost(p->tensor(), scores, *host_alloc_));
      if (scores.dtype() != DType::kFloat32 || scores.dims().rank() != 2 || scores.dims()[0] != end - begin)
        return MakeError(ErrorCode::kRuntime, "'{}' has shape {}; expected [{}, classes] float32", io_.predictions,
                         scores.dims().ToString(), end - begin);
      int64_t c = scores.dims()[1];
      for (int64_t i = 0; i < end - begin; ++i) {
        const float* row = scores.data<float>() + i * c;
        int64_t best = std::max_element(row, row + c) - row;
        correct += best == set.labels[begin + i];
      }
    }
    return EvalResult{loss_sum / std::max<int64_t>(1, set.count),
                      static_cast<double>(correct) / std::max<int64_t>(1, set.count)};
  }

  Status Report(int64_t epoch, double train_loss, const EvalResult& r, double sps, double wall, bool epoch_end) {
    if (o_.metrics_file.empty()) return Status::OK();
    metrics_ += fmt::format(
        "{{\"epoch\": {}, \"step\": {}, \"epoch_end\": {}, \"train_loss\": {:.6g}, \"test_loss\": {:.6g}, "
        "\"test_accuracy\": {:.6g}, \"samples_per_sec\": {:.6g}, \"wall_s\": {:.6g}}}\n",
        epoch + 1, step_, epoch_end ? "true" : "false", train_loss, r.loss, r.accuracy, sps, wall);
    // Rewritten whole and atomically, so the file is always complete JSON lines.
    auto previous = ReadFile(o_.metrics_file);
    std::string base = metrics_base_loaded_ ? metrics_base_ : (previous.ok() ? *previous : std::string());
    if (!metrics_base_loaded_) {
      metrics_base_ = base;
      metrics_base_loaded_ = true;
    }
    return WriteFileAtomic(o_.metrics_file, metrics_base_ + metrics_);
  }

  Status SaveCheckpoint(int64_t epochs_done, double accuracy) {
    const char* fault = std::getenv("PADDLEC_FAULT_INJECT");
    // Test hooks (PADDLEC_FAULT_INJECT=PHASE:N): die the way `kill -9` would at one instant of the
    // checkpoint of epoch N: "checkpoint" after the parameters and before the metadata, "publish"
    // after the directory is in place and before LATEST names it.
    auto die_at = [&](std::string_view phase) {
      if (fault && std::string_view(fault) == fmt::format("{}:{}", phase, epochs_done)) std::_Exit(137);
    };
    paddlec::proto::Checkpoint ck;
    ck.set_format_version(1);
    ck.set_epoch(epochs_done);
    ck.set_step(step_);
    ck.set_seed(o_.seed);
    ck.set_batch_size(o_.batch_size);
    ck.set_nranks(static_cast<int32_t>(split_.nranks));
    ck.set_test_accuracy(accuracy);
    ck.set_generation(io::NextGeneration(o_.save_dir));
    for (const auto& p : param_names_) ck.add_parameters(p);
    PC_ASSIGN_OR_RETURN(std::string json, ir::Serialize(ck, ir::Format::kJson));
    std::string name = fmt::format("epoch-{:04d}", epochs_done);
    auto fill = [&](const std::string& tmp) -> Status {
      PC_RETURN_IF_ERROR(io::SaveParams((fs::path(tmp) / io::kCheckpointParams).string(), param_names_,
                                        session_->scope(), session_->executor().device()));
      die_at("checkpoint");
      return WriteFileAtomic((fs::path(tmp) / io::kCheckpointJson).string(), json);
    };
    PC_RETURN_IF_ERROR(io::PublishCheckpoint(o_.save_dir, name, fill, [&] { die_at("publish"); }));
    spdlog::info("checkpoint written to {}", (fs::path(o_.save_dir) / name).string());
    return Status::OK();
  }

  /// Loads the checkpoint --resume names; returns the epochs it completed (0: none found, a fresh start).
  StatusOr<int64_t> Resume() {
    PC_ASSIGN_OR_RETURN(std::optional<io::ResumePoint> found, io::FindResumePoint(o_.resume));
    if (!found) {
      out_ << fmt::format("no checkpoint in {}: starting fresh\n", o_.resume);
      PC_RETURN_IF_ERROR(session_->InitializeParameters());
      return 0;
    }
    const paddlec::proto::Checkpoint& ck = found->checkpoint;
    fs::path dir(found->dir);
    std::vector<std::string> names(ck.parameters().begin(), ck.parameters().end());
    if (names != param_names_)
      return MakeError(ErrorCode::kValidation, "checkpoint '{}' holds {} variables that do not match the program's {}",
                       dir.string(), names.size(), param_names_.size())
          .Note("resume with the program (and optimizer settings) the checkpoint was written with");
    // Parameters are the same on every rank, so any rank count resumes; what one step sees is the
    // global batch (per-rank batch x ranks).
    int64_t ck_ranks = ck.has_nranks() ? ck.nranks() : 1;
    if (ck.seed() != o_.seed || ck.batch_size() * ck_ranks != split_.global_batch())
      spdlog::warn(
          "resuming with seed {} / global batch {} ({} x {} ranks), the checkpoint used {} / {} ({} x {}): "
          "the run will not match an uninterrupted one",
          o_.seed, split_.global_batch(), o_.batch_size, split_.nranks, ck.seed(), ck.batch_size() * ck_ranks,
          ck.batch_size(), ck_ranks);
    PC_RETURN_IF_ERROR(io::LoadParams((dir / io::kCheckpointParams).string(), names, session_->scope(),
                                      session_->executor().device(), &session_->main_block()));
    step_ = ck.step();
    if (leader_) out_ << fmt::format("resumed from {} (epoch {}, step {})\n", dir.string(), ck.epoch(), ck.step());
    return ck.epoch();
  }

  /// Sums an epoch's loss and sample count over the ranks (for the epoch line of rank 0).
  Status SumOverRanks(double& loss_sum, int64_t& seen) {
    if (comm_ == nullptr || comm_->size() == 1) return Status::OK();
    double v[2] = {loss_sum, static_cast<double>(seen)};
    PC_RETURN_IF_ERROR(comm_->AllReduce(v, 2, DType::kFloat64, runtime::ReduceOp::kSum));
    loss_sum = v[0];
    seen = static_cast<int64_t>(v[1]);
    return Status::OK();
  }

  /// Rank 0 prints the training steps' time in collectives: the least over the ranks (the others
  /// also waited for slower ranks) and the most.
  Status ReportCollectives(double comm_seconds, double train_seconds) {
    double least = comm_seconds, most = comm_seconds;
    PC_RETURN_IF_ERROR(comm_->AllReduce(&least, 1, DType::kFloat64, runtime::ReduceOp::kMin));
    PC_RETURN_IF_ERROR(comm_->AllReduce(&most, 1, DType::kFloat64, runtime::ReduceOp::kMax));
    if (leader_)
      out_ << fmt::format(
                  "data-parallel: {} rank{} ({}), {} gradient bucket{} per step; of {:.2f} s of training "
                  "steps, {:.2f} s (least rank) to {:.2f} s (most) in allreduce\n",
                  comm_->size(), comm_->size() == 1 ? "" : "s", comm_->backend(), buckets_, buckets_ == 1 ? "" : "s",
                  train_seconds, least, most)
           << std::flush;
    return Status::OK();
  }

  static bool HasAllReduce(ir::Module& m) {
    for (const auto& op : m.main().global_block().desc().ops())
      if (op.type() == "c_allreduce_sum" || op.type() == "all_reduce") return true;  // paddlec's or Paddle 3's
    return false;
  }

  const TrainOptions& o_;
  std::ostream& out_;
  CompileOptions compile_;
  runtime::Communicator* comm_ = nullptr;
  RankSplit split_;
  bool leader_ = true;
  int buckets_ = 0;
  io::ImageDataset data_;
  int64_t classes_ = 0;
  std::unique_ptr<Session> session_;
  std::unique_ptr<ir::Module> test_;
  Interface io_;
  DType label_type_ = DType::kInt64;
  std::vector<std::string> param_names_;
  runtime::Scope* train_scope_ = nullptr;
  runtime::Scope* eval_scope_ = nullptr;
  std::unique_ptr<exec::Plan> train_plan_, eval_plan_;
  int64_t step_ = 0;
  std::shared_ptr<runtime::Allocator> host_alloc_ = runtime::CpuCachingAllocator::Create();
  runtime::Tensor host_images_, host_labels_;
  std::string metrics_, metrics_base_;
  bool metrics_base_loaded_ = false;
};

}  // namespace

Status RunTrain(const TrainOptions& options, std::ostream& out) { return Trainer(options, out).Run(); }

}  // namespace paddlec::driver
