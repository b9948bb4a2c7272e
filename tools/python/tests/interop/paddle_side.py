"""The PaddlePaddle side of the interop suite: runs under an interpreter that has the `paddle` wheel,
in its own process (Paddle's legacy format needs FLAGS_enable_pir_api=0 before `import paddle`, and
Paddle and paddlec each bring their own protobuf runtime, so they never share a process).

  python paddle_side.py export --format {pir,legacy} --out DIR [--models a,b]
      builds each model with Paddle, saves it (PIR: model.json, legacy: model.pdmodel, plus
      model.pdiparams), and writes Paddle's own outputs for a fixed input: DIR/<model>/case.npz
  python paddle_side.py train --format {pir,legacy} --out DIR
      Paddle's training programs of an MLP and a small CNN (Adam), each with its startup program, the
      initial persistables (DIR/<name>/state.pdiparams), a batch and Paddle's losses for 3 steps
  python paddle_side.py run-legacy --model F.pdmodel --params F --feeds F.npz --out OUT.npz [--steps N] [--predictor]
      loads a .pdmodel (one paddlec wrote) with paddle.static.load_inference_model, runs it N times,
      and with --predictor once more through paddle.inference
  python paddle_side.py protos --out F.json
      Paddle's registered OpProtos: {op: {"attrs": {name: AttrType number}, "inputs": [...], "outputs": [...]}}

Everything is written atomically per model (a directory renamed into place), so an interrupted run
never leaves a half-written model behind for the cache to trust.
"""

import argparse
import contextlib
import functools
import inspect
import json
import os
import shutil
import sys
import tempfile

import numpy as np

FORMAT = None


def import_paddle(fmt):
    if fmt == "legacy":
        os.environ["FLAGS_enable_pir_api"] = "0"
    import paddle  # noqa: E402  (the flag must be set first)

    paddle.set_device("cpu")
    return paddle


# ---- models ------------------------------------------------------------------------------------
# name -> (constructor, input shapes, width divisor). Small inputs and width multipliers keep the
# suite fast and its cache small (every model's parameters are saved twice, once per format); each
# model keeps the ops and the structure that make it what it is. Batch 2, so the batch dimension is
# exercised.


@contextlib.contextmanager
def narrowed(paddle, k):
    """Builds layers with every channel count divided by k: Conv2D / BatchNorm channels and Linear
    features, except the image's 3 input channels and the classifier's 10 outputs. Depthwise
    convolutions stay depthwise; grouped ones keep their group count while each group keeps at least
    2 channels (resnext50_32x4d narrowed by 4 has 16 groups), so they stay grouped convolutions. The models compute
    their channel counts in Python (concatenations, expansions), so every count scales alike; k must
    divide each of them, which Paddle's own shape checks enforce when the model runs."""
    if k == 1:
        yield
        return
    from paddle import nn

    def scale(c, keep=()):
        return c if c in keep else c // k

    def wrap(init, rule):
        sig = inspect.signature(init)

        def wrapped(self, *args, **kw):
            bound = sig.bind(self, *args, **kw)
            bound.apply_defaults()
            rule(bound.arguments)
            init(*bound.args, **bound.kwargs)

        return wrapped

    def conv(a):
        depthwise = a["groups"] == a["in_channels"] and a["groups"] > 1
        a["in_channels"], a["out_channels"] = scale(a["in_channels"], (3,)), scale(a["out_channels"])
        if depthwise:
            a["groups"] = a["in_channels"]
        while a["groups"] > 1 and a["in_channels"] // a["groups"] < 2:  # stay grouped, not depthwise
            a["groups"] //= 2

    def linear(a):
        a["in_features"], a["out_features"] = scale(a["in_features"]), scale(a["out_features"], (NUM_CLASSES,))

    def norm(a):
        key = "num_features" if "num_features" in a else "num_channels"
        a[key] = scale(a[key])

    patches = {nn.Conv2D: conv, nn.Linear: linear, nn.BatchNorm2D: norm, nn.BatchNorm: norm}
    saved = {cls: cls.__init__ for cls in patches}
    try:
        for cls, rule in patches.items():
            cls.__init__ = wrap(saved[cls], rule)
        yield
    finally:
        for cls, init in saved.items():
            cls.__init__ = init


