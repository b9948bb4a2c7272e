"""v2 inference: the values of output layers for a list of samples."""

from paddlec.executor import Executor
from paddlec.v2 import topology
from paddlec.v2.feeding import feed_dict
from paddlec.v2.parameters import Parameters

__all__ = ["infer"]


def infer(output_layer, parameters, input, feeding=None, field="value"):
    """Runs the network in test mode (dropout off, batch_norm on its running statistics) on the
    samples ``input`` and returns the output layer's values as an array, or a list of arrays for a
    list of output layers."""
    if field != "value":
        raise ValueError("infer(): only field='value' is supported, got %r" % (field,))
    if not isinstance(parameters, Parameters):
        raise TypeError("infer(): parameters must come from paddlec.v2.parameters.create")
    outputs = list(output_layer) if isinstance(output_layer, (list, tuple)) else [output_layer]
    for o in outputs:
        topology.check_layer(o, "infer(): output_layer")
    program = topology.prune(outputs, for_test=True)
    values = Executor(topology.state()["place"]).run(
        program, feed=feed_dict(program, input, feeding), fetch_list=[o.name for o in outputs],
        scope=parameters.scope)
    return values if isinstance(output_layer, (list, tuple)) else values[0]
