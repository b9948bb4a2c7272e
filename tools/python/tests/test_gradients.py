"""Gradients of Python-built programs (appended by the C++ backward pass) against central finite
differences of the forward program, in float64."""

import numpy as np
import pytest

import paddlec
from paddlec import layers

EPS = 1e-6


def check_gradients(build, feed, per_param=5, rtol=1e-5, atol=1e-8):
    main, startup = paddlec.Program(), paddlec.Program()
    with paddlec.program_guard(main, startup), paddlec.unique_name.guard():
        loss = build()
    forward = main.clone()
    pairs = paddlec.append_backward(loss)
    assert pairs, "the network has no trainable parameters"
    scope, exe = paddlec.Scope(), paddlec.Executor()
    exe.run(startup, scope=scope)
    analytic = exe.run(main, feed=feed, fetch_list=[g for _, g in pairs], scope=scope)
    rng = np.random.RandomState(1)

    def loss_at(name, value):
        scope.set(name, value)
        return float(exe.run(forward, feed=feed, fetch_list=[loss.name], scope=scope)[0])

    checked = 0
    for (param, grad), got in zip(pairs, analytic):
        base = scope.get(param.name)
        assert got.shape == base.shape and got.dtype == np.float64, grad.name
        for i in rng.choice(base.size, size=min(per_param, base.size), replace=False):
            plus, minus = base.copy(), base.copy()
            plus.flat[i] += EPS
            minus.flat[i] -= EPS
            numeric = (loss_at(param.name, plus) - loss_at(param.name, minus)) / (2 * EPS)
            assert got.flat[i] == pytest.approx(numeric, rel=rtol, abs=atol), (param.name, int(i))
            checked += 1
        scope.set(param.name, base)
    return checked


def test_mlp_with_softmax_cross_entropy():
    rng = np.random.RandomState(0)
    feed = {"x": rng.randn(6, 5), "label": rng.randint(0, 4, (6, 1))}

    def build():
        x = layers.data("x", [5], dtype="float64")
        label = layers.data("label", [1], dtype="int64")
        h = layers.fc(x, 7, act="tanh")
        h = layers.fc(h, 6, act="sigmoid")
        return layers.mean(layers.softmax_with_cross_entropy(layers.fc(h, 4), label))

    assert check_gradients(build, feed) == 29  # 5 elements of each parameter, 4 of the last bias


def test_cnn_with_batch_norm_and_pooling():
    rng = np.random.RandomState(0)
    feed = {"img": rng.randn(3, 2, 6, 6), "label": rng.randint(0, 3, (3, 1))}

    def build():
        img = layers.data("img", [2, 6, 6], dtype="float64")
        label = layers.data("label", [1], dtype="int64")
        c = layers.conv2d(img, 3, 3, padding=1, act="tanh")
        c = layers.batch_norm(c)
        c = layers.pool2d(c, pool_size=2, pool_type="avg", pool_stride=2)
        prob = layers.fc(c, 3, act="softmax")
        return layers.mean(layers.cross_entropy(prob, label))

    assert check_gradients(build, feed, rtol=1e-4) == 22  # conv.w, conv.b, bn scale and bias, fc.w, fc.b


def test_embedding_layer_norm_concat_reshape_and_squared_error():
    rng = np.random.RandomState(0)
    feed = {"ids": rng.randint(0, 9, (4, 3)), "y": rng.randn(4, 2)}

    def build():
        ids = layers.data("ids", [3], dtype="int64")
        y = layers.data("y", [2], dtype="float64")
        e = layers.embedding(ids, size=(9, 4), dtype="float64")
        e = layers.layer_norm(e, begin_norm_axis=2)
        flat = layers.reshape(e, [0, -1])
        both = layers.concat([flat, layers.sigmoid(flat)], axis=1)
        return layers.mean(layers.square_error_cost(layers.fc(both, 2), y))

    assert check_gradients(build, feed) == 20  # embedding, layer_norm scale and bias, fc.w, fc.b


def test_shared_parameter_and_variable_arithmetic():
    rng = np.random.RandomState(0)
    feed = {"x": rng.randn(5, 4)}

    def build():
        x = layers.data("x", [4], dtype="float64")
        shared = paddlec.ParamAttr(name="shared")
        a = layers.fc(x, 4, param_attr=shared, bias_attr=False)
        b = layers.fc(layers.tanh(a), 4, param_attr=shared, bias_attr=False)  # the same weight twice
        return layers.mean((a * b) - 0.5 * b + 2.0)

    assert check_gradients(build, feed) == 5
