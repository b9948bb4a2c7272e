"""Progress bars for Python training loops (tqdm): loss and throughput per batch, the time left
when the number of samples is known.

A bar is drawn on stderr when it is a terminal (``progress=None``, the default everywhere), always
with ``progress=True``, and never with ``progress=False`` or when the environment sets
``PADDLEC_QUIET`` (the Python counterpart of ``paddlec -q``).
"""

import os
import sys

from tqdm import tqdm

__all__ = ["bar"]


def enabled(progress=None):
    """Whether a bar would be shown: True / False as given, else stderr is a terminal and
    PADDLEC_QUIET is not set."""
    if progress is not None:
        return bool(progress)
    return not os.environ.get("PADDLEC_QUIET") and sys.stderr.isatty()


def bar(total=None, desc=None, progress=None, file=None):
    """A tqdm bar counting samples (call ``update(n)`` per batch and ``set_postfix(loss=...)``);
    disabled bars print nothing. ``file`` defaults to stderr."""
    return tqdm(total=total, desc=desc, unit="sample", unit_scale=True, dynamic_ncols=True, leave=True,
                disable=not enabled(progress), file=file if file is not None else sys.stderr, mininterval=0.1)
