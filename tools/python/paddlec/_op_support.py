"""What the generated operator functions (paddlec.ops) call: argument checks, attribute casts and
the creation of outputs, before the C++ core checks the op and infers its shapes."""

import math
import numbers

import numpy as np

from paddlec import _protos, errors, framework

_ELEMENT = {"INTS": "INT", "LONGS": "LONG", "FLOATS": "FLOAT", "FLOAT64S": "FLOAT64", "BOOLEANS": "BOOLEAN",
            "STRINGS": "STRING", "BLOCKS": "BLOCK"}
_WANT = {"INT": "an int", "LONG": "an int", "FLOAT": "a float", "FLOAT64": "a float", "BOOLEAN": "a bool",
         "STRING": "a str", "BLOCK": "a Block or a block index"}
_PLAIN = {"INT": "int", "LONG": "int", "FLOAT": "float", "FLOAT64": "float", "BOOLEAN": "bool", "STRING": "str",
          "BLOCK": "Block or block index"}
_INT_RANGE = {"INT": (-2 ** 31, 2 ** 31 - 1), "LONG": (-2 ** 63, 2 ** 63 - 1), "BLOCK": (0, 2 ** 31 - 1)}
_FLT_MAX = float(np.finfo(np.float32).max)


def _number(v):
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def _short(v):
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


class _Where:
    """Names an attribute in messages: op, attribute, and the keyword when it differs."""

    def __init__(self, op_type, spec, arg):
        self.op_type = op_type
        self.spec = spec
        self.text = "op %r: attribute %r" % (op_type, spec.name)
        if arg and arg != spec.name:
            self.text += " (argument %r)" % arg

    def type_error(self, want, value):
        return errors.make(errors.AttributeTypeError, "%s (%s) takes %s, got %s %s" % (
            self.text, self.spec.type, want, type(value).__name__, _short(value)), op_type=self.op_type)

    def value_error(self, message, cls=errors.ValidationError):
        return errors.make(cls, "%s %s" % (self.text, message), op_type=self.op_type)


def _scalar(where, kind, value):
    if kind in ("INT", "LONG", "BLOCK"):
        if kind == "BLOCK" and isinstance(value, framework.Block):
            return value.idx
        if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
            raise where.type_error(_WANT[kind], value)
        v = int(value)
        lo, hi = _INT_RANGE[kind]
        if not lo <= v <= hi:
            raise where.value_error("value %d is out of range for %s" % (v, "a 32-bit int" if kind != "LONG"
                                                                         else "a 64-bit int"),
                                    errors.InvalidArgumentError)
        return v
    if kind in ("FLOAT", "FLOAT64"):
        if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
            raise where.type_error(_WANT[kind], value)
        v = float(value)
        if kind == "FLOAT" and math.isfinite(v) and abs(v) > _FLT_MAX:
            raise where.value_error("value %r is out of range for a 32-bit float" % v, errors.InvalidArgumentError)
        return v
    if kind == "BOOLEAN":
        if not isinstance(value, (bool, np.bool_)):
            raise where.type_error(_WANT[kind], value)
        return bool(value)
    if kind == "STRING":
        if not isinstance(value, str):
            raise where.type_error(_WANT[kind], value)
        return value
    raise where.value_error("has type %s, which Python cannot set" % kind, errors.UnimplementedError)


def _check(where, spec, value):
    values = value if isinstance(value, list) else [value]
    if spec.min is not None or spec.max is not None:
        for v in values:
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                continue
            if isinstance(v, float) and math.isnan(v):
                raise where.value_error("is NaN")
            if (spec.min is not None and v < spec.min) or (spec.max is not None and v > spec.max):
                if spec.min is not None and spec.max is not None:
                    bound = "[%s, %s]" % (_number(spec.min), _number(spec.max))
                elif spec.min is not None:
                    bound = ">= " + _number(spec.min)
                else:
                    bound = "<= " + _number(spec.max)
                raise where.value_error("value %s is out of range: must be %s" % (_number(v), bound))
    if spec.allowed is not None:
        for v in values:
            if v not in spec.allowed:
                raise where.value_error("value %r is not allowed: expected one of %s"
                                        % (v, ", ".join(repr(a) for a in spec.allowed)))
    if spec.non_empty and len(value) == 0:
        raise where.value_error("must not be empty")


def cast(op_type, spec, value, arg=None):
    """``value`` checked against an attribute's type, range and allowed values, as the Python value
    the C++ core expects; AttributeTypeError (a TypeError) or ValidationError (a ValueError),
    naming the op and the attribute, otherwise."""
    where = _Where(op_type, spec, arg)
    kind = spec.type
    if kind in _ELEMENT:
        if isinstance(value, np.ndarray):
            if value.ndim != 1:
                raise where.type_error("a list of " + _PLAIN[_ELEMENT[kind]], value)
            value = value.tolist()
        if not isinstance(value, (list, tuple)):
            raise where.type_error("a list of " + _PLAIN[_ELEMENT[kind]], value)
        out = [_scalar(where, _ELEMENT[kind], v) for v in value]
    else:
        out = _scalar(where, kind, value)
    _check(where, spec, out)
    return out


