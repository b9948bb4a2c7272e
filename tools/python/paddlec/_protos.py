"""The registered OpProtos, read once from the C++ registry, with the generated functions' keyword names."""

import functools
import json

from paddlec import _core, errors

_LIST_TYPES = {"INTS": "INT", "LONGS": "LONG", "FLOATS": "FLOAT", "FLOAT64S": "FLOAT64",
               "BOOLEANS": "BOOLEAN", "STRINGS": "STRING", "BLOCKS": "BLOCK"}
_FIELDS = {"INT": "i", "LONG": "l", "FLOAT": "f", "FLOAT64": "float64", "BOOLEAN": "b", "STRING": "s",
           "BLOCK": "block_idx", "INTS": "ints", "LONGS": "longs", "FLOATS": "floats",
           "FLOAT64S": "float64s", "BOOLEANS": "bools", "STRINGS": "strings", "BLOCKS": "blocks_idx"}


def _scalar(kind, x):
    # The JSON printer writes 64-bit integers and non-finite floats as strings.
    if kind in ("INT", "LONG", "BLOCK"):
        return int(x)
    if kind in ("FLOAT", "FLOAT64"):
        return float(x)
    if kind == "BOOLEAN":
        return bool(x)
    return str(x)


def decode_attr_value(value):
    """The Python value of an OpDesc.Attr in JSON form (lists become tuples)."""
    kind = value["type"]
    raw = value.get(_FIELDS.get(kind, ""))
    if kind in _LIST_TYPES:
        return tuple(_scalar(_LIST_TYPES[kind], x) for x in (raw or ()))
    if raw is None:
        return {"BOOLEAN": False, "STRING": ""}.get(kind, 0.0 if kind in ("FLOAT", "FLOAT64") else 0)
    return _scalar(kind, raw)


class SlotSpec:
    """An input or output slot of an op."""

    __slots__ = ("name", "comment", "duplicable", "dispensable", "intermediate", "py_name")

    def __init__(self, d, py_name):
        self.name = d["name"]
        self.comment = d.get("comment", "")
        self.duplicable = bool(d.get("duplicable", False))
        self.dispensable = bool(d.get("dispensable", False))
        self.intermediate = bool(d.get("intermediate", False))
        self.py_name = py_name

    def __repr__(self):
        return "SlotSpec(%r)" % self.name


class AttrSpec:
    """An attribute of an op: type, default, checks."""

    __slots__ = ("name", "type", "comment", "has_default", "default", "min", "max", "min_exclusive",
                 "max_exclusive", "allowed", "non_empty", "extra", "py_name")

    def __init__(self, d, py_name=None):
        self.name = d["name"]
        self.type = d["type"]
        self.comment = d.get("comment", "")
        self.has_default = "default_value" in d
        self.default = decode_attr_value(d["default_value"]) if self.has_default else None
        self.min = float(d["min"]) if "min" in d else None
        self.max = float(d["max"]) if "max" in d else None
        # GreaterThan / LessThan: the bound itself is out of range.
        self.min_exclusive = bool(d.get("min_exclusive", False))
        self.max_exclusive = bool(d.get("max_exclusive", False))
        if d.get("allowed_strings"):
            self.allowed = tuple(d["allowed_strings"])
        elif d.get("allowed_ints"):
            self.allowed = tuple(int(x) for x in d["allowed_ints"])
        else:
            self.allowed = None
        self.non_empty = bool(d.get("non_empty", False))
        self.extra = bool(d.get("extra", False))
        self.py_name = py_name

    def __repr__(self):
        return "AttrSpec(%r, %s)" % (self.name, self.type)


class OpSpec:
    """One registered op: its proto and its generated function's signature."""

    def __init__(self, d):
        proto = d["proto"]
        self.type = proto["type"]
        self.comment = proto.get("comment", "")
        self.kernels = tuple(d.get("kernels", ()))
        self.function_name = _core.op_function_name(self.type)
        names = {(kind, proto_name): py for kind, proto_name, py in _core.op_python_args(self.type)}
        self.inputs = [SlotSpec(v, names[("input", v["name"])]) for v in proto.get("inputs", ())]
        self.outputs = [SlotSpec(v, names[("output", v["name"])]) for v in proto.get("outputs", ())]
        self.attrs = {a["name"]: AttrSpec(a, names.get(("attr", a["name"]))) for a in proto.get("attrs", ())}
        self._inputs = {s.name: s for s in self.inputs}
        self._outputs = {s.name: s for s in self.outputs}
        # What the generated function returns: outputs neither intermediate nor dispensable.
        self.returned = [s for s in self.outputs if not s.intermediate and not s.dispensable]

    def input(self, slot):
        return self._inputs.get(slot)

    def output(self, slot):
        return self._outputs.get(slot)

    def __repr__(self):
        return "OpSpec(%r)" % self.type


@functools.lru_cache(maxsize=None)
def _registry():
    dump = json.loads(_core.op_protos_json())
    ops = {d["proto"]["type"]: d for d in dump["ops"]}
    common = {a["name"]: AttrSpec(a) for a in dump.get("common_attrs", ())}
    return ops, common, dump.get("paddlec_version", "")


@functools.lru_cache(maxsize=None)
def op(op_type):
    """The OpSpec of a registered op; NotFoundError (naming close matches) otherwise."""
    ops, _, _ = _registry()
    if op_type not in ops:
        import difflib
        close = difflib.get_close_matches(str(op_type), list(ops), n=3)
        raise errors.make(errors.NotFoundError, "no op named %r is registered" % (op_type,),
                          notes=["did you mean %s?" % " or ".join(repr(c) for c in close)] if close else
                          ["paddlec.ops lists every op"])
    return OpSpec(ops[op_type])


def op_types():
    """Every registered op type, sorted."""
    return sorted(_registry()[0])


def common_attr(name):
    """An attribute every op accepts (op_role, op_namescope, ...), or None."""
    return _registry()[1].get(name)
