// paddlec_bench: steady-state timings for scripts/bench.sh (never run by the tests).
//
//   paddlec_bench sgemm [--n 1024]            direct dnnl_sgemm vs the `mul` op at n x n x n
//   paddlec_bench forward CONFIG --batch B     forward pass of a config as written (parameters initialized)
//   paddlec_bench inference CONFIG --batch B   forward pass compiled with --inference (is_test, fusions)
//   paddlec_bench train CONFIG --batch B       one training step (forward, backward, adam)
//   paddlec_bench dispatch [--ops 1000]        a chain of `scale` ops on one element
//   paddlec_bench resnet --batch B             one training step of a ResNet-20-style conv stack (32x32x3)
//   paddlec_bench memory CONFIG --batch B      peak RSS of training steps above the idle process (MB)
//   paddlec_bench depthwise --batch B [--channels C --size S --stride S]
//                                              one 3x3 depthwise_conv2d (padding 1), MobileNet-style
//   paddlec_bench lstm --batch B [--seq T --input I --hidden H --layers L]
//                                              one rnn op (LSTM, inference) over a sequence
//   paddlec_bench peak --threads T             the CPU's fp32 FMA peak on T threads (GFLOP/s), the
//                                              ceiling for GEMM-bound cases (bench_peers.py's % of peak)
// --check-nan-inf builds the plan with the NaN/Inf check (forward/inference/train modes).
// --fresh-feeds rewrites every feed from the calling thread before each step (forward/inference/train
// modes, CPU), as a program feeding new data does: the step then reads its input from that core's
// cache, not from both cores' (the copy is timed too).
// --opt-level N compiles with -ON (default: the pipelines without -O, as `paddlec` does by default).
// Each prints one line: name, median ms over repetitions of at least --min-time seconds, and
// GFLOP/s where the work is known.
#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "ops/common/microkernel.h"
#include "paddlec/core/file.h"
#include "paddlec/driver/driver.h"
#include "paddlec/exec/executor.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/passes/signature.h"
#include "paddlec/runtime/threads.h"
#include "testing/resnet_text.h"

namespace paddlec {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string mode, config;
  int64_t n = 1024, batch = 64, ops = 1000;
  int64_t channels = 256, size = 28, stride = 1;            // depthwise
  int64_t seq = 32, input = 128, hidden = 256, layers = 1;  // lstm
  int reps = 0;
  double min_time = 1.0;
  int threads = 0;
  std::string device = "cpu";
  bool cuda_graph = false;
  bool check_nan_inf = false;  // --check-nan-inf: what the NaN/Inf check costs per step
  bool profile = false;        // --profile: time per op type over the timed steps, after the median
  bool fresh_feeds = false;    // --fresh-feeds: the calling thread rewrites the feeds before every step
  int opt_level = -1;
};

/// Resident memory in MB: the current size, or the peak (VmHWM) so far.
double ResidentMb(bool peak) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::string key = peak ? "VmHWM:" : "VmRSS:";
  while (std::getline(f, line))
    if (line.starts_with(key)) return std::stod(line.substr(key.size())) / 1024.0;
  return 0;
}

