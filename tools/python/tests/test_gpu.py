"""Programs run from Python on a GPU agree with the CPU: feeds, fetches, parameters kept in device
memory between runs, reading and saving them, and values set from Python before a device run.
Skipped without a usable GPU, unless PADDLEC_REQUIRE_GPU=1 (scripts/gpu_tests.sh) makes that a failure."""

import os

import numpy as np
import pytest

import paddlec
from paddlec import errors, layers


def gpu_executor():
    try:
        return paddlec.Executor(paddlec.CUDAPlace(0))
    except errors.UnavailableError as e:
        if os.environ.get("PADDLEC_REQUIRE_GPU") == "1":
            raise
        pytest.skip("no usable GPU: %s" % e)


def test_gpu_place_spellings():
    assert str(paddlec.CUDAPlace(1)) == "gpu:1"
    with pytest.raises(ValueError, match="device_id"):
        paddlec.CUDAPlace(-1)
    with pytest.raises(TypeError, match="CUDAPlace"):
        paddlec.Executor(3)


def mlp(main, startup):
    img = layers.data("img", [20])
    label = layers.data("label", [1], dtype="int64")
    hidden = layers.fc(img, size=32, act="relu")
    prob = layers.fc(hidden, size=5, act="softmax")
    loss = layers.mean(layers.cross_entropy(prob, label))
    paddlec.optimizer.SGD(learning_rate=0.1).minimize(loss, startup)
    return loss, prob


def batches(n):
    rng = np.random.default_rng(5)
    return [(rng.standard_normal((16, 20)).astype("float32"), rng.integers(0, 5, (16, 1)).astype("int64"))
            for _ in range(n)]


def train(exe, main, startup, scope, loss, data):
    exe.run(startup, scope=scope)
    return [float(exe.run(main, feed={"img": x, "label": y}, fetch_list=[loss], scope=scope)[0])
            for x, y in data]


def test_training_on_the_gpu_matches_the_cpu(fresh_programs, tmp_path):
    gpu = gpu_executor()
    main, startup = fresh_programs
    loss, prob = mlp(main, startup)
    data = batches(5)
    cpu_scope, gpu_scope = paddlec.Scope(), paddlec.Scope()
    cpu_losses = train(paddlec.Executor(), main, startup, cpu_scope, loss, data)
    gpu_losses = train(gpu, main, startup, gpu_scope, loss, data)
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-4)
    for p in main.all_parameters():  # device -> host copies of the parameters
        np.testing.assert_allclose(gpu_scope.get(p.name), cpu_scope.get(p.name), rtol=1e-4, atol=1e-6)

    # Parameters saved from device memory load into a CPU scope and give the same predictions.
    paddlec.io.save_params(tmp_path / "p.pdiparams", main, scope=gpu_scope)
    restored = paddlec.Scope()
    paddlec.io.load_params(tmp_path / "p.pdiparams", main, scope=restored)
    feed = {"img": data[0][0], "label": data[0][1]}
    test = main.clone(for_test=True)
    (want,) = paddlec.Executor().run(test, feed=feed, fetch_list=[prob.name], scope=restored)
    (got,) = gpu.run(test, feed=feed, fetch_list=[prob.name], scope=gpu_scope)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_values_set_from_python_are_uploaded(fresh_programs):
    gpu = gpu_executor()
    main, startup = fresh_programs
    x = layers.data("x", [3])
    w = main.global_block().create_parameter([3, 2], name="w", initializer=paddlec.initializer.Constant(0.0))
    y = paddlec.ops.mul(x=x, y=w)
    scope = paddlec.Scope()
    gpu.run(startup, scope=scope)
    scope.set("w", np.arange(6, dtype="float32").reshape(3, 2))  # on the host until the next device run
    (got,) = gpu.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[y], scope=scope)
    np.testing.assert_array_equal(got, [[6.0, 9.0], [6.0, 9.0]])
    np.testing.assert_array_equal(scope.get("w"), np.arange(6).reshape(3, 2))

    # Another executor of the same GPU shares the device context; a CPU one takes the parameters back.
    feed = {"x": np.ones((2, 3), "float32")}
    np.testing.assert_array_equal(gpu_executor().run(main, feed=feed, fetch_list=[y], scope=scope)[0], got)
    np.testing.assert_array_equal(paddlec.Executor().run(main, feed=feed, fetch_list=[y], scope=scope)[0], got)
    np.testing.assert_array_equal(gpu.run(main, feed=feed, fetch_list=[y], scope=scope)[0], got)