def cast_attr(op_type, name, value):
    """Casts one attribute of ``op_type`` (its own or a common one); attributes the op does not
    know pass through unchanged, for the C++ checker to report with a 'did you mean' hint."""
    spec = _protos.op(op_type).attrs.get(name) or _protos.common_attr(name)
    return value if spec is None else cast(op_type, spec, value)


def cast_attrs(op_type, attrs):
    out = {}
    for name, value in attrs.items():
        if not isinstance(name, str):
            raise TypeError("op %r: attribute names must be str, got %r" % (op_type, name))
        out[name] = cast_attr(op_type, name, value)
    return out


def _describe(block, name):
    v = block._find_var_recursive(name)
    if v is None or v.shape is None:
        return name
    return "%s %s %s" % (name, framework._format_shape(v.shape), v.dtype)


def _arg_names(block, fn, slot, value, is_input, created):
    what = "%s(): argument %r (%s slot %s)" % (fn, slot.py_name, "input" if is_input else "output", slot.name)
    if isinstance(value, (list, tuple)):
        if not slot.duplicable:
            raise TypeError("%s takes one Variable, got a %s of %d" % (what, type(value).__name__, len(value)))
        items = list(value)
        if not items and not slot.dispensable:
            raise errors.make(errors.InvalidArgumentError, "%s needs at least one Variable" % what)
    else:
        items = [value]
    names = []
    for item in items:
        if isinstance(item, framework.Variable):
            if item.block.program is not block.program:
                raise errors.make(errors.InvalidArgumentError, "%s is variable %r of another program" % (what, item.name),
                                  var=item.name, notes=["build the whole network inside one program_guard"])
            if block._find_var_recursive(item.name) is None:
                raise errors.make(errors.InvalidArgumentError, "%s is variable %r of block %d, which block %d cannot "
                                  "see" % (what, item.name, item.block.idx, block.idx), var=item.name)
            names.append(item.name)
        elif isinstance(item, str):
            if block._find_var_recursive(item) is None:
                if is_input:
                    visible = [n for b in block._ancestry() for n in b.vars]
                    raise errors.make(errors.NotFoundError, "%s names variable %r, which does not exist" % (what, item),
                                      var=item, notes=framework._hint(item, visible))
                created.append(block.create_var(name=item))
            names.append(item)
        else:
            raise TypeError("%s takes a Variable%s, got %s" % (what, " or a list of Variables" if slot.duplicable else "",
                                                             type(item).__name__))
    return names


def append_op(op_type, inputs, outputs, attrs):
    """Appends an ``op_type`` op to the current block of the default main program: ``inputs`` and
    ``outputs`` map slot names to the arguments given, ``attrs`` attribute names to values. Outputs
    not given are created; returns the outputs that are neither intermediate nor dispensable (one
    Variable, or a tuple in proto order), or the Operator when there are none."""
    spec = _protos.op(op_type)
    fn = spec.function_name
    program = framework.default_main_program()
    block = program.current_block()
    created = []
    try:
        ins, described = {}, []
        for slot_name, value in inputs.items():
            slot = spec.input(slot_name)
            if value is None:
                if not slot.dispensable:
                    raise TypeError("%s(): argument %r (input slot %s) is required, got None"
                                    % (fn, slot.py_name, slot.name))
                continue
            ins[slot_name] = _arg_names(block, fn, slot, value, True, created)
            described.append("%s=%s" % (slot.py_name, ", ".join(_describe(block, n) for n in ins[slot_name])))
        cast_values = {name: cast(op_type, spec.attrs[name], v, spec.attrs[name].py_name) for name, v in attrs.items()}
        outs, base = {}, None
        for slot_name, value in outputs.items():
            slot = spec.output(slot_name)
            if value is None:
                if slot.dispensable:
                    continue
                if slot.duplicable:
                    raise TypeError("%s(): argument %r (output slot %s) is duplicable: pass a list of Variables or "
                                    "names" % (fn, slot.py_name, slot.name))
                if base is None:
                    base = program._unique_var_name(op_type)
                created.append(block.create_var(name="%s.%s" % (base, slot.py_name)))
                outs[slot_name] = [created[-1].name]
            else:
                outs[slot_name] = _arg_names(block, fn, slot, value, False, created)
        try:
            op = block._checked_op(None, op_type, ins, outs, cast_values)
        except (errors.ShapeError, errors.ValidationError) as e:
            if described:
                errors.add_note(e, "%s() was called with %s" % (fn, "; ".join(described)))
            raise
    except BaseException:
        for v in reversed(created):
            if block.has_var(v.name):
                block._remove_var(v.name)
        raise
    results = []
    for slot in spec.returned:
        found = [block._find_var_recursive(n) for n in outs[slot.name]]
        results.append(found if slot.duplicable else found[0])
    if not results:
        return op
    return results[0] if len(results) == 1 else tuple(results)
