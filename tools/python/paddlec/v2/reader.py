"""Readers: functions returning an iterator of samples (tuples of fields); batch() groups them."""

import random

__all__ = ["batch", "shuffle"]


def batch(reader, batch_size, drop_last=False):
    """A reader of lists of ``batch_size`` samples (the last one shorter unless drop_last)."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError("batch_size must be a positive int, got %r" % (batch_size,))

    def batched():
        group = []
        for sample in reader():
            group.append(sample)
            if len(group) == batch_size:
                yield group
                group = []
        if group and not drop_last:
            yield group

    return batched


def shuffle(reader, buf_size, seed=None):
    """Shuffles samples within windows of ``buf_size``; a seed makes the order repeatable."""
    rng = random.Random(seed)

    def shuffled():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                rng.shuffle(buf)
                yield from buf
                buf = []
        rng.shuffle(buf)
        yield from buf

    return shuffled
