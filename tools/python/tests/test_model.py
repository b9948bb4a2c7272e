"""The Model API: string inputs that become data, backward, sgd, parameters, fill and run."""

import numpy as np
import pytest

import paddlec
from paddlec import errors


def blobs(n=256, seed=0):
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 4, (n, 1))
    centers = rng.normal(size=(4, 20)) * 2
    return (centers[labels[:, 0]] + rng.normal(size=(n, 20))).astype("float32"), labels


def build(model):
    hidden = model.fc_layer(input="img", size=32, activation="sigmoid", input_size=20)
    prob = model.fc_layer(input=hidden, size=4, activation="softmax")
    loss = model.mean(model.cross_entropy(prob, label="label"))
    return prob, loss


def test_a_model_trains_with_backward_and_sgd():
    m = paddlec.Model(seed=1)
    prob, loss = build(m)
    gb = m.program.global_block()
    assert gb.var("img").shape == (None, 20) and gb.var("label").dtype == "int64"  # created from the names
    pairs = m.backward(loss)
    assert len(pairs) == 4
    m.sgd(learning_rate=0.5)
    m.initialize_parameters()
    images, labels = blobs()
    m.fill("img", images)
    m.fill("label", labels)
    losses = [float(m.run()) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]
    predictions = m.run(prob).argmax(1)
    assert (predictions == labels[:, 0]).mean() > 0.9
    values = m.run([prob, loss])
    assert values[0].shape == (256, 4) and values[1].shape == ()


def test_parameters_load_into_another_model_and_fill_sets_them(tmp_path):
    a = paddlec.Model(seed=2)
    prob_a, _ = build(a)
    a.initialize_parameters()
    a.fill("fc_0.b", np.full(32, 0.25))
    names = a.save_parameters(tmp_path / "p.pdiparams")
    assert names == ["fc_0.b", "fc_0.w", "fc_1.b", "fc_1.w"]
    images, labels = blobs(8)
    a.fill("img", images)
    a.fill("label", labels)
    b = paddlec.Model(seed=3)
    prob_b, _ = build(b)
    b.load_parameters(tmp_path / "p.pdiparams")
    b.fill("img", images)
    b.fill("label", labels)
    np.testing.assert_array_equal(a.run(prob_a), b.run(prob_b))
    np.testing.assert_array_equal(b.get("fc_0.b"), np.full(32, 0.25, "f4"))
    with pytest.raises(errors.InvalidArgumentError, match=r"fill\('fc_0.w'\): the variable is float32 \(20, 32\)"):
        b.fill("fc_0.w", np.zeros((3, 3)))


def test_an_input_size_can_come_with_the_data():
    m = paddlec.Model(seed=4)
    hidden = m.fc_layer(input="img", size=32, activation="sigmoid")  # the example: no size given
    prob = m.fc_layer(input=hidden, size=4, activation="softmax")
    loss = m.mean(m.cross_entropy(prob, label="label"))
    assert m.program.global_block().var("img").shape == (None, None) and hidden.shape == (None, 32)
    m.backward(loss)
    m.sgd(learning_rate=0.5)
    with pytest.raises(errors.InvalidArgumentError, match="the size of input 'img' is not known yet"):
        m.initialize_parameters()
    images, labels = blobs()
    m.fill("img", images)
    m.fill("label", labels)
    m.initialize_parameters()
    gb = m.program.global_block()
    assert gb.var("img").shape == (None, 20) and gb.var("fc_0.w").shape == (20, 32)
    assert gb.var("fc_0.w@GRAD").shape == (20, 32)  # shapes were inferred again through the backward ops
    losses = [float(m.run()) for _ in range(20)]
    assert losses[-1] < 0.5 * losses[0]


def test_model_mistakes_are_reported():
    m = paddlec.Model()
    with pytest.raises(errors.InvalidArgumentError, match="'label' names no variable yet, and its size is unknown"):
        m.mean("label")
    m.fill("img", np.zeros((2, 5), "f4"))
    out = m.fc_layer(input="img", size=3, activation="tanh")  # the size comes from the filled array
    assert out.shape == (None, 3) and m.program.global_block().var("fc_0.w").shape == (5, 3)
    with pytest.raises(errors.InvalidArgumentError, match="unknown activation"):
        m.fc_layer(input=out, size=3, activation="swish")
    with pytest.raises(errors.InvalidArgumentError, match="call backward"):
        m.sgd(0.1)
    with pytest.raises(errors.InvalidArgumentError, match="parameters have no values"):
        m.run()
    m.initialize_parameters()
    assert m.run().shape == (2, 3)
    other = paddlec.Model()
    with pytest.raises(errors.InvalidArgumentError, match="belongs to another model"):
        other.mean(out)
