"""Operator functions, one per op registered in the C++ core, built at import from the source
``paddlec gen-python`` writes (paddlec._core.generate_ops_source()), so the two always agree.

Each function appends its op to the current block of the default main program. Arguments are
keyword-only, named in snake_case after the op's slots and attributes; see any function's
docstring, e.g. ``help(paddlec.ops.conv2d)``.
"""

import linecache

from paddlec import _core

SOURCE = _core.generate_ops_source()
_FILENAME = "<paddlec.ops generated>"

# Registered with linecache, so tracebacks and inspect.getsource show the generated lines.
linecache.cache[_FILENAME] = (len(SOURCE), None, SOURCE.splitlines(True), _FILENAME)
_namespace = {"__name__": __name__}
exec(compile(SOURCE, _FILENAME, "exec"), _namespace)  # noqa: S102 -- the source is ours, generated in C++

__all__ = list(_namespace["__all__"])
globals().update({name: _namespace[name] for name in __all__})
del _namespace
