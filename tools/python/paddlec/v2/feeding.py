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
        if t.is_sequence:
            feed.update(_sequence_feed(name, t, column))
            continue
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


def _sequence_feed(name, t, column):
    """The LoD batch of a sequence field: every sample's ids (and values, for sparse floats) in one
    [total, 1] column, one sequence per sample."""
    ids, values, offsets = [], [], [0]
    for sample in column:
        entries = list(sample)
        if t.kind == "sparse_float":
            try:
                pairs = [(int(i), float(v)) for i, v in entries]
            except (TypeError, ValueError):
                raise errors.make(errors.InvalidArgumentError, "data layer %r takes (index, value) pairs per sample, "
                                  "got %r" % (name, sample)) from None
            ids.extend(i for i, _ in pairs)
            values.extend(v for _, v in pairs)
        else:
            ids.extend(int(i) for i in entries)
        offsets.append(len(ids))
    array = np.asarray(ids, dtype=np.int64).reshape(-1, 1)
    if array.size and (array.min() < 0 or array.max() >= t.dim):
        raise errors.make(errors.InvalidArgumentError, "data layer %r takes indices in [0, %d), got %d..%d"
                          % (name, t.dim, array.min(), array.max()))
    feed = {name: (array, [offsets])}
    if t.kind == "sparse_float":
        from paddlec.v2.layer import VALUE_SUFFIX
        feed[name + VALUE_SUFFIX] = (np.asarray(values, dtype=np.float32).reshape(-1, 1), [offsets])
    return feed