/// Median milliseconds of `fn` over repetitions lasting at least `min_time` seconds in all.
template <class F>
double MedianMs(F&& fn, double min_time, int min_reps = 5) {
  for (int i = 0; i < 3; ++i) fn();  // warm up: first-run allocation and primitive creation
  std::vector<double> ms;
  auto start = Clock::now();
  while (static_cast<int>(ms.size()) < min_reps ||
         std::chrono::duration<double>(Clock::now() - start).count() < min_time) {
    auto t0 = Clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void Die(const Status& st) {
  if (st.ok()) return;
  std::cerr << st.error().Render();
  std::exit(1);
}
template <class T>
T Must(StatusOr<T> v) {
  if (!v.ok()) Die(v.status());
  return std::move(v).value();
}

std::unique_ptr<ir::Module> CompileText(const std::string& text, const std::string& pipeline) {
  auto m = Must(ir::ParseModule(text, ir::Format::kText, "bench"));
  passes::PassManager pm;
  Die(pm.AddPipeline(pipeline));
  passes::PassContext ctx{ops::GlobalOpRegistry()};
  Die(pm.Run(*m, ctx));
  passes::ComputeSignature(*m);
  return m;
}

runtime::Tensor Random(DType t, const Dims& d, runtime::Allocator& alloc, int64_t classes = 0) {
  runtime::Tensor x(t, d);
  Die(x.Allocate(alloc));
  uint64_t s = 88172645463325252ull;
  for (int64_t i = 0; i < x.numel(); ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    if (t == DType::kFloat32) x.data<float>()[i] = static_cast<float>(s % 1000) / 1000.f;
    else x.data<int64_t>()[i] = static_cast<int64_t>(s % static_cast<uint64_t>(classes));
  }
  return x;
}

void Sgemm(const Args& a) {
  int64_t n = a.n;
  auto alloc = runtime::CpuCachingAllocator::Create();
  runtime::Tensor x = Random(DType::kFloat32, {n, n}, *alloc), y = Random(DType::kFloat32, {n, n}, *alloc);
  runtime::Tensor z(DType::kFloat32, {n, n});
  Die(z.Allocate(*alloc));
  double flop = 2.0 * n * n * n;
  double direct = MedianMs(
      [&] {
        dnnl_sgemm('N', 'N', n, n, n, 1.f, x.data<float>(), n, y.data<float>(), n, 0.f, z.data<float>(), n);
      },
      a.min_time);
  std::string program = fmt::format(R"pb(blocks {{ idx: 0 parent_idx: -1
    vars {{ name: "x" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: FP32 dims: {0} dims: {0} }} }} }} }}
    vars {{ name: "y" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: FP32 dims: {0} dims: {0} }} }} }} }}
    ops {{ type: "{1}" inputs {{ parameter: "X" arguments: "x" }} inputs {{ parameter: "Y" arguments: "y" }}
          outputs {{ parameter: "Out" arguments: "z" }} }} }})pb",
                                    n, "{}");
  for (const char* op : {"mul", "matmul_v2"}) {
    std::string text = program;
    text.replace(text.find("{}"), 2, op);
    auto m = CompileText(text, "validate,infer-shape");
    auto exec = Must(exec::Executor::Create(Place::CPU(), {.num_threads = a.threads}));
    runtime::Scope scope;
    Die(exec->device().CopyFromHost(x, scope.Var("x").tensor()));
    Die(exec->device().CopyFromHost(y, scope.Var("y").tensor()));
    auto plan = Must(exec->Prepare(m->main().global_block(), scope));
    double ms = MedianMs([&] { Die(plan->Run()); }, a.min_time);
    std::cout << fmt::format("sgemm {:<10} n={:<5} {:9.3f} ms  {:7.1f} GFLOP/s  {:5.1f}% of direct dnnl_sgemm\n", op,
                             n, ms, flop / ms / 1e6, 100.0 * direct / ms);
  }
  std::cout << fmt::format("sgemm {:<10} n={:<5} {:9.3f} ms  {:7.1f} GFLOP/s\n", "dnnl_sgemm", n, direct,
                           flop / direct / 1e6);
}

/// Forward (or train) steps of a config at a batch size, on random inputs; with `idle_mb`, a few
/// steps and the peak resident memory above it instead of a time.
void Network(const Args& a, bool train, bool inference = false, double idle_mb = -1) {
  auto text = a.config == "resnet" ? testing::ResNetText() : Must(ReadFile(a.config));
  driver::CompileOptions c;
  c.train = train;
  c.inference = inference;
  c.opt_level = a.opt_level;
  c.optimizer = "adam";
  c.lr = 0.001;
  if (train) c.loss = "loss";
  auto m = CompileText(text, driver::CompilePipeline(c));
  auto exec = Must(exec::Executor::Create(Must(ParsePlace(a.device)), {.num_threads = a.threads, .seed = 1}));
  runtime::Scope scope;
  Die(exec->RunOnce(m->startup().global_block(), scope));
  auto alloc = runtime::CpuCachingAllocator::Create();
  for (const auto& f : m->compiled().feed_targets()) {
    Dims d = Must(Dims::FromRange(f.dims().begin(), f.dims().end()));
    if (d.rank() > 0 && d[0] < 0) d[0] = a.batch;
    DType t = static_cast<DType>(f.data_type());
    Die(exec->device().CopyFromHost(Random(t, d, *alloc, 10), scope.Var(f.name()).tensor()));
  }
  auto plan = Must(exec->Prepare(m->main().global_block(), scope,
                                 {.cuda_graph = a.cuda_graph, .check_nan_inf = a.check_nan_inf}));
  std::string name = a.config.substr(a.config.find_last_of('/') + 1);
  if (idle_mb >= 0) {
    for (int i = 0; i < 3; ++i) Die(plan->Run());
    std::cout << fmt::format("memory    {:<12} batch={:<4} peak {:.1f} MB above the idle process ({:.1f} MB)\n", name,
                             a.batch, ResidentMb(true) - idle_mb, idle_mb);
    return;
  }
  plan->set_profiling(a.profile);
  // --fresh-feeds: each feed's bytes, copied back before every step. The tensor's buffer is looked
  // up at each copy, so that a run that replaced it is not written through a stale pointer.
  std::vector<std::pair<runtime::Tensor*, std::vector<char>>> fresh;
  if (a.fresh_feeds)
    for (const auto& f : m->compiled().feed_targets()) {
      auto& t = scope.Var(f.name()).tensor();
      const char* p = static_cast<const char*>(t.raw_data());
      fresh.emplace_back(&t, std::vector<char>(p, p + t.nbytes()));
    }
  double ms = MedianMs(
      [&] {
        for (auto& [t, bytes] : fresh) {
          if (t->nbytes() != bytes.size())
            Die(MakeError(ErrorCode::kInternal, "--fresh-feeds: a run changed the size of a feed"));
          std::memcpy(t->raw_data(), bytes.data(), bytes.size());
        }
        Die(plan->Run());
        Die(exec->device().Synchronize());
      },
      a.min_time);
  if (a.profile)
    for (const auto& p : plan->ProfileByType())
      std::cout << fmt::format("  {:<28} {:7} calls {:9.4f} ms/call {:5.1f}%\n", p.type, p.calls,
                               p.total_ms / std::max<int64_t>(p.calls, 1),
                               100 * p.total_ms / std::max(plan->profiled_ms(), 1e-9));
  std::cout << fmt::format("{:<9} {:<12} batch={:<4} {:9.3f} ms  {:9.0f} samples/s\n",
                           std::string(train ? "train" : inference ? "inference" : "forward") + (a.cuda_graph ? "+g" : "") +
                               (a.check_nan_inf ? "+nancheck" : ""),
                           name, a.batch, ms, a.batch / ms * 1e3);
}

