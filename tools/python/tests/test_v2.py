"""The v2 API: linear regression with Momentum converging to a known solution, classification with
metrics, events, test(), infer() and Parameters."""

import io

import numpy as np
import pytest

import paddlec.v2 as paddle
from paddlec import errors

RNG = np.random.RandomState(7)
W_TRUE = RNG.uniform(-2, 2, 13).astype("float32")
B_TRUE = 0.75


def regression_samples(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, 13)).astype("float32")
    y = x @ W_TRUE + B_TRUE + 0.01 * rng.normal(size=n).astype("float32")
    return [(xi, [yi]) for xi, yi in zip(x, y)]


def test_linear_regression_converges_to_the_known_solution():
    paddle.init(use_gpu=False, trainer_count=1, seed=1)
    train, test = regression_samples(2000, 1), regression_samples(500, 2)
    x = paddle.layer.data(name="x", type=paddle.data_type.dense_vector(13))
    y = paddle.layer.data(name="y", type=paddle.data_type.dense_vector(1))
    y_predict = paddle.layer.fc(input=x, size=1, act=paddle.activation.Linear())
    cost = paddle.layer.mse(input=y_predict, label=y)
    parameters = paddle.parameters.create(cost)
    trainer = paddle.trainer.SGD(cost=cost, parameters=parameters,
                                 update_equation=paddle.optimizer.Momentum(momentum=0.9, learning_rate=0.01))
    events = []

    def handler(event):
        if isinstance(event, (paddle.event.EndIteration, paddle.event.EndPass)):
            events.append(event)

    before = trainer.test(reader=paddle.batch(lambda: iter(test), 100), feeding={"x": 0, "y": 1}).cost
    trainer.train(reader=paddle.batch(paddle.reader.shuffle(lambda: iter(train), 500, seed=3), 32),
                  num_passes=8, event_handler=handler, feeding={"x": 0, "y": 1})
    result = trainer.test(reader=paddle.batch(lambda: iter(test), 100), feeding={"x": 0, "y": 1})
    passes = [e for e in events if isinstance(e, paddle.event.EndPass)]
    assert [e.pass_id for e in passes] == list(range(8)) and len(events) == 8 * 63 + 8
    assert before > 1.0 and result.cost < 2e-4  # the noise variance is 1e-4
    assert passes[-1].cost < passes[0].cost
    np.testing.assert_allclose(parameters.get("fc_0.w").ravel(), W_TRUE, atol=3e-3)
    np.testing.assert_allclose(parameters.get("fc_0.b"), [B_TRUE], atol=3e-3)
    predicted = paddle.infer(output_layer=y_predict, parameters=parameters, input=[(s[0],) for s in test[:5]])
    np.testing.assert_allclose(predicted.ravel(), [s[1][0] for s in test[:5]], atol=0.05)


def test_classification_cost_reports_the_error_rate_and_infer_runs_in_test_mode():
    paddle.init(seed=2)
    rng = np.random.RandomState(0)
    centers = rng.normal(size=(3, 4)) * 3
    labels = rng.randint(0, 3, 600)
    points = (centers[labels] + rng.normal(size=(600, 4))).astype("float32")
    samples = list(zip(points, labels.tolist()))
    image = paddle.layer.data(name="pixel", type=paddle.data_type.dense_vector(4))
    label = paddle.layer.data(name="label", type=paddle.data_type.integer_value(3))
    hidden = paddle.layer.fc(input=image, size=16, act=paddle.activation.Relu())
    predict = paddle.layer.fc(input=hidden, size=3, act=paddle.activation.Softmax())
    cost = paddle.layer.classification_cost(input=predict, label=label)
    parameters = paddle.parameters.create(cost)
    assert parameters.names() == ["fc_0.b", "fc_0.w", "fc_1.b", "fc_1.w"] and parameters.get_shape("fc_0.w") == (4, 16)
    trainer = paddle.trainer.SGD(cost=cost, parameters=parameters,
                                 update_equation=paddle.optimizer.Adam(learning_rate=0.01))
    errors_seen = []
    trainer.train(paddle.batch(lambda: iter(samples), 50), num_passes=5,
                  event_handler=lambda e: isinstance(e, paddle.event.EndPass) and errors_seen.append(
                      e.metrics["classification_error_evaluator"]))
    result = trainer.test(paddle.batch(lambda: iter(samples), 200))
    assert errors_seen[-1] < errors_seen[0] and result.metrics["classification_error_evaluator"] < 0.1
    probs = paddle.infer(output_layer=predict, parameters=parameters, input=[(p,) for p in points[:10]])
    assert probs.shape == (10, 3) and np.allclose(probs.sum(1), 1, atol=1e-5)
    assert (probs.argmax(1) == labels[:10]).mean() >= 0.8


def test_parameters_can_be_saved_loaded_and_set(tmp_path):
    paddle.init(seed=3)
    x = paddle.layer.data(name="x", type=paddle.data_type.dense_vector(3))
    out = paddle.layer.fc(input=x, size=2)
    params = paddle.parameters.create(out)
    params["fc_0.w"] = np.arange(6).reshape(3, 2)
    np.testing.assert_array_equal(params["fc_0.w"], np.arange(6, dtype="f4").reshape(3, 2))
    with pytest.raises(errors.InvalidArgumentError, match="has shape"):
        params.set("fc_0.w", np.zeros((2, 3)))
    with pytest.raises(errors.NotFoundError, match="did you mean 'fc_0.w'"):
        params.get("fc_0.ww")
    params.save(tmp_path / "p.pdiparams")
    buf = io.BytesIO()
    params.to_tar(buf)
    fresh = paddle.parameters.create(out)
    assert not np.array_equal(fresh["fc_0.w"], params["fc_0.w"])
    fresh.load(tmp_path / "p.pdiparams")
    np.testing.assert_array_equal(fresh["fc_0.w"], params["fc_0.w"])
    other = paddle.parameters.create(out)
    buf.seek(0)
    other.init_from_tar(buf)
    np.testing.assert_array_equal(other["fc_0.w"], params["fc_0.w"])


def test_v2_mistakes_are_reported():
    paddle.init()
    x = paddle.layer.data(name="x", type=paddle.data_type.dense_vector(3))
    with pytest.raises(errors.InvalidArgumentError, match="already a data layer"):
        paddle.layer.data(name="x", type=paddle.data_type.integer_value(3))
    with pytest.raises(errors.InvalidArgumentError, match="trainer_count must be 1"):
        paddle.init(trainer_count=2)
    out = paddle.layer.fc(input=x, size=1)
    params = paddle.parameters.create(out)
    with pytest.raises(errors.InvalidArgumentError, match="takes 3 values per sample"):
        paddle.infer(output_layer=out, parameters=params, input=[([1.0, 2.0],)])
    with pytest.raises(errors.InvalidArgumentError, match="momentum must be in"):
        paddle.optimizer.Momentum(momentum=1.5)