NUM_CLASSES = 10


def models(paddle):
    from paddle import nn
    from paddle.vision import models as vm

    class MLP(nn.Layer):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 10)

        def forward(self, x):
            return nn.functional.softmax(self.b(nn.functional.relu(self.a(x))))

    class RNN(nn.Layer):
        def __init__(self, cls):
            super().__init__()
            self.rnn = cls(16, 24, num_layers=2, direction="bidirect")

        def forward(self, x):
            return self.rnn(x)[0]

    class Decoder(nn.Layer):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerDecoderLayer(32, 4, 64)

        def forward(self, tgt, memory):
            return self.layer(tgt, memory)

    class InceptionV3(vm.InceptionV3):
        """Paddle's InceptionV3 with one change: its forward reshapes the pooled features to a fixed
        2048, the full width; here it is the classifier's input width, so the model can be narrowed."""

        def forward(self, x):
            x = self.inception_stem(x)
            for block in self.inception_block_list:
                x = block(x)
            x = paddle.reshape(self.avg_pool(x), shape=[-1, self.fc.weight.shape[0]])
            return self.fc(self.dropout(x))

    img = lambda s: [[2, 3, s, s]]  # noqa: E731
    n = NUM_CLASSES
    return {
        "mlp": (MLP, [[2, 16]], 1),
        "lenet": (lambda: vm.LeNet(num_classes=n), [[2, 1, 28, 28]], 1),
        "alexnet": (lambda: vm.alexnet(num_classes=n), img(224), 8),
        "vgg11": (lambda: vm.vgg11(num_classes=n), img(32), 8),
        "resnet18": (lambda: vm.resnet18(num_classes=n), img(32), 4),
        "resnet50": (lambda: vm.resnet50(num_classes=n), img(32), 4),
        "resnext50_32x4d": (lambda: vm.resnext50_32x4d(num_classes=n), img(32), 4),
        "wide_resnet50_2": (lambda: vm.wide_resnet50_2(num_classes=n), img(32), 8),
        "densenet121": (lambda: vm.densenet121(num_classes=n), img(32), 4),
        "googlenet": (lambda: vm.googlenet(num_classes=n), img(224), 4),
        "inception_v3": (lambda: InceptionV3(num_classes=n), img(96), 4),
        "squeezenet1_0": (lambda: vm.squeezenet1_0(num_classes=n), img(64), 1),
        "squeezenet1_1": (lambda: vm.squeezenet1_1(num_classes=n), img(64), 1),
        "mobilenet_v1": (lambda: vm.mobilenet_v1(scale=0.25, num_classes=n), img(32), 1),
        "mobilenet_v2": (lambda: vm.mobilenet_v2(scale=0.25, num_classes=n), img(32), 1),
        "mobilenet_v3_small": (lambda: vm.mobilenet_v3_small(scale=0.35, num_classes=n), img(32), 1),
        "mobilenet_v3_large": (lambda: vm.mobilenet_v3_large(scale=0.35, num_classes=n), img(32), 1),
        "shufflenet_v2_x0_25": (lambda: vm.shufflenet_v2_x0_25(num_classes=n), img(32), 1),
        "shufflenet_v2_swish": (lambda: vm.ShuffleNetV2(scale=0.25, act="swish", num_classes=n), img(32), 1),
        "transformer_encoder": (lambda: nn.TransformerEncoderLayer(32, 4, 64), [[2, 6, 32]], 1),
        "transformer_decoder": (Decoder, [[2, 5, 32], [2, 6, 32]], 1),
        "lstm": (lambda: RNN(nn.LSTM), [[2, 7, 16]], 1),
        "gru": (lambda: RNN(nn.GRU), [[2, 7, 16]], 1),
        "simple_rnn": (lambda: RNN(nn.SimpleRNN), [[2, 7, 16]], 1),
    }


def build(paddle, ctor, k):
    with narrowed(paddle, k):
        return ctor()


def atomic_dir(final):
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    return tempfile.mkdtemp(prefix=".tmp-", dir=parent)


def publish(tmp, final):
    if os.path.exists(final):
        shutil.rmtree(final)
    os.rename(tmp, final)


