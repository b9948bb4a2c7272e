"""Every layer: the parameters and ops it creates, output shapes, and values against NumPy."""

import numpy as np
import pytest

import paddlec
from paddlec import layers

RNG = np.random.RandomState(0)


def run(fetch, feed, params=None):
    exe = paddlec.Executor()
    exe.run(paddlec.default_startup_program())
    scope = paddlec.global_scope()
    for name, value in (params or {}).items():
        scope.set(name, value)
    return exe.run(feed=feed, fetch_list=fetch)


def op_types():
    return [op.type for op in paddlec.default_main_program().global_block().ops]


def test_data():
    x = layers.data("img", [1, 28, 28])
    y = layers.data("label", [1], dtype="int64")
    z = layers.data("fixed", [4, 2], append_batch_size=False)
    assert x.shape == (None, 1, 28, 28) and y.dtype == "int64" and z.shape == (4, 2)
    assert x.need_check_feed and x.stop_gradient and not x.persistable


def test_fc_flattens_trailing_dims_and_adds_bias_and_activation():
    x = layers.data("x", [3, 4])
    out = layers.fc(x, 5, num_flatten_dims=2, act="tanh", name="fc")
    assert out.name == "fc.tanh" and out.shape == (None, 3, 5) and op_types() == ["mul", "elementwise_add", "tanh"]
    w, b = RNG.randn(4, 5).astype("f4"), RNG.randn(5).astype("f4")
    xv = RNG.randn(2, 3, 4).astype("f4")
    (got,) = run([out], {"x": xv}, {"fc.w": w, "fc.b": b})
    np.testing.assert_allclose(got, np.tanh(xv @ w + b), rtol=1e-5, atol=1e-6)


def test_fc_of_several_inputs_without_bias():
    a, b = layers.data("a", [3]), layers.data("b", [2])
    out = layers.fc([a, b], 4, bias_attr=False, name="fc")
    assert op_types() == ["mul", "mul", "sum"] and out.name == "fc.sum"
    wa, wb = RNG.randn(3, 4).astype("f4"), RNG.randn(2, 4).astype("f4")
    av, bv = RNG.randn(5, 3).astype("f4"), RNG.randn(5, 2).astype("f4")
    (got,) = run([out], {"a": av, "b": bv}, {"fc.w_0": wa, "fc.w_1": wb})
    np.testing.assert_allclose(got, av @ wa + bv @ wb, rtol=1e-5, atol=1e-6)


