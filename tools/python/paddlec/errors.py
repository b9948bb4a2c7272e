"""paddlec's exceptions: one class per error code, each also the matching builtin exception.

Errors raised by the C++ core carry paddlec's rendered diagnostic as their message (the op, its
slots and the shapes involved) and its parts as attributes: ``code``, ``message``, ``op_type``,
``block``, ``op_index``, ``var``, ``notes`` and ``diagnostic``.
"""

from paddlec import _core

Error = _core.Error
InvalidArgumentError = _core.InvalidArgumentError  # also a ValueError
ParseError = _core.ParseError  # also a ValueError
ValidationError = _core.ValidationError  # also a ValueError
ShapeError = _core.ShapeError  # also a ValueError
NotFoundError = _core.NotFoundError  # also a LookupError
FileError = _core.FileError  # also an OSError
UnimplementedError = _core.UnimplementedError  # also a NotImplementedError
UnavailableError = _core.UnavailableError  # also a RuntimeError
ResourceExhaustedError = _core.ResourceExhaustedError  # also a MemoryError
ExecutionError = _core.ExecutionError  # also a RuntimeError
InternalError = _core.InternalError  # also a RuntimeError
AttributeTypeError = _core.AttributeTypeError  # also a TypeError

__all__ = [
    "Error",
    "InvalidArgumentError",
    "ParseError",
    "ValidationError",
    "ShapeError",
    "NotFoundError",
    "FileError",
    "UnimplementedError",
    "UnavailableError",
    "ResourceExhaustedError",
    "ExecutionError",
    "InternalError",
    "AttributeTypeError",
]

_CODES = {
    InvalidArgumentError: "invalid argument",
    ValidationError: "validation error",
    AttributeTypeError: "validation error",
    NotFoundError: "not found",
}


def make(cls, message, *, op_type=None, var=None, notes=()):
    """An exception of a paddlec class raised from Python, with the attributes the C++ ones carry."""
    text = message + "".join("\nnote: " + n for n in notes)
    exc = cls(text)
    exc.code = _CODES.get(cls, "error")
    exc.message = message
    exc.diagnostic = text
    exc.notes = list(notes)
    exc.op_type = op_type
    exc.block = None
    exc.op_index = None
    exc.var = var
    exc.file = None
    exc.line = None
    return exc


def add_note(exc, note):
    """Appends a ``note:`` line to an exception's message (and its ``notes``), keeping its class."""
    text = (str(exc.args[0]) if exc.args else "") + "\nnote: " + note
    exc.args = (text,)
    if isinstance(exc, Error):
        exc.notes = list(getattr(exc, "notes", [])) + [note]
        exc.diagnostic = text
    return exc


def prefix(exc, context):
    """Puts ``context: `` before an exception's message (the layer that appended the failing op)."""
    text = context + ": " + (str(exc.args[0]) if exc.args else "")
    exc.args = (text,)
    if isinstance(exc, Error):
        exc.diagnostic = text
    return exc
