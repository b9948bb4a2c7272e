"""Weight decay for parameters: an L2 regularizer is the parameter's ``regularizer`` spec
('l2:COEFF'), which the optimizer pass turns into ``grad += coeff * param``."""

from paddlec import errors

__all__ = ["L2Decay", "L2DecayRegularizer", "spec_of"]


class L2Decay:
    """Adds ``coeff * param`` to the parameter's gradient."""

    def __init__(self, coeff=0.0):
        coeff = float(coeff)
        if not coeff >= 0:
            raise errors.make(errors.InvalidArgumentError, "L2Decay needs coeff >= 0, got %r" % coeff)
        self.coeff = coeff
        self.spec = "l2:%r" % coeff

    def __repr__(self):
        return "L2Decay(%r)" % self.coeff


L2DecayRegularizer = L2Decay


def spec_of(reg):
    if isinstance(reg, L2Decay):
        return reg.spec
    if isinstance(reg, str) and reg.startswith("l2:"):
        float(reg[3:])
        return reg
    raise TypeError("a regularizer must be an L2Decay or 'l2:COEFF', got %r" % (reg,))