def save_static(paddle, ctor, shapes, inputs, prefix):
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 1
    with paddle.static.program_guard(main, startup):
        layer = ctor()
        layer.eval()
        xs = [paddle.static.data("x%d" % i, [None] + list(s[1:]), "float32") for i, s in enumerate(shapes)]
        outs = layer(*xs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    paddle.static.save_inference_model(prefix, xs, outs, exe, program=main)
    program, feeds, fetches = paddle.static.load_inference_model(prefix, exe)
    got = exe.run(program, feed={n: x for n, x in zip(feeds, inputs)}, fetch_list=fetches)
    paddle.disable_static()
    return [np.asarray(o) for o in got]


def export(args):
    paddle = import_paddle(args.format)
    from paddle.static import InputSpec

    table = models(paddle)
    names = args.models.split(",") if args.models else list(table)
    for name in names:
        final = os.path.join(args.out, name)
        if os.path.exists(os.path.join(final, "case.npz")) or os.path.exists(os.path.join(final, "unavailable.txt")):
            continue
        ctor, shapes, k = table[name]
        ctor = functools.partial(build, paddle, ctor, k)
        rng = np.random.RandomState(0)
        inputs = [rng.uniform(-1, 1, s).astype("float32") for s in shapes]
        tmp = atomic_dir(final)
        prefix = os.path.join(tmp, "model")
        # The batch dimension stays dynamic in the saved program, as model exports have it.
        if args.format == "pir":
            paddle.seed(0)
            layer = ctor()
            layer.eval()
            spec = [InputSpec([None] + list(s[1:]), "float32", "x%d" % i) for i, s in enumerate(shapes)]
            paddle.jit.save(layer, prefix, input_spec=spec)
            # Paddle's outputs from the saved program itself (what paddlec must reproduce).
            loaded = paddle.jit.load(prefix)
            loaded.eval()
            outs = loaded(*[paddle.to_tensor(x) for x in inputs])
            outs = [o.numpy() for o in (outs if isinstance(outs, (list, tuple)) else [outs])]
        else:
            # Paddle 3.3's jit.save cannot trace some layers (Transformer) into a legacy program;
            # a static-graph build saved by save_inference_model is the legacy path that works.
            try:
                outs = save_static(paddle, ctor, shapes, inputs, prefix)
            except TypeError as e:
                # Paddle 3.3's nn.MultiHeadAttention calls a PIR-only matmul even in a legacy static
                # program: Paddle itself cannot write this model in the legacy format.
                paddle.disable_static()
                with open(os.path.join(tmp, "unavailable.txt"), "w") as f:
                    f.write("PaddlePaddle %s cannot build this model as a legacy program: %s\n"
                            % (paddle.__version__, str(e).splitlines()[0]))
                publish(tmp, final)
                print("unavailable", name, flush=True)
                continue
        case = {"x%d" % i: x for i, x in enumerate(inputs)}
        for i, o in enumerate(outs):
            case["out%d" % i] = o
        np.savez(os.path.join(tmp, "case.npz"), **case)
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump({"paddle": paddle.__version__, "format": args.format, "inputs": len(inputs),
                       "outputs": len(outs)}, f)
        publish(tmp, final)
        print("exported", name, flush=True)


# ---- a training program ------------------------------------------------------------------------


def train_programs(paddle):
    """name -> (build(x, y) -> loss, image shape): Paddle's own training programs, on 28x28 images
    and 10 classes (what `paddlec train` feeds from Fashion-MNIST)."""

    def mlp(x, y):
        h = paddle.static.nn.fc(x, 32, activation="relu")
        return paddle.mean(paddle.nn.functional.cross_entropy(paddle.static.nn.fc(h, 10), y))

    def cnn(x, y):  # conv2d, training-mode batch_norm, pooling, flatten: their grad ops as Paddle writes them
        c = paddle.nn.functional.relu(paddle.nn.BatchNorm2D(4)(paddle.nn.Conv2D(1, 4, 3, padding=1)(x)))
        c = paddle.flatten(paddle.nn.functional.max_pool2d(c, 2), 1)
        return paddle.mean(paddle.nn.functional.cross_entropy(paddle.nn.Linear(4 * 14 * 14, 10)(c), y))

    return {"mlp_train": (mlp, [784]), "cnn_train": (cnn, [1, 28, 28])}


def train(args):
    """Each of Paddle's own training programs (Adam): saved whole with its startup program, its
    initial persistables (parameters, moments, beta powers, learning rate) in Paddle's .pdiparams
    layout, one batch, and the losses of 3 steps on that batch, as Paddle computes them."""
    paddle = import_paddle(args.format)
    paddle.enable_static()
    for name, (build, shape) in train_programs(paddle).items():
        final = os.path.join(args.out, name)
        if os.path.exists(os.path.join(final, "losses.npy")):
            continue
        tmp = atomic_dir(final)
        main, startup = paddle.static.Program(), paddle.static.Program()
        main.random_seed = startup.random_seed = 1
        with paddle.static.program_guard(main, startup):
            x = paddle.static.data("x", [None] + shape, "float32")
            y = paddle.static.data("y", [None, 1], "int64")
            loss = build(x, y)
            paddle.optimizer.Adam(learning_rate=0.01).minimize(loss)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        rng = np.random.RandomState(3)
        batch = {"x": rng.uniform(0, 1, [8] + shape).astype("float32"),
                 "y": rng.randint(0, 10, (8, 1)).astype("int64")}
        np.savez(os.path.join(tmp, "batch.npz"), **batch)
        state = os.path.join(tmp, "state.pdiparams")
        if args.format == "legacy":
            from paddle.static.io import _serialize_persistables

            with open(state, "wb") as f:
                f.write(_serialize_persistables(main, exe))
            with open(os.path.join(tmp, "main.pdmodel"), "wb") as f:
                f.write(main.desc.serialize_to_string())
            with open(os.path.join(tmp, "startup.pdmodel"), "wb") as f:
                f.write(startup.desc.serialize_to_string())
        else:
            from paddle.base import core
            from paddle.static.pir_io import save_vars_pir

            save_vars_pir(tmp, main, filename="state.pdiparams")
            core.serialize_pir_program(main, os.path.join(tmp, "main.json"), True, False, True)
            core.serialize_pir_program(startup, os.path.join(tmp, "startup.json"), True, False, True)
        losses = [float(np.asarray(exe.run(main, feed=batch, fetch_list=[loss])[0])) for _ in range(args.steps)]
        np.save(os.path.join(tmp, "losses.npy"), np.array(losses, dtype="float64"))
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump({"paddle": paddle.__version__}, f)
        publish(tmp, final)


def fleet(args):
    """A data-parallel training program as Paddle's fleet writes it: a linear regression with SGD,
    rewritten for 2 ranks by Paddle's own GradAllReduce transpiler (legacy format). Saved: main.pdmodel
    and startup.pdmodel (transpiled), the initial parameters (state.pdiparams), one batch, and the
    losses of 3 steps of the untranspiled program on that batch: what 2 ranks fed that same batch
    compute (each rank's gradient scaled by 1/2, then summed)."""
    paddle = import_paddle("legacy")
    paddle.enable_static()
    from paddle.distributed.transpiler.collective import GradAllReduce
    from paddle.static.io import _serialize_persistables

    final = os.path.join(args.out, "fleet_fc")
    if os.path.exists(os.path.join(final, "losses.npy")):
        return
    tmp = atomic_dir(final)
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 1
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [None, 4], "float32")
        y = paddle.static.data("y", [None, 1], "float32")
        loss = paddle.mean(paddle.square(paddle.static.nn.fc(x, 1) - y))
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss, startup)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    with open(os.path.join(tmp, "state.pdiparams"), "wb") as f:
        f.write(_serialize_persistables(main, exe))
    rng = np.random.RandomState(5)
    batch = {"x": rng.uniform(-1, 1, (8, 4)).astype("float32"), "y": rng.uniform(-1, 1, (8, 1)).astype("float32")}
    np.savez(os.path.join(tmp, "batch.npz"), **batch)
    reference = main.clone()
    losses = [float(np.asarray(exe.run(reference, feed=batch, fetch_list=[loss.name])[0])) for _ in range(3)]
    np.save(os.path.join(tmp, "losses.npy"), np.array(losses, dtype="float64"))
    GradAllReduce(nrings=1).transpile(startup_program=startup, main_program=main, rank=0,
                                      endpoints=["127.0.0.1:6170", "127.0.0.1:6171"],
                                      current_endpoint="127.0.0.1:6170", wait_port=False)
    with open(os.path.join(tmp, "main.pdmodel"), "wb") as f:
        f.write(main.desc.serialize_to_string())
    with open(os.path.join(tmp, "startup.pdmodel"), "wb") as f:
        f.write(startup.desc.serialize_to_string())
    with open(os.path.join(tmp, "meta.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "main_ops": [op.type for op in main.global_block().ops],
                   "startup_ops": [op.type for op in startup.global_block().ops]}, f)
    publish(tmp, final)


