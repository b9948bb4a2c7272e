"""What the generated operator functions (paddlec.ops) call: argument checks, attribute casts and
the creation of outputs, before the C++ core checks the op and infers its shapes."""

from paddlec import _core, _protos, errors, framework


def cast(op_type, spec, value, arg=None):
    """``value`` checked against an attribute's type, range and allowed values, as the Python value
    the C++ core expects; AttributeTypeError (a TypeError) or ValidationError (a ValueError),
    naming the op and the attribute, otherwise. The checks and their messages are the core's
    (``paddlec compile`` applies the same ones)."""
    if spec.type == "BLOCK" and isinstance(value, framework.Block):
        value = value.idx
    elif spec.type == "BLOCKS" and isinstance(value, (list, tuple)):
        value = [v.idx if isinstance(v, framework.Block) else v for v in value]
    return _core.check_attr(op_type, spec.name, value, arg or "")


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
