"""Turning batches of v2 samples (tuples of fields) into arrays for the data layers."""

import numpy as np

from paddlec import errors
from paddlec.v2 import topology


def feed_dict(program, batch, feeding):
    """{data layer: array} for the data layers ``program`` reads; ``feeding`` maps each data layer
    to its field's index in a sample (default: the order the data layers were declared in)."""
    s = topology.state()
    names = topology.data_layers(program)
    if feeding is None:
        feeding = {n: i for i, n in enumerate(names)}
    batch = list(batch)
    if not batch:
        raise errors.make(errors.InvalidArgumentError, "an empty batch")
    feed = {}
    for name in names:
        if name not in feeding:
            raise errors.make(errors.InvalidArgumentError, "feeding has no field for data layer %r" % name,
                              notes=["feeding maps data layer names to field indices: %r" % (feeding,)])
        index = feeding[name]
        t = s["data_types"][name]
        try:
            column = [sample[index] for sample in batch]
        except (IndexError, KeyError, TypeError):
            raise errors.make(errors.InvalidArgumentError, "data layer %r reads field %r, which a sample lacks"
                              % (name, index)) from None
        if t.kind == "dense":
            array = np.asarray(column, dtype=np.float32)
            if array.size != len(batch) * t.dim:
                raise errors.make(errors.InvalidArgumentError, "data layer %r takes %d values per sample, got "
                                  "shape %s" % (name, t.dim, array.shape))
            feed[name] = array.reshape(len(batch), t.dim)
        else:
            array = np.asarray(column, dtype=np.int64).reshape(len(batch), 1)
            if array.min() < 0 or array.max() >= t.dim:
                raise errors.make(errors.InvalidArgumentError, "data layer %r takes integers in [0, %d), got %d..%d"
                                  % (name, t.dim, array.min(), array.max()))
            feed[name] = array
    return feed