# ---- reading what paddlec wrote ----------------------------------------------------------------


def run_legacy(args):
    """Loads a .pdmodel (one paddlec wrote) with paddle.static.load_inference_model and runs it
    --steps times on the same feeds: OUT.npz holds `feeds` and `fetches` (the names Paddle found)
    and, per step s and fetch i, `s<s>_<i>` (absent where Paddle fetched nothing); with --predictor
    also `predictor_outputs` and `p_<i>`, what paddle.inference's predictor returns."""
    paddle = import_paddle("legacy")
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    # load_inference_model takes a path prefix: PREFIX.pdmodel and PREFIX.pdiparams.
    prefix = args.model[: -len(".pdmodel")]
    if os.path.abspath(args.params) != os.path.abspath(prefix + ".pdiparams"):
        os.symlink(os.path.abspath(args.params), prefix + ".pdiparams")
    program, feeds, fetches = paddle.static.load_inference_model(prefix, exe)
    case = np.load(args.feeds)
    out = {"feeds": np.array(feeds), "fetches": np.array([f.name for f in fetches])}
    for step in range(args.steps):
        values = exe.run(program, feed={n: case[n] for n in feeds}, fetch_list=fetches, return_numpy=False)
        for i, v in enumerate(values):
            if v is not None and v._is_initialized():
                out["s%d_%d" % (step, i)] = np.array(v)
    if args.predictor:
        # The deployment path: paddle.inference's predictor, with its own graph optimizations.
        config = paddle.inference.Config(args.model, prefix + ".pdiparams")
        config.disable_gpu()
        predictor = paddle.inference.create_predictor(config)
        for name in predictor.get_input_names():
            predictor.get_input_handle(name).copy_from_cpu(case[name])
        predictor.run()
        names = predictor.get_output_names()
        out["predictor_outputs"] = np.array(names)
        for i, name in enumerate(names):
            out["p_%d" % i] = predictor.get_output_handle(name).copy_to_cpu()
    np.savez(args.out, **out)


