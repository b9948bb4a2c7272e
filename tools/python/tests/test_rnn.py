"""Recurrent layers built on the while op (paddlec/rnn.py): StaticRNN over dense [T, B, D] inputs and
DynamicRNN over LoD sequences of different lengths, against NumPy recurrences; their gradients (of the
weights, the first state and the input) against finite differences in float64; the LoD of
DynamicRNN's output; the errors of misuse; and reduced runs of configs/dynamic_rnn_rows.py, from Python
and through `paddlec train`."""

import importlib.util
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import paddlec
from paddlec import errors, layers, ops
from paddlec.backward import append_backward

REPO = pathlib.Path(__file__).resolve().parents[3]
T, B, D, H = 4, 3, 3, 4
LENGTHS = [3, 1, 5, 2]  # one sequence of length 1; the longest is not the first
RNG = np.random.RandomState(7)


def run(main, startup, feed, fetch, params=None):
    exe = paddlec.Executor()
    scope = paddlec.Scope()
    exe.run(startup, scope=scope)
    for name, value in (params or {}).items():
        scope.set(name, value)
    values = {n: scope.get(n) for n in ("cell.w_0", "cell.w_1", "cell.b")}
    return values, exe.run(main, feed=feed, fetch_list=fetch, scope=scope, return_numpy=False)


def numpy_rnn(x, h, w0, w1, b):
    """The states of h' = tanh(x_t w0 + h w1 + b) over the rows of x [steps, ..., D]."""
    states = []
    for xt in x:
        h = np.tanh(xt @ w0 + h @ w1 + b)
        states.append(h)
    return np.stack(states)


def numeric_gradient(loss_of, value, eps=1e-6):
    grad = np.zeros_like(value)
    for idx in np.ndindex(*value.shape):
        plus, minus = value.copy(), value.copy()
        plus[idx] += eps
        minus[idx] -= eps
        grad[idx] = (loss_of(plus) - loss_of(minus)) / (2 * eps)
    return grad


# ---- StaticRNN ------------------------------------------------------------------------------------


def test_static_rnn_in_the_design_doc_style(fresh_programs):
    main, startup = fresh_programs
    x = layers.data("x", [T, -1, D], append_batch_size=False)
    rnn = layers.StaticRNN()
    with rnn.step():
        word = rnn.step_input(x)
        prev = rnn.memory(shape=[-1, H], batch_ref=word)
        hidden = layers.fc([word, prev], H, act="tanh", name="cell")
        rnn.update_memory(prev, hidden)
        rnn.step_output(hidden)
    out = rnn()
    last = rnn.final_memory(prev)
    gb = main.global_block()
    (loop,) = [op for op in gb.ops if op.type == "while"]
    assert {"cell.w_0", "cell.w_1", "cell.b"} <= {p.name for p in main.all_parameters()}
    # control_flow.py's convention: each loop-carried variable is written once, after its reads, by an assign.
    body = main.block(loop.attr("sub_block")).ops
    carried = set(loop.input("X")) & set(loop.output("Out"))
    assert prev.name in carried and len(carried) == 3  # the memory, the outputs so far, the counter
    for name in carried - {n for n in carried if "counter" in n}:
        writes = [i for i, op in enumerate(body) if name in op.output_arg_names]
        reads = [i for i, op in enumerate(body) if name in op.input_arg_names]
        assert len(writes) == 1 and body[writes[0]].type == "assign" and max(reads) < writes[0], name
    assert out.shape == (None, None, H) and last.shape == (None, H)
    xv = RNG.uniform(-1, 1, (T, B, D)).astype("float32")
    p, (got, got_last) = run(main, startup, {"x": xv}, [out, last])
    want = numpy_rnn(xv, np.zeros((B, H)), p["cell.w_0"], p["cell.w_1"], p["cell.b"])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got_last), want[-1], rtol=1e-5, atol=1e-6)
    # Another batch size through the same program.
    xv = RNG.uniform(-1, 1, (T, 1, D)).astype("float32")
    _, (got,) = run(main, startup, {"x": xv}, [out])
    np.testing.assert_allclose(np.asarray(got), numpy_rnn(xv, np.zeros((1, H)), p["cell.w_0"], p["cell.w_1"],
                                                          p["cell.b"]), rtol=1e-5, atol=1e-6)


