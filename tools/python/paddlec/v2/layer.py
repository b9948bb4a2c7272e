"""v2 layers: each adds ops to the current v2 network (see paddlec.v2.init) and returns its output."""

from paddlec import errors, initializer, layers, ops
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
        var = layers.data(name, type.shape, dtype=type.dtype, lod_level=type.lod_level)
        if type.kind == "sparse_float" and known is None:
            layers.data(name + VALUE_SUFFIX, [1], dtype="float32", lod_level=1)
    if known is None:
        s["data_types"][name] = type
        s["data_order"].append(name)
    return var


# The values of a sparse_float_vector input, fed beside its ids (feeding.py).
VALUE_SUFFIX = "@value"


def _sparse_product(x, t, size, param_attr, name):
    """x's rows of a [t.dim, size] weight summed per sample (times x's values for sparse floats): an
    fc over a sparse vector without its dense one-hot. The weight's gradient is sparse (the looked-up
    rows only), which sgd, momentum and lazy adam apply at the cost of those rows."""
    rows = layers.embedding(x, [t.dim, size], is_sparse=True, param_attr=param_attr, name=name)
    if t.kind == "sparse_float":
        values = x.block.program.global_block().var(x.name + VALUE_SUFFIX)
        rows = ops.elementwise_mul(x=rows, y=values, out=x.block.create_var(name=rows.name + ".scaled"), axis=0)
    # Ids [T, 1] give rows [T, 1, size]; one [batch, size] row per sample after the pool.
    return layers.reshape(layers.sequence_pool(rows, "sum"), [-1, size])


def fc(input, size, act=None, param_attr=None, bias_attr=None, name=None):
    """Fully connected: act(input @ w + b); a list of inputs gets one weight each, summed."""
    inputs = input if isinstance(input, (list, tuple)) else [input]
    for x in inputs:
        topology.check_layer(x, "fc(): input")
    types = topology.state()["data_types"]
    sparse = [types.get(x.name) if types.get(x.name) is not None and types[x.name].is_sparse else None
              for x in inputs]
    if not any(sparse):
        with topology.guard():
            return layers.fc(list(inputs) if isinstance(input, (list, tuple)) else input, size,
                             act=activation.name_of(act), param_attr=param_attr, bias_attr=bias_attr, name=name)
    # Sparse inputs: one row lookup each; dense ones go through an fc without bias; then sum, bias, act.
    with topology.guard():
        terms = []
        for i, (x, t) in enumerate(zip(inputs, sparse)):
            part = None if name is None else "%s.%d" % (name, i)
            if t is not None:
                terms.append(_sparse_product(x, t, size, param_attr, part))
            else:
                terms.append(layers.fc(x, size, param_attr=param_attr, bias_attr=False, name=part))
        out = terms[0] if len(terms) == 1 else ops.sum(x=terms, out=terms[0].block.create_var(
            name=terms[0].name + ".sum"))
        if bias_attr is not False:
            b = out.block.program.global_block().create_parameter(
                shape=[size], dtype="float32", name=(name or out.name) + ".b",
                initializer=initializer.Constant(0.0), trainable=True)
            out = ops.elementwise_add(x=out, y=b, out=out.block.create_var(name=out.name + ".biased"), axis=1)
        act_name = activation.name_of(act)
        return out if act_name is None else getattr(layers, act_name)(out)


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