def conv_reference(x, w, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


def test_conv2d_with_bias_and_relu():
    x = layers.data("x", [3, 7, 7])
    out = layers.conv2d(x, 4, 3, stride=2, padding=1, act="relu", name="conv")
    assert out.shape == (None, 4, 4, 4) and op_types() == ["conv2d", "elementwise_add", "relu"]
    assert paddlec.default_main_program().global_block().var("conv.w").shape == (4, 3, 3, 3)
    w, b = RNG.randn(4, 3, 3, 3).astype("f4"), RNG.randn(4).astype("f4")
    xv = RNG.randn(2, 3, 7, 7).astype("f4")
    (got,) = run([out], {"x": xv}, {"conv.w": w, "conv.b": b})
    want = np.maximum(conv_reference(xv, w, 2, 1) + b[None, :, None, None], 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_pool2d_max_and_average():
    x = layers.data("x", [2, 4, 4])
    mx = layers.pool2d(x, pool_size=2, pool_type="max", pool_stride=2, name="mx")
    av = layers.pool2d(x, pool_size=2, pool_type="avg", pool_stride=2)
    g = layers.pool2d(x, pool_type="avg", global_pooling=True)
    assert mx.name == "mx" and mx.shape == (None, 2, 2, 2) and g.shape == (None, 2, 1, 1)
    xv = RNG.randn(3, 2, 4, 4).astype("f4")
    got_max, got_avg, got_g = run([mx, av, g], {"x": xv})
    blocks = xv.reshape(3, 2, 2, 2, 2, 2)
    np.testing.assert_allclose(got_max, blocks.max(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(got_avg, blocks.mean(axis=(3, 5)), rtol=1e-5)
    np.testing.assert_allclose(got_g[:, :, 0, 0], xv.mean(axis=(2, 3)), rtol=1e-5)


def test_batch_norm_normalizes_with_batch_statistics_and_updates_running_ones():
    x = layers.data("x", [3, 2, 2])
    y = layers.batch_norm(x, momentum=0.8, name="bn")
    block = paddlec.default_main_program().global_block()
    assert y.name == "bn" and y.shape == (None, 3, 2, 2)
    assert block.var("bn.scale").trainable and not block.var("bn.mean").trainable
    xv = RNG.randn(4, 3, 2, 2).astype("f4")
    scale, bias = RNG.rand(3).astype("f4") + 0.5, RNG.randn(3).astype("f4")
    got, mean, var = run([y, "bn.mean", "bn.variance"], {"x": xv}, {"bn.scale": scale, "bn.bias": bias})
    mu, sigma2 = xv.mean(axis=(0, 2, 3)), xv.var(axis=(0, 2, 3))
    want = (xv - mu[None, :, None, None]) / np.sqrt(sigma2[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(got, want * scale[None, :, None, None] + bias[None, :, None, None], rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(mean, 0.2 * mu, rtol=1e-5, atol=1e-6)  # running stats start at 0 and 1
    np.testing.assert_allclose(var, 0.8 + 0.2 * sigma2, rtol=1e-4)  # the biased batch variance, as PaddlePaddle


def test_layer_norm():
    x = layers.data("x", [2, 3])
    y = layers.layer_norm(x, begin_norm_axis=1, name="ln")
    xv = RNG.randn(4, 2, 3).astype("f4")
    scale, bias = RNG.randn(6).astype("f4"), RNG.randn(6).astype("f4")
    (got,) = run([y], {"x": xv}, {"ln.scale": scale, "ln.bias": bias})
    rows = xv.reshape(4, 6)
    want = (rows - rows.mean(1, keepdims=True)) / np.sqrt(rows.var(1, keepdims=True) + 1e-5) * scale + bias
    np.testing.assert_allclose(got.reshape(4, 6), want, rtol=1e-4, atol=1e-5)


def test_dropout_in_training_and_in_test_mode():
    x = layers.data("x", [1000])
    train = layers.dropout(x, 0.3, seed=5)
    test = layers.dropout(x, 0.3, is_test=True)
    xv = np.ones((4, 1000), "f4")
    got_train, got_test = run([train, test], {"x": xv})
    kept = (got_train != 0).mean()
    assert 0.65 < kept < 0.75 and set(np.unique(got_train)) <= {0.0, 1.0}
    np.testing.assert_allclose(got_test, 0.7 * xv, rtol=1e-6)


def test_embedding_looks_up_rows_and_zeroes_the_padding_row():
    ids = layers.data("ids", [3], dtype="int64")
    out = layers.embedding(ids, size=(10, 4), padding_idx=0, name="emb")
    assert out.shape == (None, 3, 4)
    table = RNG.randn(10, 4).astype("f4")
    idv = np.array([[1, 0, 9], [3, 3, 2]], "int64")
    (got,) = run([out], {"ids": idv}, {"emb.w": table})
    want = table[idv]
    want[idv == 0] = 0
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("layer, reference", [
    (layers.relu, lambda v: np.maximum(v, 0)),
    (layers.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
    (layers.tanh, np.tanh),
    (layers.softmax, lambda v: np.exp(v) / np.exp(v).sum(-1, keepdims=True)),
])
def test_activations(layer, reference):
    x = layers.data("x", [5])
    out = layer(x, name="act")
    assert out.name == "act"
    xv = RNG.randn(3, 5).astype("f4")
    (got,) = run([out], {"x": xv})
    np.testing.assert_allclose(got, reference(xv), rtol=1e-5, atol=1e-6)


def test_losses_and_accuracy():
    logits = layers.data("logits", [4])
    label = layers.data("label", [1], dtype="int64")
    target = layers.data("target", [4])
    prob = layers.softmax(logits)
    ce = layers.cross_entropy(prob, label)
    swce, sm = layers.softmax_with_cross_entropy(logits, label, return_softmax=True)
    sq = layers.square_error_cost(logits, target)
    m = layers.mean(sq)
    acc = layers.accuracy(prob, label, k=2)
    assert ce.shape == (None, 1) and swce.shape == (None, 1) and m.shape == () and acc.shape == (1,)
    lv = RNG.randn(6, 4).astype("f4")
    yv = np.array([[0], [1], [2], [3], [1], [2]], "int64")
    tv = RNG.randn(6, 4).astype("f4")
    got = run([ce, swce, sm, sq, m, acc], {"logits": lv, "label": yv, "target": tv})
    p = np.exp(lv) / np.exp(lv).sum(1, keepdims=True)
    nll = -np.log(p[np.arange(6), yv[:, 0]])[:, None]
    np.testing.assert_allclose(got[0], nll, rtol=1e-5)
    np.testing.assert_allclose(got[1], nll, rtol=1e-5)
    np.testing.assert_allclose(got[2], p, rtol=1e-5)
    np.testing.assert_allclose(got[3], (lv - tv) ** 2, rtol=1e-5)
    np.testing.assert_allclose(got[4], ((lv - tv) ** 2).mean(), rtol=1e-5)
    top2 = np.argsort(-lv, axis=1)[:, :2]
    np.testing.assert_allclose(got[5], [(top2 == yv).any(1).mean()], rtol=1e-6)


def test_concat_and_reshape():
    a, b = layers.data("a", [2, 3]), layers.data("b", [1, 3])
    c = layers.concat([a, b], axis=1)
    r = layers.reshape(c, [0, -1], name="flat")
    assert c.shape == (None, 3, 3) and r.name == "flat" and r.shape == (None, 9)
    av, bv = RNG.randn(2, 2, 3).astype("f4"), RNG.randn(2, 1, 3).astype("f4")
    got_c, got_r = run([c, r], {"a": av, "b": bv})
    np.testing.assert_array_equal(got_c, np.concatenate([av, bv], 1))
    np.testing.assert_array_equal(got_r, got_c.reshape(2, 9))


def test_param_attr_controls_names_initializers_and_trainability():
    x = layers.data("x", [3])
    attr = paddlec.ParamAttr(name="W", initializer=paddlec.initializer.Constant(0.5), learning_rate=0.5,
                             trainable=False)
    out = layers.fc(x, 2, param_attr=attr, bias_attr=paddlec.initializer.Constant(1.0))
    block = paddlec.default_main_program().global_block()
    w, b = block.var("W"), block.var("fc_0.b")
    assert not w.trainable and w.learning_rate == 0.5 and w.initializer == "constant:0.5" and b.initializer == "ones"
    (got,) = run([out], {"x": np.ones((1, 3), "f4")})
    np.testing.assert_allclose(got, [[2.5, 2.5]])
