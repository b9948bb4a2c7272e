#!/usr/bin/env python3
"""paddlec against its peers, the same networks, shapes and thread count in one run (scripts/bench.sh --peers).

Runs every case in a fresh process, one at a time, and prints tables of medians and ratios. A shared
machine's noise comes in bursts of seconds, so the cases run in --rounds rounds (default 3), every
tool once per round, and each figure is the median over the rounds of that tool's median step (each
ratio is followed by the lowest and highest of the rounds' own ratios, whose tools ran seconds apart):
  inference   paddlec (-O2) vs ONNX Runtime        MLP and LeNet at batch 1 and 64 (forward + loss)
  training    paddlec vs PyTorch eager vs Paddle static   MLP b64/b512, LeNet b64, ResNet-20 b64 (Adam step)
  memory      LeNet training at batch 256: peak RSS above the idle process, paddlec vs PyTorch
  epochs      the 5-epoch Adam MLP run on Fashion-MNIST, --epoch-runs times: paddlec's per-epoch times
              and each epoch's median rate
With --busy N each inference and training case runs again, right after its quiet run in the same
round, beside N CPU-bound background processes, and a third table prints each tool's slowdown (the
median of the rounds' own busy / quiet ratios), paddlec against Paddle under load, and how much of
paddlec's busy runs two of the busy processes spent on one CPU (which decides how much of a 2-core
machine is left: PlacementSampler).
ratio = peer time / paddlec time: above 1 means paddlec is faster. The MLP rows of the quiet table
add each tool's share of the CPU's fp32 FMA peak (paddlec_bench peak, printed first): the MLP is
products and little else, so a peer at 85 % of peak leaves paddlec at most 1 / 0.85 = 1.18x ahead.

Needs the benchmark-only virtualenv that scripts/bench.sh --peers creates (numpy, onnx, onnxruntime,
torch, paddlepaddle); it is never a test dependency. The peer models are built here: ONNX graphs with
onnx.helper, PyTorch modules from scripts/bench_torch.py, Paddle static programs with paddle.static.
Usage (from bench.sh): python bench_peers.py --build build [--threads 2] [--busy N] [--min-time S]
       worker mode (one case, one line of JSON): python bench_peers.py --worker TOOL KIND NET BATCH
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
INFERENCE = [("mlp", 1), ("mlp", 64), ("lenet", 1), ("lenet", 64)]
TRAINING = [("mlp", 64), ("mlp", 512), ("lenet", 64), ("resnet", 64)]
SHAPES = {"mlp": (784,), "lenet": (1, 28, 28), "resnet": (3, 32, 32)}
MLP_LAYERS = [(784, 512), (512, 256), (256, 10)]  # configs/mlp.pbtxt's fc layers (in, out)


def mlp_gflop(kind, batch):
    """GFLOP of one MLP step, products only: the forward pass, or the forward pass, every layer's weight
    gradient and every input gradient but the first layer's (the image needs none)."""
    macs = sum(i * o for i, o in MLP_LAYERS)
    if kind == "training":
        macs += macs + macs - MLP_LAYERS[0][0] * MLP_LAYERS[0][1]
    return 2 * macs * batch / 1e9


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def median_ms(fn, min_time, min_reps=10):
    t0 = time.perf_counter()
    fn()
    # A step of over half a second (Paddle's ResNet beside busy processes takes ~30 s) gets one more
    # warm-up and 3 timed steps, not 5 and 10: the figure is a median of the rounds anyway.
    slow = time.perf_counter() - t0 > 0.5
    for _ in range(1 if slow else 4):
        fn()
    min_reps = 3 if slow else min_reps
    times, start = [], time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


# ---- ONNX Runtime: inference graphs built with onnx.helper ------------------------------------------


