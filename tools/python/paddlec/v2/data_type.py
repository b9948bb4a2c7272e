"""Types of v2 data layers: what one sample field holds and the variable that receives a batch."""

from paddlec import errors

__all__ = ["InputType", "dense_vector", "integer_value", "integer_value_sequence", "sparse_binary_vector",
           "sparse_float_vector", "sparse_vector"]

_NAMES = {"dense": "dense_vector", "index": "integer_value", "index_sequence": "integer_value_sequence",
          "sparse_binary": "sparse_binary_vector", "sparse_float": "sparse_float_vector"}


class InputType:
    """A data layer's type: ``kind`` 'dense' (float32 [batch, dim]), 'index' (int64 [batch, 1]
    holding values in [0, dim)), or one of the sequence kinds, fed as a LoD batch of int64 ids (one
    sequence per sample): 'index_sequence' (ids in [0, dim)), 'sparse_binary' (the ids of the
    nonzero entries of a dim-wide 0/1 vector) and 'sparse_float' (ids with values, the values fed to
    ``<name>@value``). An fc over a sparse input looks its ids up in the weight rows (a sparse,
    embedding-style product) instead of multiplying a dense one-hot."""

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

    @property
    def lod_level(self):
        return 1 if self.is_sequence else 0

    @property
    def is_sequence(self):
        return self.kind in ("index_sequence", "sparse_binary", "sparse_float")

    @property
    def is_sparse(self):
        return self.kind in ("sparse_binary", "sparse_float")

    def __repr__(self):
        return "%s(%d)" % (_NAMES[self.kind], self.dim)


def dense_vector(dim):
    """A vector of ``dim`` floats per sample."""
    return InputType(dim, "dense")


def integer_value(value_range):
    """One integer in [0, value_range) per sample (a class label, an id)."""
    return InputType(value_range, "index")


def integer_value_sequence(value_range):
    """A list of integers in [0, value_range) per sample (word ids): a sequence."""
    return InputType(value_range, "index_sequence")


def sparse_binary_vector(dim):
    """A dim-wide 0/1 vector per sample, given as the list of its nonzero indices."""
    return InputType(dim, "sparse_binary")


def sparse_float_vector(dim):
    """A dim-wide sparse float vector per sample, given as a list of (index, value) pairs."""
    return InputType(dim, "sparse_float")


sparse_vector = sparse_float_vector