# ---- Paddle's op definitions --------------------------------------------------------------------


def protos(args):
    """The OpProto of every op Paddle registers (its legacy programs' vocabulary), as JSON."""
    import_paddle("legacy")
    from paddle.base import framework

    out = {p.type: {"attrs": {a.name: int(a.type) for a in p.attrs}, "inputs": [i.name for i in p.inputs],
                    "outputs": [o.name for o in p.outputs]} for p in framework.get_all_op_protos()}
    with open(args.out + ".tmp", "w") as f:
        json.dump(out, f, sort_keys=True)
    os.replace(args.out + ".tmp", args.out)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--format", choices=["pir", "legacy"], required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--models", default="")
    t = sub.add_parser("train")
    t.add_argument("--format", choices=["pir", "legacy"], required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--steps", type=int, default=3)
    r = sub.add_parser("run-legacy")
    for k in ("model", "params", "feeds", "out"):
        r.add_argument("--" + k, required=True)
    r.add_argument("--steps", type=int, default=1)
    r.add_argument("--predictor", action="store_true", help="also run it with paddle.inference's predictor")
    sub.add_parser("protos").add_argument("--out", required=True)
    sub.add_parser("fleet").add_argument("--out", required=True)
    args = p.parse_args()
    {"export": export, "train": train, "run-legacy": run_legacy, "protos": protos, "fleet": fleet}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