/// Steady-state runs of a one-op program whose inputs are all fed with random values.
double TimeProgram(const Args& a, const std::string& text, const std::vector<std::pair<std::string, Dims>>& feeds) {
  auto m = CompileText(text, "validate,infer-shape");
  auto exec = Must(exec::Executor::Create(Must(ParsePlace(a.device)), {.num_threads = a.threads, .seed = 1}));
  runtime::Scope scope;
  auto alloc = runtime::CpuCachingAllocator::Create();
  for (const auto& [name, dims] : feeds)
    Die(exec->device().CopyFromHost(Random(DType::kFloat32, dims, *alloc), scope.Var(name).tensor()));
  auto plan = Must(exec->Prepare(m->main().global_block(), scope));
  return MedianMs(
      [&] {
        Die(plan->Run());
        Die(exec->device().Synchronize());
      },
      a.min_time);
}

std::string VarText(const std::string& name, const Dims& d) {
  std::string dims;
  for (int64_t x : d) dims += fmt::format(" dims: {}", x);
  return fmt::format(
      "  vars {{ name: \"{}\" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: FP32{} }} }} }} }}\n", name,
      dims);
}

/// A MobileNet-style depthwise layer: 3x3, padding 1, one filter per channel.
void Depthwise(const Args& a) {
  const int64_t n = a.batch, c = a.channels, s = a.size, st = a.stride, out = (s + 2 - 3) / st + 1;
  std::string text =
      "blocks { idx: 0 parent_idx: -1\n" + VarText("x", {n, c, s, s}) + VarText("w", {c, 1, 3, 3}) +
      fmt::format(
          R"(  ops {{ type: "depthwise_conv2d" inputs {{ parameter: "Input" arguments: "x" }} )"
          R"(inputs {{ parameter: "Filter" arguments: "w" }} outputs {{ parameter: "Output" arguments: "y" }} )"
          R"(attrs {{ name: "groups" type: INT i: {0} }} attrs {{ name: "paddings" type: INTS ints: 1 ints: 1 }} )"
          R"(attrs {{ name: "strides" type: INTS ints: {1} ints: {1} }} }})"
          "\n}}\n",
          c, st);
  double ms = TimeProgram(a, text, {{"x", {n, c, s, s}}, {"w", {c, 1, 3, 3}}});
  double flop = 2.0 * 9 * n * c * out * out, bytes = 4.0 * n * c * (s * s + out * out);
  std::cout << fmt::format(
      "depthwise_conv2d 3x3 c={:<4} {:>3}x{:<3} stride={} batch={:<4} {:9.3f} ms  {:7.1f} GFLOP/s  "
      "{:6.1f} GB/s\n",
      c, s, s, st, n, ms, flop / ms / 1e6, bytes / ms / 1e6);
}

