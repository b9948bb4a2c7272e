"""Programs, blocks, operators and variables: the program-building layer over the C++ descs.

A Program wraps a ProgramDesc owned by C++ (paddlec._core). Every op appended here is checked
against its OpProto and shape-inferred by the C++ core at once, so a Python program is always one
``paddlec compile`` accepts, and errors name the op, its slots and their shapes. Python objects
(Block, Operator, Variable, Parameter) are views that look their data up in the desc, so they stay
right when compile passes (backward, optimizer, ...) rewrite the program.
"""

import contextlib
import difflib
import weakref

import numpy as np

from paddlec import _core, _protos, errors, unique_name

__all__ = [
    "Program",
    "Block",
    "Operator",
    "Variable",
    "Parameter",
    "default_main_program",
    "default_startup_program",
    "switch_main_program",
    "switch_startup_program",
    "program_guard",
]


def _hint(name, candidates):
    close = difflib.get_close_matches(str(name), list(candidates), n=1)
    return ["did you mean %r?" % close[0]] if close else []


def _format_shape(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class Variable:
    """A variable of a block: a named tensor with a shape (``None`` for sizes known only at run
    time, such as the batch), a dtype and flags. Created through Block.create_var, layers or op
    functions; the data lives in a Scope when a program runs."""

    def __init__(self, block, name):
        self._block = block
        self._name = name

    @property
    def block(self):
        return self._block

    @property
    def name(self):
        return self._name

    @property
    def desc(self):
        """The C++ VarDesc."""
        return self._block.desc.var(self._name)

    @property
    def shape(self):
        """Dims as a tuple, ``None`` for unknown sizes; ``None`` for variables that are not tensors."""
        dims = self.desc.shape
        return None if dims is None else tuple(None if d < 0 else d for d in dims)

    @property
    def dtype(self):
        """NumPy's name of the element type ('float32', 'int64', ...)."""
        return self.desc.dtype

    @property
    def type(self):
        """The VarType: 'LOD_TENSOR' for tensors."""
        return self.desc.type

    @property
    def lod_level(self):
        return self.desc.lod_level

    def _flag(name, doc):  # noqa: N805 -- a property factory used in the class body
        def get(self):
            return getattr(self.desc, name)

        def set_(self, value):
            setattr(self.desc, name, bool(value))

        return property(get, set_, doc=doc)

    persistable = _flag("persistable", "Kept in the scope across runs (parameters, optimizer state).")
    stop_gradient = _flag("stop_gradient", "No gradient flows into this variable.")
    need_check_feed = _flag("need_check_feed", "A data input whose fed shape and dtype the executor checks.")
    del _flag

    @property
    def op(self):
        """The Operator that produces the value ops of this block read: the first op writing the
        variable, or None when something reads it before (a feed, a parameter)."""
        return self._block._producer(self._name)

    @property
    def is_parameter(self):
        return isinstance(self, Parameter)

    def __repr__(self):
        shape = self.shape
        return "%s(name=%r, shape=%s, dtype=%r%s)" % (
            type(self).__name__, self._name, "None" if shape is None else _format_shape(shape), self.dtype,
            ", persistable=True" if self.persistable else "")

    __str__ = __repr__

    # Arithmetic builds ops in the current block, as PaddlePaddle's Variable does.
    def _binary(self, other, op_type, reverse=False):
        from paddlec import ops
        if isinstance(other, Variable):
            x, y = (other, self) if reverse else (self, other)
            return getattr(ops, op_type)(x=x, y=y)
        if isinstance(other, (int, float, np.integer, np.floating)) and not isinstance(other, bool):
            v = float(other)
            if op_type == "elementwise_add":
                return ops.scale(x=self, scale=1.0, bias=v)
            if op_type == "elementwise_sub":
                return ops.scale(x=self, scale=-1.0, bias=v) if reverse else ops.scale(x=self, scale=1.0, bias=-v)
            if op_type == "elementwise_mul":
                return ops.scale(x=self, scale=v)
            if op_type == "elementwise_div" and not reverse:
                return ops.scale(x=self, scale=1.0 / v)
        return NotImplemented

    def __add__(self, other):
        return self._binary(other, "elementwise_add")

    def __radd__(self, other):
        return self._binary(other, "elementwise_add", reverse=True)

    def __sub__(self, other):
        return self._binary(other, "elementwise_sub")

    def __rsub__(self, other):
        return self._binary(other, "elementwise_sub", reverse=True)

    def __mul__(self, other):
        return self._binary(other, "elementwise_mul")

    def __rmul__(self, other):
        return self._binary(other, "elementwise_mul", reverse=True)

    def __truediv__(self, other):
        return self._binary(other, "elementwise_div")

    def __rtruediv__(self, other):
        return self._binary(other, "elementwise_div", reverse=True)

    def __matmul__(self, other):
        from paddlec import ops
        if not isinstance(other, Variable):
            return NotImplemented
        return ops.matmul_v2(x=self, y=other)

    def __neg__(self):
        from paddlec import ops
        return ops.scale(x=self, scale=-1.0)


class Parameter(Variable):
    """A learned variable of the global block. Its initializer, learning-rate multiplier and
    regularizer are VarDesc attributes that the compile passes turn into ops: init-params writes the
    initializer into the startup program, the optimizer pass scales the learning rate and adds the
    weight decay."""

    @property
    def trainable(self):
        return not self.stop_gradient

    @trainable.setter
    def trainable(self, value):
        self.stop_gradient = not value

    @property
    def initializer(self):
        """The initializer spec ('xavier_uniform', 'constant:0.5', ...); None: chosen by init-params
        from how the parameter is used (Xavier for weights, zeros for biases, ...)."""
        return self.desc.attr("initializer")

    @initializer.setter
    def initializer(self, value):
        from paddlec import initializer as init
        self.desc.set_attr("initializer", None if value is None else init.spec_of(value))

    @property
    def learning_rate(self):
        """The multiplier of the optimizer's learning rate for this parameter."""
        value = self.desc.attr("learning_rate")
        return 1.0 if value is None else float(value)

    @learning_rate.setter
    def learning_rate(self, value):
        value = float(value)
        if not value >= 0:
            raise errors.make(errors.InvalidArgumentError, "parameter %r: learning_rate must be >= 0, got %r"
                              % (self.name, value))
        self.desc.set_attr("learning_rate", None if value == 1.0 else repr(value))

    @property
    def regularizer(self):
        """The regularizer spec ('l2:COEFF'), or None."""
        return self.desc.attr("regularizer")

    @regularizer.setter
    def regularizer(self, value):
        from paddlec import regularizer as reg
        self.desc.set_attr("regularizer", None if value is None else reg.spec_of(value))

    @property
    def optimize_attr(self):
        return {"learning_rate": self.learning_rate}


class Operator:
    """An op of a block, backed by a C++ OpDesc; its outputs' shapes were inferred when it was appended."""

    def __init__(self, block, desc):
        self._block = block
        self._desc = desc

    @property
    def block(self):
        return self._block

    @property
    def desc(self):
        return self._desc

    @property
    def type(self):
        return self._desc.type

    @property
    def idx(self):
        """The op's position in its block."""
        return self._desc.index

    @property
    def input_names(self):
        """The input slots bound, in order."""
        return self._desc.input_names()

    @property
    def output_names(self):
        return self._desc.output_names()

    def input(self, slot):
        """Names of the variables bound to an input slot."""
        return self._desc.input(slot)

    def output(self, slot):
        return self._desc.output(slot)

    @property
    def input_arg_names(self):
        return [a for s in self.input_names for a in self.input(s)]

    @property
    def output_arg_names(self):
        return [a for s in self.output_names for a in self.output(s)]

    @property
    def attr_names(self):
        return self._desc.attr_names()

    def has_attr(self, name):
        return self._desc.has_attr(name)

    def attr(self, name):
        return self._desc.attr(name)

    def all_attrs(self):
        return {n: self._desc.attr(n) for n in self.attr_names}

    def _set_attr(self, name, value):
        from paddlec import _op_support
        self._desc.set_attr(name, _op_support.cast_attr(self.type, name, value))

    def __repr__(self):
        ins = ", ".join("%s=%s" % (s, ",".join(self.input(s))) for s in self.input_names)
        outs = ", ".join("%s=%s" % (s, ",".join(self.output(s))) for s in self.output_names)
        return "%s(%s) -> (%s)" % (self.type, ins, outs)

    __str__ = __repr__


def _is_parameter_desc(d):
    # Parameters from files carry no Python class: PaddlePaddle marks them is_parameter, and a
    # persistable tensor that takes gradients is one by definition (optimizer state is stop_gradient).
    return d.is_parameter or (d.persistable and d.is_tensor and not d.stop_gradient)


class Block:
    """A block of a program: variables and the ops that read and write them, in execution order.
    Block 0 is the global block; parameters always live there."""

    def __init__(self, program, idx):
        self._program = program
        self._idx = idx
        self._desc = program.desc.block(idx)
        self._vars = {}
        self._ops = []
        self._version = -1
        self._epoch = -1

    @property
    def program(self):
        return self._program

    @property
    def idx(self):
        return self._idx

    @property
    def desc(self):
        return self._desc

    @property
    def parent_idx(self):
        return self._desc.parent_idx

    @property
    def parent_block(self):
        """The enclosing block; None for the global block."""
        p = self.parent_idx
        return None if p < 0 else self._program.block(p)

    parent = parent_block

    # ---- Keeping the Python views in step with the C++ desc ----------------------------------

    def _sync(self):
        desc = self._program.desc
        if desc.version == self._version:
            return
        names = self._desc.var_names()
        if list(self._vars) != names:
            old = self._vars
            self._vars = {}
            for n in names:
                v = old.get(n)
                if v is None:
                    d = self._desc.var(n)
                    v = (Parameter if _is_parameter_desc(d) else Variable)(self, n)
                self._vars[n] = v
        if desc.epoch != self._epoch or len(self._ops) != self._desc.num_ops:
            self._ops = [Operator(self, d) for d in self._desc.ops()]
            self._epoch = desc.epoch
        self._version = desc.version

    def _mark_synced(self):
        # Called after an edit whose effect on the views was applied by hand.
        self._version = self._program.desc.version
        self._epoch = self._program.desc.epoch

    @property
    def vars(self):
        """Variables declared in this block, by name, in declaration order."""
        self._sync()
        return self._vars

    @property
    def ops(self):
        """The ops of this block, in execution order."""
        self._sync()
        return self._ops

    def var(self, name):
        """The variable `name` of this block; NotFoundError (a LookupError) when there is none."""
        self._sync()
        v = self._vars.get(name)
        if v is None:
            raise errors.make(errors.NotFoundError, "block %d has no variable named %r" % (self._idx, name),
                              var=name, notes=_hint(name, self._vars))
        return v

    def has_var(self, name):
        self._sync()
        return name in self._vars

    def _find_var_recursive(self, name):
        """The variable `name` of this block or an enclosing one (the innermost wins), or None."""
        idx = self._desc.find_var_block(name)
        return None if idx < 0 else self._program.block(idx).var(name)

    def _var_recursive(self, name):
        v = self._find_var_recursive(name)
        if v is None:
            visible = [n for b in self._ancestry() for n in b.vars]
            raise errors.make(errors.NotFoundError, "no variable named %r is visible from block %d" % (name, self._idx),
                              var=name, notes=_hint(name, visible))
        return v

    def _ancestry(self):
        b = self
        while b is not None:
            yield b
            b = b.parent_block

    def _producer(self, name):
        for op in self.ops:
            if name in op.input_arg_names:
                return None
            if name in op.output_arg_names:
                return op
        return None

    # ---- Variables ----------------------------------------------------------------------------

    def create_var(self, name=None, shape=None, dtype=None, persistable=False, stop_gradient=False,
                   type=None, lod_level=None, need_check_feed=False):
        """Declares a variable in this block (a name is generated when omitted). ``shape`` uses
        None or -1 for unknown sizes. An existing variable of that name is returned when the
        requested shape and dtype agree with it."""
        self._sync()
        if name is None:
            name = self._program._unique_var_name("tmp")
        elif not isinstance(name, str) or not name:
            raise TypeError("a variable name must be a non-empty str, got %r" % (name,))
        if name in self._vars:
            v = self._vars[name]
            if shape is not None and v.shape is not None and tuple(_dims(shape)) != tuple(
                    -1 if d is None else d for d in v.shape):
                raise errors.make(errors.InvalidArgumentError, "variable %r already exists with shape %s, not %s"
                                  % (name, _format_shape(v.shape), _format_shape(tuple(shape))), var=name)
            if dtype is not None and v.dtype is not None and np.dtype(dtype).name != v.dtype:
                raise errors.make(errors.InvalidArgumentError, "variable %r already exists with dtype %s, not %s"
                                  % (name, v.dtype, np.dtype(dtype).name), var=name)
            return v
        d = self._desc.create_var(name)
        try:
            if type is not None:
                d.type = type
            if dtype is not None and d.is_tensor:
                d.dtype = np.dtype(dtype).name
            if shape is not None and d.is_tensor:
                d.shape = _dims(shape)
            if lod_level:
                d.lod_level = int(lod_level)
            d.persistable = bool(persistable)
            d.stop_gradient = bool(stop_gradient)
            d.need_check_feed = bool(need_check_feed)
        except BaseException:
            self._desc.remove_var(name)
            raise
        v = Variable(self, name)
        self._vars[name] = v
        self._mark_synced()
        return v

    def create_parameter(self, shape, dtype="float32", name=None, initializer=None, trainable=True,
                         learning_rate=1.0, regularizer=None, attr=None):
        """Declares a parameter in the program's global block (whatever block this is) and makes
        the current startup program the one that initializes it. ``attr`` (a ParamAttr) supplies
        any of the other arguments. The name of an existing parameter of the same shape and dtype
        shares that parameter."""
        if attr is not None:
            name = attr.name if attr.name is not None else name
            initializer = attr.initializer if attr.initializer is not None else initializer
            trainable = attr.trainable
            learning_rate = attr.learning_rate
            regularizer = attr.regularizer if attr.regularizer is not None else regularizer
        shape = list(shape)
        if any(d is None or int(d) < 0 for d in shape):
            raise errors.make(errors.InvalidArgumentError, "parameter %r needs known dims, got %s"
                              % (name, _format_shape(tuple(shape))))
        return self._new_parameter(shape, dtype, name, initializer, trainable, learning_rate, regularizer)

    def _new_parameter(self, shape, dtype, name, initializer, trainable, learning_rate, regularizer):
        # Unknown dims (-1) are allowed here for a caller that sets them before the parameter is
        # initialized (a Model whose input size comes with its data).
        shape = [-1 if d is None else int(d) for d in shape]
        gb = self._program.global_block()
        if name is None:
            name = self._program._unique_var_name("param")
        if gb.has_var(name):
            # Naming an existing parameter shares it (PaddlePaddle's ParamAttr(name=...) idiom).
            existing = gb.var(name)
            if isinstance(existing, Parameter) and list(existing.desc.shape) == shape and \
                    existing.dtype == np.dtype(dtype).name:
                return existing
            raise errors.make(errors.InvalidArgumentError, "the program already has a variable named %r (%s %s), so "
                              "a %s %s parameter cannot take that name" % (
                                  name, existing.dtype, _format_shape(existing.shape), np.dtype(dtype).name,
                                  _format_shape(tuple(shape))), var=name)
        gb._sync()
        d = gb.desc.create_var(name)
        p = Parameter(gb, name)
        gb._vars[name] = p
        gb._mark_synced()
        try:
            d.dtype = np.dtype(dtype).name
            d.shape = shape
            d.persistable = True
            d.is_parameter = True
            p.trainable = trainable
            p.initializer = initializer
            p.learning_rate = learning_rate
            p.regularizer = regularizer
        except BaseException:
            gb._remove_var(name)
            raise
        if self._program._startup is None:
            self._program._link_startup(default_startup_program())
        return p

    def create_global_var(self, shape, value, dtype="float32", persistable=True, name=None, stop_gradient=True):
        """A persistable variable of the global block filled with `value` by the startup program
        (through its initializer attribute, like a parameter's), e.g. a step counter."""
        gb = self._program.global_block()
        v = gb.create_var(name=name or self._program._unique_var_name("global_var"), shape=shape, dtype=dtype,
                          persistable=persistable, stop_gradient=stop_gradient)
        v.desc.set_attr("initializer", "constant:%r" % float(value))
        if self._program._startup is None:
            self._program._link_startup(default_startup_program())
        return v

    def _remove_var(self, name):
        self._desc.remove_var(name)
        self._vars.pop(name, None)
        self._mark_synced()

    # ---- Ops ----------------------------------------------------------------------------------

    def _names(self, value, what):
        if value is None:
            return []
        if isinstance(value, (Variable, str)):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise TypeError("%s takes Variables or names, got %s" % (what, type(value).__name__))
        out = []
        for v in value:
            if isinstance(v, Variable):
                if v.block.program is not self._program:
                    raise errors.make(errors.InvalidArgumentError, "%s: variable %r belongs to another program"
                                      % (what, v.name), var=v.name)
                out.append(v.name)
            elif isinstance(v, str):
                out.append(v)
            else:
                raise TypeError("%s takes Variables or names, got %s" % (what, type(v).__name__))
        return out

    def _checked_op(self, pos, op_type, inputs, outputs, attrs):
        # Inputs/outputs are {slot: [names]}, attrs already cast; C++ checks and infers shapes.
        self._sync()
        if pos is None:
            d = self._desc.append_op(op_type, inputs, outputs, attrs)
            op = Operator(self, d)
            self._ops.append(op)
        else:
            d = self._desc.insert_op(pos, op_type, inputs, outputs, attrs)
            op = Operator(self, d)
            self._ops.insert(pos, op)
        # The checks declare output variables nobody declared yet; they come last in the desc.
        for n in self._desc.var_names()[len(self._vars):]:
            self._vars[n] = Variable(self, n)
        self._mark_synced()
        return op

    def append_op(self, type, inputs=None, outputs=None, attrs=None):
        """Appends an op: ``inputs``/``outputs`` map slots to Variables, names or lists of them,
        ``attrs`` map attribute names to values (checked and cast against the OpProto). The C++
        core checks the op and infers its output shapes at once; on failure the block is unchanged
        and the exception names the op, the slots and the shapes."""
        return self._insert(None, type, inputs, outputs, attrs)

    def prepend_op(self, type, inputs=None, outputs=None, attrs=None):
        """Like append_op, inserting the op before all others."""
        return self._insert(0, type, inputs, outputs, attrs)

    def _insert_op(self, index, type, inputs=None, outputs=None, attrs=None):
        return self._insert(index, type, inputs, outputs, attrs)

    def _insert(self, pos, op_type, inputs, outputs, attrs):
        from paddlec import _op_support
        if not isinstance(op_type, str):
            raise TypeError("an op type must be a str, got %r" % (op_type,))
        ins = {str(k): self._names(v, "%s input %r" % (op_type, k)) for k, v in (inputs or {}).items()}
        outs = {str(k): self._names(v, "%s output %r" % (op_type, k)) for k, v in (outputs or {}).items()}
        return self._checked_op(pos, op_type, ins, outs, _op_support.cast_attrs(op_type, attrs or {}))

    def _remove_op(self, index):
        self._desc.remove_op(index)
        self._version = -1
        self._sync()

    def __repr__(self):
        return "Block(idx=%d, %d vars, %d ops)" % (self._idx, len(self.vars), len(self.ops))


def _dims(shape):
    out = []
    for d in shape:
        if d is None:
            out.append(-1)
        elif isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= -1:
            out.append(int(d))
        else:
            raise errors.make(errors.InvalidArgumentError, "a shape holds sizes >= 0, or None / -1 for unknown ones; "
                              "got %r in %r" % (d, shape))
    return out


class Program:
    """A program: blocks of ops over variables, block 0 the global one. Build it with layers and op
    functions inside ``program_guard``; run it with an Executor; compile passes (append_backward,
    optimizer.minimize) extend it in place; save() writes what ``paddlec compile/run/train`` read."""

    def __init__(self, desc=None):
        self.desc = _core.ProgramDesc() if desc is None else desc
        self.blocks = [Block(self, i) for i in range(self.desc.num_blocks)]
        self.current_block_idx = 0
        self.random_seed = 0
        self._state = _core.CompileState()
        self._startup = None
        self._mains = weakref.WeakSet()

    # ---- Blocks -------------------------------------------------------------------------------

    def global_block(self):
        return self.blocks[0]

    def block(self, index):
        self._sync_blocks()
        return self.blocks[index]

    def current_block(self):
        return self.blocks[self.current_block_idx]

    @property
    def num_blocks(self):
        self._sync_blocks()
        return len(self.blocks)

    def _create_block(self, parent_idx=None):
        """Appends a block nested in ``parent_idx`` (default: the current block) and makes it current."""
        parent = self.current_block_idx if parent_idx is None else parent_idx
        b = self.desc.append_block(parent)
        self.blocks.append(Block(self, b.idx))
        self.current_block_idx = b.idx
        return self.blocks[-1]

    @contextlib.contextmanager
    def block_guard(self):
        """Opens a block nested in the current one and makes it current inside the ``with`` (the
        body of a loop or a branch: control-flow layers bind it to the op that runs it)."""
        block = self._create_block()
        try:
            yield block
        finally:
            self._rollback()

    def _rollback(self):
        """Makes the current block's parent current again."""
        self.current_block_idx = self.current_block().parent_idx

    def _sync_blocks(self):
        n = self.desc.num_blocks
        if len(self.blocks) != n:
            self.blocks = self.blocks[:n] + [Block(self, i) for i in range(len(self.blocks), n)]
            self.current_block_idx = min(self.current_block_idx, n - 1)

    def list_vars(self):
        for b in self.blocks:
            yield from b.vars.values()

    def all_parameters(self):
        return [v for v in self.global_block().vars.values() if isinstance(v, Parameter)]

    def _unique_var_name(self, prefix):
        while True:
            name = unique_name.generate(prefix)
            if all(not b.desc.has_var(name) for b in self.blocks):
                return name

    # ---- Startup programs and compile passes -------------------------------------------------

    @property
    def startup_program(self):
        """The program that initializes this one's parameters (None for a startup program)."""
        return self._startup

    def _link_startup(self, startup):
        if startup is self:
            raise errors.make(errors.InvalidArgumentError, "a program cannot be its own startup program")
        self._startup = startup
        startup._mains.add(self)

    def _sync_startup(self):
        """Gives every parameter of the main programs this startup program serves an initializer
        (the init-params pass; parameters already initialized here are left alone)."""
        for main in list(self._mains):
            _core.run_passes(main.desc, self.desc, [("init-params", {})], main._state.copy())
        self._sync_blocks()

    def _apply_passes(self, pipeline, startup_program=None):
        startup = startup_program or self._startup or default_startup_program()
        timings = _core.run_passes(self.desc, startup.desc, pipeline, self._state)
        self._link_startup(startup)
        self._sync_blocks()
        startup._sync_blocks()
        return timings

    def apply_passes(self, pipeline, startup_program=None):
        """Runs a C++ pass pipeline over this program and its startup program, in place: a list of
        (pass, {option: value}) with typed values, e.g. [("for-test", {}), ("optimizer", {"type":
        "sgd", "lr": 0.1})], or the text `paddlec compile --passes` takes ('for-test,fuse-conv-bn-act').
        Returns (pass, milliseconds, changed) per pass."""
        return self._apply_passes(pipeline, startup_program)

    @property
    def loss_name(self):
        """The loss the backward pass differentiated ('' before append_backward)."""
        return self._state.loss

    @property
    def param_grads(self):
        """(parameter name, gradient name) pairs recorded by the backward pass."""
        return self._state.param_grads

    @property
    def passes_applied(self):
        return self._state.passes_applied

    def signature(self):
        """(feeds, fetches, parameters) of the global block, as ``paddlec compile`` records them:
        feeds are (name, dtype, dims) of inputs no op writes; fetches the outputs no op reads;
        parameters the persistable variables, sorted."""
        state = self._state.copy()
        _core.compute_signature(self.desc, state)
        return state.feed_targets, state.fetch_targets, state.parameters

    # ---- Copies, text and files ---------------------------------------------------------------

    def clone(self, for_test=False):
        """A copy. ``for_test``: only the forward ops (before the first backward or optimizer op),
        with is_test set on every op that has it (batch_norm, dropout), for evaluation."""
        if for_test:
            p = Program(_core.clone_for_test(self.desc))
            if self._state.loss:
                p._state.loss = self._state.loss
        else:
            p = Program(self.desc.copy())
            p._state = self._state.copy()
        p.random_seed = self.random_seed
        p._startup = self._startup
        return p

    def serialize(self, format="binary"):
        """The ProgramDesc as bytes: binary (PaddlePaddle's wire format), text or json."""
        return self.desc.serialize(format)

    @classmethod
    def parse(cls, data, format="binary"):
        return cls(_core.ProgramDesc.parse(bytes(data), format))

    def to_string(self):
        return self.serialize("text").decode()

    def __str__(self):
        return self.to_string()

    def __repr__(self):
        return "Program(%d blocks, %d ops in block 0)" % (self.num_blocks, len(self.global_block().ops))

    def save(self, path, format=None, program_only=None):
        """Writes the program for ``paddlec compile/run/train`` (format from the extension: .pbtxt
        text, .pb/.pdmodel binary, .json JSON, unless given).

        A forward program is written as a bare ProgramDesc (what PaddlePaddle writes). Once compile
        passes ran (append_backward, minimize) it is written as a CompiledProgram holding its startup
        program and the gradients, since a training program means nothing without them.
        ``program_only`` forces either form; .pdmodel files are always bare."""
        path = str(path)
        fmt = format or _core.format_from_path(path) or "binary"
        if program_only is None:
            program_only = _core.is_bare_program_path(path) or not (self._state.loss or self._state.param_grads)
        if program_only:
            _core.save_program(self.desc, path, fmt)
            return
        startup = self._startup or Program()
        if self._startup is not None:
            self._startup._sync_startup()
        else:
            _core.run_passes(self.desc, startup.desc, [("init-params", {})], self._state.copy())
        _core.save_compiled(self.desc, startup.desc, self._state, path, fmt)

    @classmethod
    def load(cls, path, format=None):
        """Reads a program file: a bare ProgramDesc (.pbtxt, .pb, .pdmodel, .json) or what
        ``paddlec compile`` writes (a CompiledProgram). Returns the main program; its
        ``startup_program`` is the file's startup program (empty for a bare ProgramDesc, which
        running then fills with initializers)."""
        main_desc, startup_desc, state, _ = _core.load_module(str(path), format or "")
        main = cls(main_desc)
        main._state = state
        main._link_startup(cls(startup_desc))
        return main


# ---- Default programs -------------------------------------------------------------------------

_main_program = Program()
_startup_program = Program()
_main_program._link_startup(_startup_program)


def default_main_program():
    """The program layers and op functions append to (see program_guard)."""
    return _main_program


def default_startup_program():
    """The program that initializes the default main program's parameters."""
    return _startup_program


def switch_main_program(program):
    global _main_program
    previous, _main_program = _main_program, program
    return previous


def switch_startup_program(program):
    global _startup_program
    previous, _startup_program = _startup_program, program
    return previous


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Makes ``main_program`` (and ``startup_program``, when given) the default programs inside
    the block; the startup program becomes the one that initializes main_program's parameters."""
    if not isinstance(main_program, Program):
        raise TypeError("program_guard takes a Program, got %s" % type(main_program).__name__)
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError("program_guard takes a Program as startup_program, got %s" % type(startup_program).__name__)
    old_main = switch_main_program(main_program)
    old_startup = switch_startup_program(startup_program) if startup_program is not None else None
    if startup_program is not None:
        main_program._link_startup(startup_program)
    try:
        yield
    finally:
        switch_main_program(old_main)
        if startup_program is not None:
            switch_startup_program(old_startup)