def test_static_rnn_with_two_inputs_an_initial_state_and_two_outputs(fresh_programs):
    main, startup = fresh_programs
    x = layers.data("x", [T, B, D], append_batch_size=False)
    y = layers.data("y", [T, B, H], append_batch_size=False)
    h0 = layers.data("h0", [B, H], append_batch_size=False)
    rnn = layers.StaticRNN()
    with rnn.step():
        xt, yt = rnn.step_input(x), rnn.step_input(y)
        prev = rnn.memory(init=h0)
        hidden = layers.fc([xt, prev], H, act="tanh", name="cell")
        rnn.update_memory(prev, hidden)
        rnn.output(hidden, hidden * yt)
    out, product = rnn()
    xv, yv, hv = (RNG.uniform(-1, 1, s).astype("float32") for s in ((T, B, D), (T, B, H), (B, H)))
    p, (got, got_product) = run(main, startup, {"x": xv, "y": yv, "h0": hv}, [out, product])
    want = numpy_rnn(xv, hv, p["cell.w_0"], p["cell.w_1"], p["cell.b"])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got_product), want * yv, rtol=1e-5, atol=1e-6)


def static_program(dtype="float64"):
    """loss = sum(rnn(x, h0) * r) with x and h0 parameters, so that they get gradients too."""
    main, startup = paddlec.Program(), paddlec.Program()
    main.random_seed = startup.random_seed = 3
    with paddlec.program_guard(main, startup):
        gb = main.global_block()
        x = gb.create_parameter([T, B, D], dtype, name="x")
        h0 = gb.create_parameter([B, H], dtype, name="h0")
        r = layers.data("r", [T, B, H], dtype=dtype, append_batch_size=False)
        rnn = layers.StaticRNN()
        with rnn.step():
            prev = rnn.memory(init=h0)
            hidden = layers.fc([rnn.step_input(x), prev], H, act="tanh", name="cell")
            rnn.update_memory(prev, hidden)
            rnn.step_output(hidden)
        loss = ops.reduce_sum(x=rnn() * r, reduce_all=True)
    return main, startup, loss


def test_static_rnn_gradients_match_finite_differences():
    main, startup, loss = static_program()
    append_backward(loss)
    assert [op.type for op in main.global_block().ops].count("while_grad") == 1
    values = {"x": RNG.uniform(-1, 1, (T, B, D)), "h0": RNG.uniform(-1, 1, (B, H))}
    rv = RNG.uniform(-1, 1, (T, B, H))
    names = ["cell.w_1", "cell.w_0", "x", "h0"]
    p, got = run(main, startup, {"r": rv}, [loss] + [n + "@GRAD" for n in names], values)
    p.update(values)

    def loss_at(**changed):
        q = dict(p, **changed)
        return float((numpy_rnn(q["x"], q["h0"], q["cell.w_0"], q["cell.w_1"], q["cell.b"]) * rv).sum())

    np.testing.assert_allclose(np.asarray(got[0]).reshape(()), loss_at(), rtol=1e-12)
    for name, grad in zip(names, got[1:]):
        want = numeric_gradient(lambda v, n=name: loss_at(**{n: v}), p[name])
        np.testing.assert_allclose(np.asarray(grad), want, rtol=1e-6, atol=1e-8, err_msg=name)
        assert np.abs(want).max() > 1e-2  # not vacuous


# ---- DynamicRNN -----------------------------------------------------------------------------------


def lod_of(lengths):
    return [np.concatenate([[0], np.cumsum(lengths)]).tolist()]


def numpy_dynamic_rnn(x, lengths, h0, w0, w1, b):
    """Each sequence's states, concatenated, and each sequence's last state."""
    offsets = lod_of(lengths)[0]
    states, last = [], []
    for i, (start, end) in enumerate(zip(offsets[:-1], offsets[1:])):
        s = numpy_rnn(x[start:end], h0[i], w0, w1, b)
        states.append(s)
        last.append(s[-1])
    return np.concatenate(states), np.stack(last)


def dynamic_program(dtype="float64", init=False, with_loss=False):
    """drnn over x from zeros or h0. With a loss, sum(out * r) + sum(last * s), x has sum(LENGTHS)
    rows and a zero parameter added, so that it gets a gradient."""
    main, startup = paddlec.Program(), paddlec.Program()
    main.random_seed = startup.random_seed = 5
    with paddlec.program_guard(main, startup):
        gb = main.global_block()
        if with_loss:
            x = layers.data("x", [sum(LENGTHS), D], dtype=dtype, lod_level=1, append_batch_size=False)
            x = x + gb.create_parameter([sum(LENGTHS), D], dtype, name="dx",
                                        initializer=paddlec.initializer.Constant(0.0))
        else:
            x = layers.data("x", [D], dtype=dtype, lod_level=1)
        h0 = gb.create_parameter([len(LENGTHS), H], dtype, name="h0") if init else None
        drnn = layers.DynamicRNN()
        with drnn.block():
            xt = drnn.step_input(x)
            prev = drnn.memory(init=h0) if init else drnn.memory(shape=[H], value=0.0, dtype=dtype)
            hidden = layers.fc([xt, prev], H, act="tanh", name="cell")
            drnn.update_memory(prev, hidden)
            drnn.output(hidden)
        out = drnn()
        last = drnn.final_memory(prev)
        if not with_loss:
            return main, startup, out, last
        r = layers.data("r", [H], dtype=dtype)
        s = layers.data("s", [H], dtype=dtype)
        return main, startup, ops.reduce_sum(x=out * r, reduce_all=True) + ops.reduce_sum(x=last * s, reduce_all=True)


