"""v2 layers: each adds ops to the current v2 network (see paddlec.v2.init) and returns its output."""

from paddlec import errors, layers, ops
from paddlec.v2 import activation, topology
from paddlec.v2.data_type import InputType

__all__ = ["data", "fc", "join", "mse", "mse_cost", "square_error_cost", "classification_cost",
           "cross_entropy_cost"]


def data(name, type):
    """A data layer receiving one field of each sample (see paddlec.v2.data_type)."""
    if not isinstance(type, InputType):
        raise TypeError("data(): type must come from paddlec.v2.data_type, got %r" % (type,))
    s = topology.state()
    known = s["data_types"].get(name)
    if known is not None and (known.kind, known.dim) != (type.kind, type.dim):
        raise errors.make(errors.InvalidArgumentError, "data(): %r is already a data layer of type %r" % (name, known))
    with topology.guard():
        var = layers.data(name, type.shape, dtype=type.dtype)
    if known is None:
        s["data_types"][name] = type
        s["data_order"].append(name)
    return var


def fc(input, size, act=None, param_attr=None, bias_attr=None, name=None):
    """Fully connected: act(input @ w + b); a list of inputs gets one weight each, summed."""
    inputs = input if isinstance(input, (list, tuple)) else [input]
    for x in inputs:
        topology.check_layer(x, "fc(): input")
    with topology.guard():
        return layers.fc(list(inputs) if isinstance(input, (list, tuple)) else input, size,
                         act=activation.name_of(act), param_attr=param_attr, bias_attr=bias_attr, name=name)


def join(input, name=None):
    """Joins layers side by side: their outputs ([batch, d_i] each) concatenated along the last
    (feature) axis into [batch, sum d_i], so one layer can read several."""
    if not isinstance(input, (list, tuple)) or not input:
        raise TypeError("join(): input must be a non-empty list of layers, got %r" % (input,))
    for x in input:
        topology.check_layer(x, "join(): input")
    with topology.guard():
        return layers.concat(list(input), axis=len(input[0].shape) - 1, name=name)


def mse(input, label, name=None):
    """The mean over the batch of the squared error (input - label)^2: a one-value cost."""
    topology.check_layer(input, "mse(): input")
    topology.check_layer(label, "mse(): label")
    with topology.guard():
        return layers.mean(layers.square_error_cost(input, label), name=name)


mse_cost = square_error_cost = mse


def classification_cost(input, label, name=None):
    """The mean cross entropy of class probabilities ``input`` (a softmax) against integer labels;
    the trainer also reports the classification error rate."""
    topology.check_layer(input, "classification_cost(): input")
    topology.check_layer(label, "classification_cost(): label")
    with topology.guard():
        cost = layers.mean(layers.cross_entropy(input, label), name=name)
        accuracy = layers.accuracy(input, label)
        error = ops.scale(x=accuracy, scale=-1.0, bias=1.0)
    topology.state()["metrics"][cost.name] = {"classification_error_evaluator": error}
    return cost


cross_entropy_cost = classification_cost
