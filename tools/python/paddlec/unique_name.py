"""Unique names for variables and layers: ``fc`` -> ``fc_0``, ``fc_1``, ...; ``guard`` scopes the counters."""

import contextlib
import threading

_state = threading.local()


def _counters():
    if not hasattr(_state, "counters"):
        _state.counters = {}
    return _state.counters


def generate(prefix):
    """The next name for ``prefix``: ``prefix_0``, ``prefix_1``, ..."""
    counters = _counters()
    n = counters.get(prefix, 0)
    counters[prefix] = n + 1
    return "%s_%d" % (prefix, n)


@contextlib.contextmanager
def using(counters):
    """Generates from ``counters`` (a dict, updated in place) inside the block: an object that
    builds its own network (a Model, the v2 network) keeps its names independent of others."""
    previous = _counters()
    _state.counters = counters
    try:
        yield
    finally:
        _state.counters = previous


@contextlib.contextmanager
def guard():
    """Counters start from zero inside the block and are restored after it, so building the same
    network twice gives the same names."""
    saved = dict(_counters())
    _counters().clear()
    try:
        yield
    finally:
        _counters().clear()
        _counters().update(saved)
