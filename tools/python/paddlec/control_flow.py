"""Control flow layers over sub-blocks: ``While`` runs a block of ops as long as a condition holds;
``cond`` (the design's IfElse) runs one of two branches.

The design's blocks nest: the ops of a loop body go into a sub-block of the current block (its
variables are the body's own; those of enclosing blocks, parameters among them, are read and written
where they are declared). The op that runs the block (``while``) is appended to the enclosing block
when the ``with`` ends, with the variables the body reads from outside as X and those it writes as
Out (PaddlePaddle's slots). The backward pass differentiates through it. A loop-carried variable
(read and written by the body, as ``h = f(h)``) is kept per step as it was before the step, so the
body writes it once, after its last read, with an ``assign`` from a body variable: the gradients of
the ops that read it then see the value they read, and those of the ops that made the new value see
theirs (the body variable).

    i = layers.fill_constant([1], "float32", 0.0)
    n = layers.fill_constant([1], "float32", 10.0)
    cond = ops.less_than(x=i, y=n)
    loop = layers.While(cond)
    with loop.block():
        h_new = ops.tanh(x=ops.mul(x=h, y=w))
        ops.assign(x=h_new, out=h)
        ops.scale(x=i, out=i, bias=1.0)
        ops.less_than(x=i, y=n, out=cond)
"""

import contextlib

import numpy as np

from paddlec import errors, framework

__all__ = ["While", "cond", "fill_constant"]


def fill_constant(shape, dtype, value, name=None, stop_gradient=True):
    """A variable of ``shape`` filled with ``value`` (a loop counter or bound: no gradient by default)."""
    from paddlec import ops
    block = framework.default_main_program().current_block()
    out = block.create_var(name=name or block.program._unique_var_name("fill_constant"), shape=list(shape),
                           dtype=dtype, stop_gradient=stop_gradient)
    return ops.fill_constant(out=out, shape=[int(d) for d in shape], value=float(value),
                             dtype=_VAR_TYPES[np.dtype(dtype).name])


# VarType.Type numbers of the element types (framework.proto).
_VAR_TYPES = {"bool": 0, "int16": 1, "int32": 2, "int64": 3, "float16": 4, "float32": 5, "float64": 6}


def _outer_reads_writes(body):
    """The variables of enclosing blocks the body's ops read and write, in first-use order."""
    local = set(body.vars)
    reads, writes = [], []
    for op in body.ops:
        for n in op.input_arg_names:
            if n not in local and n not in reads:
                reads.append(n)
        for n in op.output_arg_names:
            if n not in local and n not in writes:
                writes.append(n)
    return reads, writes


def cond(pred, true_fn, false_fn, name=None):
    """IfElse: ``true_fn()`` when ``pred`` (one bool) holds, else ``false_fn()``; each builds its
    branch's ops (in a sub-block run by a conditional_block op) and returns one Variable, and the two
    must agree in dtype and shape. Returns the taken branch's value. Both branches differentiate:
    the one not taken gives zero gradients."""
    from paddlec import ops
    if not isinstance(pred, framework.Variable) or pred.dtype != "bool":
        raise TypeError("cond(pred, ...): pred must be a bool Variable, got %r" % (pred,))
    for fn, what in ((true_fn, "true_fn"), (false_fn, "false_fn")):
        if not callable(fn):
            raise TypeError("cond(): %s must be callable, got %r" % (what, fn))
    program = pred.block.program
    parent = program.current_block()
    prefix = program._unique_var_name(name or "cond")
    false_value = fill_constant([1], "bool", 0)
    not_pred = ops.equal(x=pred, y=false_value)
    out = None
    for branch, fn, what in ((pred, true_fn, "true_fn"), (not_pred, false_fn, "false_fn")):
        with program.block_guard() as body:
            result = fn()
            if not isinstance(result, framework.Variable):
                raise TypeError("cond(): %s must return a Variable, got %r" % (what, result))
            if out is None:
                out = parent.create_var(name=prefix + ".out", shape=[-1 if d is None else d for d in result.shape],
                                        dtype=result.dtype)
            elif result.dtype != out.dtype or tuple(result.shape) != tuple(out.shape):
                raise errors.make(errors.InvalidArgumentError, "cond(): the branches disagree: true_fn gives %s %s, "
                                  "false_fn %s %s" % (out.dtype, framework._format_shape(out.shape), result.dtype,
                                                      framework._format_shape(result.shape)))
            ops.assign(x=result, out=out)
        reads, writes = _outer_reads_writes(body)
        scope = parent.create_var(name="%s.%s_scope" % (prefix, what[:-3]), type="STEP_SCOPES")
        parent.append_op("conditional_block", inputs={"Cond": [branch], "Input": reads},
                         outputs={"Out": writes, "Scope": [scope]},
                         attrs={"sub_block": body, "is_scalar_condition": True})
    return out


class While:
    """``with While(cond).block():`` appends a loop: the body's ops run again and again while
    ``cond`` (one bool, which the body must update) holds. ``is_test`` runs every step in one scope
    and keeps nothing for a gradient."""

    def __init__(self, cond, is_test=False, name=None):
        if not isinstance(cond, framework.Variable):
            raise TypeError("While(cond): cond must be a Variable, got %s" % type(cond).__name__)
        if cond.dtype != "bool" or (cond.shape is not None and tuple(cond.shape) not in ((1,), ())):
            raise errors.make(errors.InvalidArgumentError, "While(cond): cond must be one bool, got %s %s"
                              % (cond.dtype, framework._format_shape(cond.shape)), var=cond.name)
        self.cond = cond
        self.is_test = bool(is_test)
        self.name = name
        self._used = False

    @contextlib.contextmanager
    def block(self):
        if self._used:
            raise errors.make(errors.InvalidArgumentError, "While.block() may be entered once")
        self._used = True
        program = self.cond.block.program
        parent = program.current_block()
        with program.block_guard() as body:
            yield body
        reads, writes = _outer_reads_writes(body)
        if self.cond.name not in writes:
            raise errors.make(errors.InvalidArgumentError, "the body of While never writes its condition %r: "
                              "the loop would not end" % self.cond.name, var=self.cond.name,
                              notes=["update it in the body, e.g. ops.less_than(x=i, y=n, out=cond)"])
        steps = parent.create_var(name=program._unique_var_name(self.name or "while") + ".step_scopes",
                                  type="STEP_SCOPES")
        parent.append_op("while", inputs={"X": reads, "Condition": [self.cond]},
                         outputs={"Out": writes, "StepScopes": [steps]},
                         attrs={"sub_block": body, "is_test": self.is_test})
