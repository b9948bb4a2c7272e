"""The v2 API of the design documents (``import paddlec.v2 as paddle``): layers with typed data
inputs, Parameters, update equations and an SGD trainer with event handlers, all as thin layers
over paddlec's programs, compile passes and executor::

    import paddlec.v2 as paddle
    paddle.init()
    x = paddle.layer.data(name="x", type=paddle.data_type.dense_vector(13))
    y = paddle.layer.data(name="y", type=paddle.data_type.dense_vector(1))
    y_predict = paddle.layer.fc(input=x, size=1, act=paddle.activation.Linear())
    cost = paddle.layer.mse(input=y_predict, label=y)
    parameters = paddle.parameters.create(cost)
    trainer = paddle.trainer.SGD(cost=cost, parameters=parameters,
                                 update_equation=paddle.optimizer.Momentum(momentum=0.9, learning_rate=0.01))
    trainer.train(reader=paddle.batch(samples, batch_size=32), num_passes=10, feeding={"x": 0, "y": 1})
"""

from paddlec.v2 import activation, data_type, event, layer, optimizer, parameters, reader, trainer, topology
from paddlec.v2.inference import infer
from paddlec.v2.reader import batch

__all__ = ["activation", "batch", "data_type", "event", "infer", "init", "layer", "optimizer", "parameters",
           "reader", "trainer"]


def init(use_gpu=False, trainer_count=1, seed=0):
    """Starts a new network (layers defined before are forgotten) and sets where and with which
    random seed trainers and infer() run. One trainer process per call: trainer_count must be 1."""
    topology.reset(place="gpu" if use_gpu else "cpu", trainer_count=trainer_count, seed=seed)
