"""Progress bars of the Python training loops: loss and throughput on a terminal, silence when asked
or when nobody is watching."""

import io

import numpy as np
import pytest

import paddlec
import paddlec.v2 as paddle
from paddlec import progress


def test_bars_show_when_asked_and_stay_silent_otherwise(monkeypatch):
    out = io.StringIO()
    with progress.bar(total=100, desc="epoch 1/1", progress=True, file=out) as b:
        b.update(64)
        b.set_postfix(loss="0.5000", refresh=False)
        b.update(36)
    text = out.getvalue()
    assert "epoch 1/1" in text and "100/100" in text and "loss=0.5000" in text and "sample/s" in text
    silent = io.StringIO()
    with progress.bar(total=100, progress=False, file=silent) as b:
        b.update(100)
    assert silent.getvalue() == ""
    # Default: only on a terminal, and never under PADDLEC_QUIET.
    assert progress.enabled(None) is False  # pytest captures stderr: not a terminal
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert progress.enabled(None) is True
    monkeypatch.setenv("PADDLEC_QUIET", "1")
    assert progress.enabled(None) is False


def _v2_trainer():
    paddle.init(use_gpu=False, trainer_count=1)
    x = paddle.layer.data(name="x", type=paddle.data_type.dense_vector(3))
    y = paddle.layer.data(name="y", type=paddle.data_type.dense_vector(1))
    cost = paddle.layer.mse(input=paddle.layer.fc(input=x, size=1, act=paddle.activation.Linear()), label=y)
    params = paddle.parameters.create(cost)
    trainer = paddle.trainer.SGD(cost=cost, parameters=params,
                                 update_equation=paddle.optimizer.Momentum(momentum=0.9, learning_rate=0.01))
    rng = np.random.RandomState(0)
    samples = [(v, [float(v.sum())]) for v in rng.rand(40, 3).astype("float32")]
    return trainer, paddle.batch(lambda: iter(samples), batch_size=8)


@pytest.mark.parametrize("show", [True, False, None])
def test_the_v2_trainer_draws_a_bar_per_pass(show, capsys):
    trainer, reader = _v2_trainer()
    trainer.train(reader=reader, num_passes=2, feeding={"x": 0, "y": 1}, progress=show)
    err = capsys.readouterr().err
    if show:
        assert "pass 0" in err and "pass 1" in err and "cost=" in err and "sample/s" in err
    else:
        assert err == ""


@pytest.mark.parametrize("show", [True, False])
def test_model_train_runs_epochs_with_a_bar(show, capsys):
    m = paddlec.Model()
    prob = m.fc_layer(input="img", size=3, activation="softmax")
    m.backward(m.mean(m.cross_entropy(prob, label="label")))
    m.sgd(learning_rate=0.5)
    rng = np.random.RandomState(1)
    images = rng.rand(50, 4).astype("float32")
    labels = (images[:, :1] > 0.5).astype("int64")
    m.fill("img", images[:1])
    m.fill("label", labels[:1])
    m.initialize_parameters()
    losses = m.train({"img": images, "label": labels}, epochs=3, batch_size=10, progress=show)
    assert len(losses) == 3 and losses[-1] < losses[0]
    err = capsys.readouterr().err
    if show:
        assert "epoch 1/3" in err and "epoch 3/3" in err and "50.0/50.0" in err and "loss=" in err
    else:
        assert err == ""
    with pytest.raises(paddlec.errors.InvalidArgumentError, match="different numbers of samples"):
        m.train({"img": images, "label": labels[:10]})
