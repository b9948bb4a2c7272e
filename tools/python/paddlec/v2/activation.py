"""Activations of v2 layers."""

__all__ = ["Linear", "Relu", "Sigmoid", "Tanh", "Softmax"]


class _Activation:
    name = None

    def __repr__(self):
        return "%s()" % type(self).__name__


class Linear(_Activation):
    """The identity."""


class Relu(_Activation):
    name = "relu"


class Sigmoid(_Activation):
    name = "sigmoid"


class Tanh(_Activation):
    name = "tanh"


class Softmax(_Activation):
    name = "softmax"


Identity = Linear


def name_of(act):
    if act is None:
        return None
    if isinstance(act, _Activation):
        return act.name
    if isinstance(act, type) and issubclass(act, _Activation):
        return act.name
    raise TypeError("act must be a paddlec.v2.activation object, got %r" % (act,))