def onnx_model(net, rng):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []

    def param(name, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(np.float32), name))
        return name

    def fc(x, n_in, n_out, name, relu):
        nodes.append(helper.make_node("Gemm", [x, param(name + ".w", n_in, n_out), param(name + ".b", n_out)],
                                      [name + ".y"]))
        if not relu:
            return name + ".y"
        nodes.append(helper.make_node("Relu", [name + ".y"], [name + ".r"]))
        return name + ".r"

    def conv_block(x, cin, cout, name):
        nodes.append(helper.make_node("Conv", [x, param(name + ".w", cout, cin, 3, 3)], [name + ".c"], pads=[1, 1, 1, 1]))
        inits.append(numpy_helper.from_array(np.ones(cout, np.float32), name + ".s"))
        inits.append(numpy_helper.from_array(np.zeros(cout, np.float32), name + ".b"))
        inits.append(numpy_helper.from_array(np.zeros(cout, np.float32), name + ".m"))
        inits.append(numpy_helper.from_array(np.ones(cout, np.float32), name + ".v"))
        nodes.append(helper.make_node("BatchNormalization", [name + ".c", name + ".s", name + ".b", name + ".m",
                                                             name + ".v"], [name + ".n"]))
        nodes.append(helper.make_node("Relu", [name + ".n"], [name + ".r"]))
        nodes.append(helper.make_node("MaxPool", [name + ".r"], [name + ".p"], kernel_shape=[2, 2], strides=[2, 2]))
        return name + ".p"

    if net == "mlp":
        (i1, o1), (i2, o2), (i3, o3) = MLP_LAYERS
        x = fc(fc("img", i1, o1, "fc1", True), i2, o2, "fc2", True)
        logits = fc(x, i3, o3, "fc3", False)
    else:
        x = conv_block(conv_block("img", 1, 32, "conv1"), 32, 64, "conv2")
        nodes.append(helper.make_node("Flatten", [x], ["flat"], axis=1))
        logits = fc(fc("flat", 64 * 7 * 7, 128, "fc1", True), 128, 10, "fc2", False)
    # The same tail as paddlec's programs: softmax, cross entropy against the label, mean.
    nodes.append(helper.make_node("SoftmaxCrossEntropyLoss", [logits, "label"], ["loss"], reduction="mean"))
    graph = helper.make_graph(nodes, net, [
        helper.make_tensor_value_info("img", TensorProto.FLOAT, ["N", *SHAPES[net]]),
        helper.make_tensor_value_info("label", TensorProto.INT64, ["N"])
    ], [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def ort_inference(net, batch, threads, min_time):
    import numpy as np
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(onnx_model(net, rng).SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feed = {"img": rng.random((batch, *SHAPES[net]), np.float32), "label": rng.integers(0, 10, batch)}
    return median_ms(lambda: sess.run(None, feed), min_time)


# ---- PyTorch eager: training steps (and LeNet's memory) ---------------------------------------------


def torch_step(net, batch, threads):
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, HERE)
    import bench_torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = {"mlp": bench_torch.Mlp, "lenet": bench_torch.LeNet, "resnet": bench_torch.ResNet}[net]()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.rand((batch, *SHAPES[net])), torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


# ---- PaddlePaddle static executor: training steps ---------------------------------------------------


def paddle_step(net, batch, threads):
    import numpy as np
    import paddle
    import paddle.nn.functional as F

    paddle.enable_static()
    paddle.set_device("cpu")
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        img = paddle.static.data("img", [None, *SHAPES[net]], "float32")
        label = paddle.static.data("label", [None, 1], "int64")

        def conv_bn(x, cout, stride=1, k=3, relu=True):
            # paddle.nn layers: paddle.static.nn.conv2d is not available under PIR (Paddle 3's default).
            conv = paddle.nn.Conv2D(x.shape[1], cout, k, stride=stride, padding=k // 2, bias_attr=False)
            y = paddle.nn.BatchNorm2D(cout, momentum=0.9)(conv(x))
            return F.relu(y) if relu else y

        if net == "mlp":
            x = paddle.static.nn.fc(paddle.static.nn.fc(img, 512, activation="relu"), 256, activation="relu")
            logits = paddle.static.nn.fc(x, 10)
        elif net == "lenet":
            x = F.max_pool2d(conv_bn(img, 32), 2, 2)
            x = F.max_pool2d(conv_bn(x, 64), 2, 2)
            logits = paddle.static.nn.fc(paddle.static.nn.fc(x, 128, activation="relu"), 10)
        else:
            x, cin = conv_bn(img, 16), 16
            for stage in range(3):
                cout = 16 << stage
                for b in range(3):
                    stride = 2 if stage > 0 and b == 0 else 1
                    y = conv_bn(conv_bn(x, cout, stride), cout, relu=False)
                    short = x if stride == 1 and cin == cout else conv_bn(x, cout, stride, k=1, relu=False)
                    x, cin = F.relu(y + short), cout
            logits = paddle.static.nn.fc(F.adaptive_avg_pool2d(x, 1), 10, bias_attr=False)
        loss = paddle.mean(F.cross_entropy(logits, label))
        paddle.optimizer.Adam(learning_rate=1e-3).minimize(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    rng = np.random.default_rng(0)
    feed = {"img": rng.random((batch, *SHAPES[net]), np.float32), "label": rng.integers(0, 10, (batch, 1))}
    return lambda: exe.run(main, feed=feed, fetch_list=[loss])


def worker(tool, kind, net, batch, threads, min_time):
    if kind == "infer" and tool == "ort":
        return {"ms": ort_inference(net, batch, threads, min_time)}
    if kind == "train":
        step = (torch_step if tool == "torch" else paddle_step)(net, batch, threads)
        return {"ms": median_ms(step, min_time)}
    if kind == "memory" and tool == "torch":
        import torch  # noqa: F401  (idle = the library loaded, nothing built)
        idle = rss_mb()
        step = torch_step(net, batch, threads)
        for _ in range(3):
            step()
        return {"peak_mb": peak_mb() - idle}
    raise SystemExit(f"unknown worker case {tool} {kind}")


# ---- the orchestrator -------------------------------------------------------------------------------


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(f"error: {' '.join(cmd)} failed:\n{out.stderr}")
        return None
    return out.stdout


class Runner:
    def __init__(self, a):
        self.a = a
        self.env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads))
        self.bench = os.path.join(a.build, "paddlec_bench")
        self.busy = []  # the busy processes while they run
        self.shared = {}  # (kind, net, batch) -> samples: did two busy processes sit on one CPU?

    def paddlec(self, kind, net, batch):
        config = "resnet" if net == "resnet" else os.path.join(ROOT, "configs", net + ".pbtxt")
        mode = {"infer": "inference", "train": "resnet" if net == "resnet" else "train", "memory": "memory"}[kind]
        cmd = [self.bench, mode] + ([] if net == "resnet" else [config])
        with PlacementSampler(self.busy, self.shared.setdefault((kind, net, batch), [])):
            out = run(cmd + ["--batch", str(batch), "--threads", str(self.a.threads), "--min-time",
                             str(self.a.min_time), "--opt-level", "2"], self.env)
        if out is None:
            return None
        if kind == "memory":
            return float(re.search(r"peak ([\d.]+) MB", out).group(1))
        return float(re.search(r"([\d.]+) ms", out).group(1))

    def peak(self):
        """The CPU's fp32 FMA peak on the benchmark's threads, in GFLOP/s (paddlec_bench peak)."""
        out = run([self.bench, "peak", "--threads", str(self.a.threads), "--min-time", "0.5"], self.env)
        return float(re.search(r"([\d.]+) GFLOP/s", out).group(1)) if out else None

    def peer(self, tool, kind, net, batch):
        out = run([sys.executable, __file__, "--worker", tool, kind, net, str(batch), "--threads", str(self.a.threads),
                   "--min-time", str(self.a.min_time)], self.env)
        if out is None:
            return None
        r = json.loads(out.strip().splitlines()[-1])
        return r.get("ms", r.get("peak_mb"))

    def case_tools(self, kind, net, b):
        """One case, every tool once: {tool: ms}."""
        if kind == "infer":
            return {"paddlec": self.paddlec("infer", net, b), "ort": self.peer("ort", "infer", net, b)}
        return {"paddlec": self.paddlec("train", net, b), "torch": self.peer("torch", "train", net, b),
                "paddle": self.peer("paddle", "train", net, b)}

    def one_round(self):
        """Every timed case once: (table, name, {tool: ms}, {tool: ms beside the busy processes} or
        None). With --busy each case runs beside the busy processes right after its quiet run, so its
        slowdown divides two times taken seconds apart: the host's FMA rate drifts over minutes (it
        halved for minutes at a time on the Zen 4 VM, docs/performance.md), and a quiet table taken
        before a busy one measured that drift as much as the load."""
        rows = []
        for kind, table, cases in (("infer", "inference", INFERENCE), ("train", "training", TRAINING)):
            for net, b in cases:
                quiet, busy = self.case_tools(kind, net, b), None
                if self.a.busy > 0:
                    self.busy = busy_processes(self.a.busy)
                    try:
                        busy = self.case_tools(kind, net, b)
                    finally:
                        stop_busy(self.busy)
                        self.busy = []
                rows.append((table, f"{net} b{b}", quiet, busy))
        return rows

    def cases(self):
        """Every timed case, with --rounds rounds of each: quiet rows, busy rows (empty without --busy)
        and slowdowns. A row is (table, name, {tool: median ms over the rounds}, {peer: (lowest,
        highest) of the rounds' own peer / paddlec ratios}); the tools of a round ran within seconds
        of each other, so its ratio is paired, and the spread of those ratios says how far one run's
        table can be trusted on a noisy machine. A slowdown is (table, name, {tool: (median, lowest,
        highest) of the rounds' own busy / quiet ratios}), paired the same way."""
        rounds = [self.one_round() for _ in range(self.a.rounds)]
        quiet = summarize([[(t, n, q) for t, n, q, _ in r] for r in rounds])
        if self.a.busy <= 0:
            return quiet, [], []
        busy = summarize([[(t, n, b) for t, n, _, b in r] for r in rounds])
        slowdowns = []
        for i, (table, name, first, _) in enumerate(rounds[0]):
            cells = {}
            for tool in first:
                paired = [r[i][3][tool] / r[i][2][tool] for r in rounds if r[i][2][tool] and r[i][3][tool]]
                if paired:
                    cells[tool] = (statistics.median(paired), min(paired), max(paired))
            slowdowns.append((table, name, cells))
        return quiet, busy, slowdowns


def summarize(rounds):
    """Rows of (table, name, {tool: median ms}, {peer: (lowest, highest) paired ratio}) from rounds of
    (table, name, {tool: ms})."""
    rows = []
    for i, (table, name, first) in enumerate(rounds[0]):
        times = {tool: [r[i][2][tool] for r in rounds if r[i][2][tool] is not None] for tool in first}
        spread = {}
        for tool in first:
            paired = [r[i][2][tool] / r[i][2]["paddlec"] for r in rounds
                      if tool != "paddlec" and r[i][2][tool] and r[i][2]["paddlec"]]
            if paired:
                spread[tool] = (min(paired), max(paired))
        rows.append((table, name, {tool: statistics.median(v) if v else None for tool, v in times.items()}, spread))
    return rows


def fmt(v, spec="8.3f"):
    return format(v, spec) if v is not None else "     n/a"


def ratio(peer, ours):
    return f"{peer / ours:5.2f}x" if peer and ours else "  n/a"


def ratio_spread(spread, tool):
    """The lowest and highest of one peer's per-round ratios, as ' [lo-hi]'; empty without rounds."""
    lo_hi = spread.get(tool)
    return f" [{lo_hi[0]:.2f}-{lo_hi[1]:.2f}]" if lo_hi else ""


def of_peak(table, name, t, peak):
    """For the MLP rows, each tool's share of the FMA peak: a GEMM-bound step cannot beat 100 %, so a
    peer near it leaves no room for a ratio above 100 % / its share."""
    if not peak or not name.startswith("mlp"):
        return ""
    gflop = mlp_gflop(table, int(name.split(" b")[1]))
    cells = " ".join(f"{'ORT' if tool == 'ort' else tool} {100 * gflop / (ms / 1e3) / peak:3.0f}%"
                     for tool, ms in t.items() if ms)
    return f"  of peak: {cells}"


def print_times(rows, title, peak=None):
    print(f"== {title} (median ms; ratio = peer / paddlec, above 1: paddlec faster; [lowest-highest] of "
          f"the rounds' own ratios)")
    for table, name, t, spread in rows:
        if table == "inference":
            line = (f"inference {name:<10} paddlec {fmt(t['paddlec'])}  onnxruntime {fmt(t['ort'])}  "
                    f"vs ORT {ratio(t['ort'], t['paddlec'])}{ratio_spread(spread, 'ort')}")
        else:
            line = (f"training  {name:<10} paddlec {fmt(t['paddlec'])}  torch {fmt(t['torch'])}  "
                    f"paddle {fmt(t['paddle'])}  vs torch {ratio(t['torch'], t['paddlec'])}"
                    f"{ratio_spread(spread, 'torch')}  vs paddle {ratio(t['paddle'], t['paddlec'])}"
                    f"{ratio_spread(spread, 'paddle')}")
        print(line + of_peak(table, name, t, peak))


def busy_processes(n):
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]


def stop_busy(procs):
    for p in procs:
        p.kill()
        p.wait()


def last_cpu(pid):
    """The CPU a process last ran on (/proc/PID/stat's 39th field), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return None


class PlacementSampler:
    """While a case runs beside busy processes, samples every 0.1 s whether two of them sit on one CPU.
    Where the scheduler puts them decides how much of the machine is left: on a 2-core machine,
    paddlec's LeNet training step measured 26.6 ms with both on one CPU and 39-44 ms with one on each."""

    def __init__(self, procs, samples):
        self.procs, self.samples = procs, samples
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self):
        while not self.stop.wait(0.1):
            cpus = [last_cpu(p.pid) for p in self.procs]
            if None not in cpus:
                self.samples.append(len(set(cpus)) < len(cpus))

    def __enter__(self):
        if self.procs:
            self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        if self.procs:
            self.thread.join()