def test_dynamic_rnn_follows_each_sequence_and_keeps_the_lod(fresh_programs):
    main, startup, out, last = dynamic_program("float32", init=True)
    assert out.lod_level == 1 and out.shape == (None, H) and last.shape == (len(LENGTHS), H)
    xv = RNG.uniform(-1, 1, (sum(LENGTHS), D)).astype("float32")
    hv = RNG.uniform(-1, 1, (len(LENGTHS), H)).astype("float32")
    p, (got, got_last) = run(main, startup, {"x": (xv, lod_of(LENGTHS))}, [out, last], {"h0": hv})
    assert got.lod() == lod_of(LENGTHS) and got_last.lod() == []
    want, want_last = numpy_dynamic_rnn(xv, LENGTHS, hv, p["cell.w_0"], p["cell.w_1"], p["cell.b"])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got_last), want_last, rtol=1e-5, atol=1e-6)
    # The test-mode clone (one scope for every step) computes the same.
    exe = paddlec.Executor()
    scope = paddlec.Scope()
    exe.run(startup, scope=scope)
    scope.set("h0", hv)
    for n, v in p.items():
        scope.set(n, v)
    (again,) = exe.run(main.clone(for_test=True), feed={"x": (xv, lod_of(LENGTHS))}, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(again, want, rtol=1e-5, atol=1e-6)


def test_dynamic_rnn_from_zeros_with_other_lengths():
    main, startup, out, last = dynamic_program("float32")
    for lengths in ([1, 1], [2, 6, 1]):
        xv = RNG.uniform(-1, 1, (sum(lengths), D)).astype("float32")
        p, (got, got_last) = run(main, startup, {"x": (xv, lod_of(lengths))}, [out, last])
        want, want_last = numpy_dynamic_rnn(xv, lengths, np.zeros((len(lengths), H)), p["cell.w_0"],
                                            p["cell.w_1"], p["cell.b"])
        assert got.lod() == lod_of(lengths)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(got_last), want_last, rtol=1e-5, atol=1e-6)


def test_dynamic_rnn_gradients_match_finite_differences():
    main, startup, loss = dynamic_program(init=True, with_loss=True)
    append_backward(loss)
    n = sum(LENGTHS)
    xv = RNG.uniform(-1, 1, (n, D))
    rv, sv = RNG.uniform(-1, 1, (n, H)), RNG.uniform(-1, 1, (len(LENGTHS), H))
    values = {"h0": RNG.uniform(-1, 1, (len(LENGTHS), H))}
    names = ["cell.w_1", "cell.w_0", "cell.b", "h0", "dx"]
    p, got = run(main, startup, {"x": (xv, lod_of(LENGTHS)), "r": rv, "s": sv},
                 [loss] + [name + "@GRAD" for name in names], values)
    p.update(values, dx=np.zeros((n, D)))

    def loss_at(**changed):
        q = dict(p, **changed)
        states, last = numpy_dynamic_rnn(xv + q["dx"], LENGTHS, q["h0"], q["cell.w_0"], q["cell.w_1"], q["cell.b"])
        return float((states * rv).sum() + (last * sv).sum())

    np.testing.assert_allclose(np.asarray(got[0]).reshape(()), loss_at(), rtol=1e-12)
    for name, grad in zip(names, got[1:]):
        want = numeric_gradient(lambda v, k=name: loss_at(**{k: v}), p[name])
        np.testing.assert_allclose(np.asarray(grad), want, rtol=1e-6, atol=1e-8, err_msg=name)
        assert np.abs(want).max() > 1e-2


# ---- Misuse ---------------------------------------------------------------------------------------