/// An LSTM (the rnn op, inference) over a sequence: what one step and one sequence cost.
void Lstm(const Args& a) {
  const int64_t t = a.seq, n = a.batch, in = a.input, h = a.hidden, layers = a.layers;
  std::string text = "blocks { idx: 0 parent_idx: -1\n" + VarText("x", {t, n, in}) + VarText("h0", {layers, n, h}) +
                     VarText("c0", {layers, n, h});
  std::vector<std::pair<std::string, Dims>> feeds = {{"x", {t, n, in}}, {"h0", {layers, n, h}}, {"c0", {layers, n, h}}};
  std::string weights, biases;
  for (int64_t l = 0; l < layers; ++l) {
    for (auto [name, dims] : {std::pair{fmt::format("wih{}", l), Dims{4 * h, l == 0 ? in : h}},
                              std::pair{fmt::format("whh{}", l), Dims{4 * h, h}}}) {
      text += VarText(name, dims);
      feeds.push_back({name, dims});
      weights += fmt::format(" arguments: \"{}\"", name);
    }
    for (auto name : {fmt::format("bih{}", l), fmt::format("bhh{}", l)}) {
      text += VarText(name, {4 * h});
      feeds.push_back({name, {4 * h}});
      biases += fmt::format(" arguments: \"{}\"", name);
    }
  }
  text += fmt::format(
      R"(  ops {{ type: "rnn" inputs {{ parameter: "Input" arguments: "x" }} )"
      R"(inputs {{ parameter: "PreState" arguments: "h0" arguments: "c0" }} )"
      R"(inputs {{ parameter: "WeightList"{0}{1} }} outputs {{ parameter: "Out" arguments: "y" }} )"
      R"(outputs {{ parameter: "State" arguments: "hn" arguments: "cn" }} )"
      R"(outputs {{ parameter: "Reserve" arguments: "reserve" }} attrs {{ name: "mode" type: STRING s: "LSTM" }} )"
      R"(attrs {{ name: "input_size" type: INT i: {2} }} attrs {{ name: "hidden_size" type: INT i: {3} }} )"
      R"(attrs {{ name: "num_layers" type: INT i: {4} }} attrs {{ name: "is_test" type: BOOLEAN b: true }} }})"
      "\n}}\n",
      weights, biases, in, h, layers);
  double ms = TimeProgram(a, text, feeds);
  double flop = 2.0 * t * n * 4 * h * (in + h + (layers - 1) * 2 * h);
  std::cout << fmt::format(
      "lstm T={:<3} batch={:<4} input={:<4} hidden={:<4} layers={} {:9.3f} ms  {:8.1f} us/step  "
      "{:7.1f} GFLOP/s\n",
      t, n, in, h, layers, ms, ms * 1e3 / t, flop / ms / 1e6);
}

constexpr int64_t kPeakIterations = int64_t{4} << 20;

/// The fp32 FMA peak of `threads` threads: GEMM-bound cases (MLP) can be judged against it, and a
/// target above it cannot be met. AVX-512 is tried too: cores with two 512-bit FMA units double the
/// AVX2 figure, and oneDNN (paddlec's convolutions, ONNX Runtime's MLAS, PyTorch) uses them there.
void Peak(const Args& a) {
#if defined(__AVX2__) && defined(__FMA__)
  const int threads = a.threads > 0 ? a.threads : static_cast<int>(std::thread::hardware_concurrency());
  const bool avx512 = ops::HasAvx512();
  volatile float sink = 0;
  auto gflops = [&](int lanes, float (*chains)(int64_t)) {
    double ms = MedianMs(
        [&] {
          std::vector<std::thread> team;
          for (int t = 0; t < threads; ++t) team.emplace_back([&] { sink = sink + chains(kPeakIterations); });
          for (auto& t : team) t.join();
        },
        a.min_time);
    return 2.0 * lanes * ops::kFmaChains * static_cast<double>(kPeakIterations) * threads / ms / 1e6;
  };
  const double ymm = gflops(8, ops::FmaChains256);
  const double zmm = avx512 ? gflops(16, ops::FmaChains512) : 0;
  std::cout << fmt::format("peak      fp32 FMA     threads={:<4} {:8.1f} GFLOP/s  (AVX2 {:.1f}{})\n", threads,
                           std::max(ymm, zmm), ymm, avx512 ? fmt::format(", AVX-512 {:.1f}", zmm) : ", no AVX-512");
#else
  std::cerr << "error: paddlec_bench peak needs a build for AVX2 and FMA (x86-64-v3)\n";
  std::exit(1);
#endif
}

