"""Parameter initializers. Each stands for an ``initializer`` spec on the parameter's VarDesc, which
the init-params pass turns into an op of the startup program, the same way for Python and for
``paddlec compile``."""

from paddlec import errors

__all__ = ["Initializer", "Constant", "Uniform", "Normal", "Xavier", "spec_of"]


class Initializer:
    """Base class: ``spec`` is the text init-params reads."""

    spec = None

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.spec)


class Constant(Initializer):
    """Every element equals ``value``."""

    def __init__(self, value=0.0):
        self.value = float(value)
        self.spec = "zeros" if self.value == 0.0 else "ones" if self.value == 1.0 else "constant:%r" % self.value


class Uniform(Initializer):
    """Uniform in [low, high]."""

    def __init__(self, low=-1.0, high=1.0):
        if not float(low) <= float(high):
            raise errors.make(errors.InvalidArgumentError, "Uniform needs low <= high, got %r and %r" % (low, high))
        self.low, self.high = float(low), float(high)
        self.spec = "uniform:%r:%r" % (self.low, self.high)


class Normal(Initializer):
    """Gaussian with mean ``loc`` and standard deviation ``scale``."""

    def __init__(self, loc=0.0, scale=1.0):
        if not float(scale) >= 0:
            raise errors.make(errors.InvalidArgumentError, "Normal needs scale >= 0, got %r" % (scale,))
        self.loc, self.scale = float(loc), float(scale)
        self.spec = "normal:%r:%r" % (self.loc, self.scale)


class Xavier(Initializer):
    """Glorot: uniform in +-sqrt(6 / (fan_in + fan_out)), or normal with std sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, uniform=True):
        self.uniform = bool(uniform)
        self.spec = "xavier_uniform" if self.uniform else "xavier_normal"


ConstantInitializer, UniformInitializer, NormalInitializer, XavierInitializer = Constant, Uniform, Normal, Xavier

_KINDS = {"zeros": 1, "ones": 1, "constant": 2, "uniform": 3, "normal": 3, "xavier_uniform": 1, "xavier_normal": 1}


def spec_of(init):
    """The spec text of an Initializer or of a spec string (checked)."""
    if isinstance(init, Initializer):
        return init.spec
    if isinstance(init, str):
        parts = init.split(":")
        ok = _KINDS.get(parts[0]) == len(parts)
        try:
            [float(p) for p in parts[1:]]
        except ValueError:
            ok = False
        if not ok:
            raise errors.make(errors.InvalidArgumentError, "invalid initializer %r" % init,
                              notes=["expected zeros, ones, constant:V, uniform:LO:HI, normal:MEAN:STD, xavier_uniform "
                                     "or xavier_normal"])
        return init
    raise TypeError("an initializer must be an Initializer or a spec str, got %s" % type(init).__name__)