def test_misuse_is_an_error_that_says_what_to_do(fresh_programs):
    x = layers.data("x", [T, B, D], append_batch_size=False)
    seq = layers.data("seq", [D], lod_level=1)
    rnn = layers.StaticRNN()
    with pytest.raises(errors.InvalidArgumentError, match=r"step_input\(\) belongs inside the step block"):
        rnn.step_input(x)
    with pytest.raises(errors.InvalidArgumentError, match=r"memory 'static_rnn.*' is never updated"):
        with rnn.step():
            rnn.memory(shape=[-1, H], batch_ref=rnn.step_input(x))
    rnn = layers.StaticRNN()
    with pytest.raises(errors.InvalidArgumentError, match=r"every size of shape \[-1, 0\] but the batch axis 0 "
                       "must be a positive int"):
        with rnn.step():
            rnn.memory(shape=[-1, 0], batch_ref=rnn.step_input(x))
    with pytest.raises(errors.InvalidArgumentError, match="may be entered once"):
        with rnn.step():
            pass
    rnn = layers.StaticRNN()
    with pytest.raises(errors.InvalidArgumentError, match="the step reads no input"):
        with rnn.step():
            pass
    rnn = layers.StaticRNN()
    with pytest.raises(errors.InvalidArgumentError, match="gives the outputs after the step block"):
        rnn()
    with pytest.raises(RuntimeError, match="boom"):
        with rnn.step():
            raise RuntimeError("boom")
    assert paddlec.default_main_program().current_block().idx == 0
    with pytest.raises(errors.InvalidArgumentError, match=r"memory\(\) belongs inside the step block"):
        rnn.memory(init=x)
    drnn = layers.DynamicRNN()
    with pytest.raises(errors.InvalidArgumentError, match=r"'x' is not a sequence batch \(lod_level 0\)"):
        with drnn.block():
            drnn.step_input(x)
    drnn = layers.DynamicRNN()
    with pytest.raises(errors.InvalidArgumentError, match="comes after a step_input"):
        with drnn.block():
            drnn.memory(shape=[H])
    drnn = layers.DynamicRNN()
    with pytest.raises(errors.InvalidArgumentError, match="is made inside the step"):
        with drnn.block():
            drnn.memory(init=layers.relu(drnn.step_input(seq)))
    drnn = layers.DynamicRNN()
    with pytest.raises(errors.InvalidArgumentError, match="is not a memory of this DynamicRNN"):
        with drnn.block():
            xt = drnn.step_input(seq)
            drnn.update_memory(xt, xt)
    drnn = layers.DynamicRNN()
    with pytest.raises(errors.ShapeError, match=r"memory 'dynamic_rnn_\d+.memory_0' is float32 \(None, 4\) "
                       r"but its new value 'squeeze2_\d+.out' is float32 \(None, 3\)"):
        with drnn.block():
            xt = drnn.step_input(seq)
            drnn.update_memory(drnn.memory(shape=[H]), xt)


# ---- The example ----------------------------------------------------------------------------------


def test_reduced_dynamic_rnn_fashion_mnist_run_learns():
    spec = importlib.util.spec_from_file_location("dynamic_rnn_rows", REPO / "configs" / "dynamic_rnn_rows.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    accuracy, _, steps = module.train(train_limit=3840, test_limit=500, epochs=1, log=lambda *_: None)
    assert steps == 30 and accuracy > 0.6


def test_the_cli_trains_the_dynamic_rnn_on_images_read_as_rows(tmp_path, cli):
    """`paddlec train` feeds an image input declared as a sequence of rows ([-1, 28], lod_level 1) each
    image's rows up to its last inked one, and differentiates the while loop in C++."""
    program = tmp_path / "rnn.pb"
    subprocess.run([sys.executable, str(REPO / "configs" / "dynamic_rnn_rows.py"), "-o", str(program)], check=True)
    done = subprocess.run([cli, "train", str(program), "--limit-train", "1280", "--limit-test", "500", "--epochs", "1",
                           "--batch-size", "64", "--lr", "2e-3", "--no-progress"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    accuracy = float(re.search(r"test accuracy ([\d.]+)%", done.stdout).group(1))
    assert accuracy > 45, done.stdout  # 20 steps; chance is 10 %


def test_the_cli_refuses_row_sequences_of_another_width(tmp_path, cli):
    main = paddlec.Program()
    with paddlec.program_guard(main, paddlec.Program()):
        rows = layers.data("rows", [27], lod_level=1)
        label = layers.data("label", [1], dtype="int64")
        logits = layers.fc(layers.sequence_pool(rows, "max"), 10)
        layers.mean(layers.softmax_with_cross_entropy(logits, label))
    main.save(str(tmp_path / "rows27.pb"))
    done = subprocess.run([cli, "train", str(tmp_path / "rows27.pb"), "--limit-train", "64", "--no-progress"],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == ("error: input 'rows' is a sequence batch of shape [-1, 27], which does "
                                           "not hold 28-pixel image rows")
