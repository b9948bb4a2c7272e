"""Types of v2 data layers: what one sample field holds and the variable that receives a batch."""

from paddlec import errors

__all__ = ["InputType", "dense_vector", "integer_value"]


class InputType:
    """A data layer's type: ``kind`` 'dense' (float32 [batch, dim]) or 'index' (int64 [batch, 1]
    holding values in [0, dim))."""

    def __init__(self, dim, kind):
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
            raise errors.make(errors.InvalidArgumentError, "a data type needs a positive int size, got %r" % (dim,))
        self.dim = dim
        self.kind = kind

    @property
    def shape(self):
        return [self.dim] if self.kind == "dense" else [1]

    @property
    def dtype(self):
        return "float32" if self.kind == "dense" else "int64"

    def __repr__(self):
        return "%s(%d)" % ("dense_vector" if self.kind == "dense" else "integer_value", self.dim)


def dense_vector(dim):
    """A vector of ``dim`` floats per sample."""
    return InputType(dim, "dense")


def integer_value(value_range):
    """One integer in [0, value_range) per sample (a class label, an id)."""
    return InputType(value_range, "index")