void Dispatch(const Args& a) {
  std::string text = "blocks { idx: 0 parent_idx: -1\n"
                     "  vars { name: \"v0\" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 1 } } } }\n";
  for (int64_t i = 0; i < a.ops; ++i)
    text += fmt::format("  ops {{ type: \"scale\" inputs {{ parameter: \"X\" arguments: \"v{}\" }} "
                        "outputs {{ parameter: \"Out\" arguments: \"v{}\" }} attrs {{ name: \"scale\" type: FLOAT f: 1.0001 }} }}\n",
                        i, i + 1);
  text += "}\n";
  auto m = CompileText(text, "validate,infer-shape");
  auto exec = Must(exec::Executor::Create(Place::CPU(), {.num_threads = 1}));
  runtime::Scope scope;
  auto alloc = runtime::CpuCachingAllocator::Create();
  Die(exec->device().CopyFromHost(Random(DType::kFloat32, {1}, *alloc), scope.Var("v0").tensor()));
  auto plan = Must(exec->Prepare(m->main().global_block(), scope));
  double ms = MedianMs([&] { Die(plan->Run()); }, a.min_time);
  std::cout << fmt::format("dispatch scale x{:<6} {:9.3f} ms  {:7.3f} us/op\n", a.ops, ms, ms * 1e3 / a.ops);
}

}  // namespace
}  // namespace paddlec

int main(int argc, char** argv) {
  using namespace paddlec;
  runtime::ReexecWithBoundedSpin(argv);      // as `paddlec run` does (runtime/threads.h)
  runtime::BindTeamsToCpus();                // as `paddlec run` does
  const double idle_mb = ResidentMb(false);  // libraries loaded, nothing built
  Args a;
  if (argc < 2) {
    std::cerr << "usage: paddlec_bench sgemm|forward|inference|train|resnet|memory|dispatch|depthwise|lstm|peak [CONFIG] "
                 "[--n N] [--batch B] [--ops N] [--channels C] [--size S] [--stride S] [--seq T] [--input I] "
                 "[--hidden H] [--layers L] [--min-time S] [--threads T] [--device D] [--opt-level N] [--check-nan-inf] [--profile]\n";
    return 2;
  }
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "error: " << k << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--n") a.n = std::stoll(next());
    else if (k == "--batch") a.batch = std::stoll(next());
    else if (k == "--ops") a.ops = std::stoll(next());
    else if (k == "--channels")
      a.channels = std::stoll(next());
    else if (k == "--size")
      a.size = std::stoll(next());
    else if (k == "--stride")
      a.stride = std::stoll(next());
    else if (k == "--seq")
      a.seq = std::stoll(next());
    else if (k == "--input")
      a.input = std::stoll(next());
    else if (k == "--hidden")
      a.hidden = std::stoll(next());
    else if (k == "--layers")
      a.layers = std::stoll(next());
    else if (k == "--min-time") a.min_time = std::stod(next());
    else if (k == "--threads") a.threads = std::stoi(next());
    else if (k == "--device") a.device = next();
    else if (k == "--cuda-graph") a.cuda_graph = true;
    else if (k == "--check-nan-inf") a.check_nan_inf = true;
    else if (k == "--profile") a.profile = true;
    else if (k == "--fresh-feeds") a.fresh_feeds = true;
    else if (k == "--opt-level")
      a.opt_level = std::stoi(next());
    else if (!k.starts_with("--")) a.config = k;
    else {
      std::cerr << "error: unknown flag " << k << "\n";
      return 2;
    }
  }
  if (a.fresh_feeds && a.mode != "forward" && a.mode != "inference" && a.mode != "train") {
    std::cerr << "error: --fresh-feeds goes with the forward, inference and train modes, not " << a.mode << "\n";
    return 2;
  }
  if (a.fresh_feeds && a.device != "cpu") {
    std::cerr << "error: --fresh-feeds rewrites feeds in host memory: it needs --device cpu\n";
    return 2;
  }
  if (a.mode == "sgemm") Sgemm(a);
  else if (a.mode == "forward") Network(a, false);
  else if (a.mode == "train") Network(a, true);
  else if (a.mode == "inference") Network(a, false, true);
  else if (a.mode == "memory")
    Network(a, true, false, idle_mb);
  else if (a.mode == "resnet") {
    a.config = "resnet";
    Network(a, true);
  }
  else if (a.mode == "dispatch") Dispatch(a);
  else if (a.mode == "depthwise")
    Depthwise(a);
  else if (a.mode == "lstm")
    Lstm(a);
  else if (a.mode == "peak")
    Peak(a);
  else {
    std::cerr << "error: unknown mode " << a.mode << "\n";
    return 2;
  }
  return 0;
}