def epochs(a):
    """The 5-epoch Adam MLP run, a.epoch_runs times: a run lasts seconds, as long as the machine's slow
    spells, so each epoch's figure is its median over the runs."""
    runs = []
    for _ in range(a.epoch_runs):
        out = run([os.path.join(a.build, "paddlec"), "train", os.path.join(ROOT, "configs", "mlp.pbtxt"),
                   "--dataset=fashion-mnist", "--epochs=5", "--batch-size=64", "--optimizer=adam", "--lr=0.001",
                   "--threads", str(a.threads), "-O2", "--no-progress"], dict(os.environ))
        found = re.findall(r"epoch \d+/\d+: .*?, ([\d.]+) s, (\d+) samples/s", out or "")
        if found:
            runs.append([(float(t), float(r)) for t, r in found])
    if not runs:
        return
    print(f"== 5-epoch Adam MLP (paddlec train configs/mlp.pbtxt --dataset=fashion-mnist --epochs=5 -O2), "
          f"{len(runs)} runs")
    for i, r in enumerate(runs):
        print(f"run {i + 1} epochs (s): " + "  ".join(f"{t:.1f}" for t, _ in r) + "   samples/s: " +
              "  ".join(f"{x:.0f}" for _, x in r))
    epochs_n = min(len(r) for r in runs)
    rates = [statistics.median(r[e][1] for r in runs) for e in range(epochs_n)]
    # The rates carry more digits than the times (printed to 0.1 s): the ratio comes from them.
    worst = max(rates[0] / r for r in rates)
    print("median samples/s: " + "  ".join(f"{r:.0f}" for r in rates) + f"   slowest / first {worst:.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=4, metavar=("TOOL", "KIND", "NET", "BATCH"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--min-time", type=float, default=2.0)
    ap.add_argument("--busy", type=int, default=0, help="also run beside N busy background processes")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every case; figures are medians over them")
    # Epochs of one run move by 20-40 % with the machine's slow spells (5 runs back to back, one epoch
    # 30.6k to 49.1k samples/s): a median of 3 still left the slowest epoch 1.18x the first twice.
    ap.add_argument("--epoch-runs", type=int, default=7, help="runs of the 5-epoch Adam MLP; medians over them")
    ap.add_argument("--skip", default="", help="comma-separated: memory,epochs")
    a = ap.parse_args()
    if a.worker:
        tool, kind, net, batch = a.worker
        print(json.dumps(worker(tool, kind, net, int(batch), a.threads, a.min_time)), flush=True)
        return
    r = Runner(a)
    print(f"== peers: {a.threads} threads everywhere, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; each case in a fresh process, median of {a.rounds} rounds", flush=True)
    peak = r.peak()
    print(f"== fp32 FMA peak on {a.threads} threads: {fmt(peak, '.1f')} GFLOP/s (paddlec_bench peak); the MLP "
          f"rows add each tool's products per second as a share of it", flush=True)
    quiet, busy, slowdowns = r.cases()
    print_times(quiet, "no added load (quiet only on a quiet machine: check with uptime)", peak)
    if busy:
        print_times(busy, f"beside {a.busy} busy processes, each case right after its quiet run")
        print(f"== slowdown with {a.busy} busy processes (median of the rounds' own busy / quiet times, "
              f"[lowest-highest]; paddlec vs paddle is under load; shared: how much of paddlec's busy runs "
              f"two busy processes spent on one CPU)")
        cases = [(k, n, b) for k, rows in (("infer", INFERENCE), ("train", TRAINING)) for n, b in rows]
        for (table, name, cells), (_, _, b, _), case in zip(slowdowns, busy, cases):
            text = "  ".join(f"{tool} {cells[tool][0]:5.2f}x [{cells[tool][1]:.2f}-{cells[tool][2]:.2f}]"
                             if tool in cells else f"{tool}   n/a" for tool in b)
            extra = f"  busy: paddle / paddlec {ratio(b['paddle'], b['paddlec'])}" if table == "training" else ""
            samples = r.shared.get(case, [])
            shared = f"  shared {100 * sum(samples) / len(samples):3.0f}%" if samples else ""
            print(f"{table:<9} {name:<10} {text}{extra}{shared}")
    if "memory" not in a.skip:
        ours, theirs = r.paddlec("memory", "lenet", 256), r.peer("torch", "memory", "lenet", 256)
        print("== memory: LeNet training at batch 256, peak RSS above the idle process")
        print(f"memory    lenet b256 paddlec {fmt(ours, '8.1f')} MB  torch {fmt(theirs, '8.1f')} MB  "
              f"paddlec / torch {ours / theirs if ours and theirs else float('nan'):.2f}")
    if "epochs" not in a.skip:
        epochs(a)


if __name__ == "__main__":
    main()
