"""Recurrent layers over the ``while`` op, in the shape of PaddlePaddle fluid's: ``StaticRNN`` steps
through the first (time) axis of dense [T, B, ...] inputs, ``DynamicRNN`` through the sequences of a
LoD batch, each of its own length.

    rnn = layers.StaticRNN()
    with rnn.step():
        word = rnn.step_input(x)                             # x: [T, B, D]; word: [B, D]
        prev = rnn.memory(shape=[-1, 32], batch_ref=word)    # zeros [B, 32] before the first step
        hidden = layers.fc([word, prev], 32, act="tanh")
        rnn.update_memory(prev, hidden)
        rnn.step_output(hidden)
    out = rnn()                                              # [T, B, 32]

Both build one control_flow.While loop whose body is the user's step. What the body reads from
outside is made in the enclosing block, before the loop op: an int32 step counter and its bound (the
inputs' time length), the memories' first values and one accumulator per step output. A step reads
row ``i`` of every time-major input with ``gather``. There is no tensor array, so each step output is
appended to its accumulator with ``concat``; the accumulator starts as one zero row (its trailing dims
must be known), dropped after the loop. Memories and accumulators are loop-carried: they are written
once, at the end of the body, by an ``assign`` from a body variable, the convention (control_flow.py)
that keeps while_grad right. All of it is made of ops with gradient kernels, so the backward pass
differentiates the loop as it does any other.

DynamicRNN pads its sequences to [B, T_max, ...] (sequence_pad), steps through the time-major copy and
keeps a memory unchanged once its sequence has ended (h = h_prev + m (h_new - h_prev), m the 0/1 mask
of the sequences still running), so after the loop each memory holds every sequence's last state
(``final_memory``). Its outputs go back to a LoD batch with the input's LoD through sequence_unpad.
Sequences stay in their LoD order (no sorting by length), so a memory's ``init`` has one row per
sequence in that order.
"""

import contextlib

from paddlec import errors, framework, ops
from paddlec.control_flow import _VAR_TYPES, While

__all__ = ["StaticRNN", "DynamicRNN"]

# A slice end past any length: slice clamps it to the axis.
_TO_THE_END = 2 ** 31 - 1

_BEFORE, _INSIDE, _AFTER, _BROKEN = "before", "inside", "after", "broken"


@contextlib.contextmanager
def _building_in(block):
    """Appends the ops made inside the ``with`` to ``block``: what the loop reads must be made in the
    enclosing block, before the loop op, while its body is being built."""
    program = block.program
    saved = program.current_block_idx
    program.current_block_idx = block.idx
    try:
        yield
    finally:
        program.current_block_idx = saved


def _may_agree(a, b):
    """Whether shapes ``a`` and ``b`` (None: unknown) can be the same at run time."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


class _Memory:
    """A loop-carried state: ``var`` lives in the enclosing block (its value before a step, and after
    the loop); ``new`` is the body variable the step sets it to."""

    def __init__(self, var):
        self.var = var
        self.new = None


class _Recurrence:
    """What StaticRNN and DynamicRNN share: the loop, its counter and bound, memories, step outputs."""

    _default_name = None

    def __init__(self, name=None):
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError("%s(): name must be a non-empty str, got %r" % (self._kind(), name))
        self._program = framework.default_main_program()
        self._prefix = self._program._unique_var_name(name or self._default_name)
        self._status = _BEFORE
        self._parent = self._body = None
        self._counter = self._bound = self._cond = self._batch = None
        self._sources = {}  # a step input's name -> the time-major variable it is read from
        self._memories = []
        self._step_outputs = []
        self._accumulators = []
        self._results = []

    @classmethod
    def _kind(cls):
        return cls.__name__

    # ---- The loop ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _loop(self, entry):
        if self._status != _BEFORE:
            raise errors.make(errors.InvalidArgumentError, "%s.%s() may be entered once" % (self._kind(), entry))
        self._parent = self._program.current_block()
        self._counter = self._parent_var("counter", [1], "int32", stop_gradient=True)
        ops.fill_constant(out=self._counter, shape=[1], value=0.0, dtype=_VAR_TYPES["int32"])
        # Computed once the first step input gives the bound.
        self._cond = self._parent_var("cond", [1], "bool", stop_gradient=True)
        loop = While(self._cond, name=self._prefix)
        self._status = _BROKEN  # until the loop op is appended
        with loop.block() as body:
            self._body = body
            self._status = _INSIDE
            try:
                yield
            finally:
                self._status = _BROKEN
            self._close_body()
        self._status = _AFTER
        self._results = [self._result(acc) for acc in self._accumulators]

    def _close_body(self):
        """Ends the body: the new memories and accumulated outputs, the counter, the condition.
        Every loop-carried write comes after every read of it in the body."""
        if self._bound is None:
            raise errors.make(errors.InvalidArgumentError, "%s: the step reads no input" % self._kind(),
                              notes=["call step_input(x) in the step"])
        for m in self._memories:
            if m.new is None:
                raise errors.make(errors.InvalidArgumentError, "%s: memory %r is never updated"
                                  % (self._kind(), m.var.name), var=m.var.name,
                                  notes=["call update_memory(memory, new_value) in the step"])
        new_memories = [self._next_memory(m) for m in self._memories]
        self._accumulators, grown = [], []
        for out in self._step_outputs:
            acc = self._accumulator(out)
            self._accumulators.append(acc)
            grown.append(ops.concat(x=[acc, ops.unsqueeze2(x=out, axes=[0])], axis=0))
        for m, new in zip(self._memories, new_memories):
            ops.assign(x=new, out=m.var)
        for acc, new in zip(self._accumulators, grown):
            ops.assign(x=new, out=acc)
        ops.scale(x=self._counter, out=self._counter, bias=1.0)
        ops.less_than(x=self._counter, y=self._bound, out=self._cond)

    def _next_memory(self, memory):
        """The body variable a memory takes at the end of a step."""
        return self._local(memory.new)

    def _accumulator(self, out):
        """The enclosing block's [1 + steps, B, ...] variable the step outputs ``out`` are appended to,
        starting as one zero row (dropped after the loop)."""
        trailing = list(out.shape[1:]) if out.shape is not None else None
        if trailing is None or any(d is None for d in trailing):
            raise errors.make(errors.ShapeError, "%s: step output %r has shape %s; its dims after the batch must "
                              "be known" % (self._kind(), out.name, framework._format_shape(out.shape)), var=out.name)
        acc = self._parent_var("outputs", [-1, -1] + trailing, out.dtype)
        with _building_in(self._parent):
            dims = [self._int_constant(1), self._batch] + [self._int_constant(d) for d in trailing]
            ops.fill_constant(out=acc, shape=[-1] * len(dims), shape_tensor_list=dims, value=0.0,
                              dtype=_VAR_TYPES[out.dtype])
        return acc

    def _result(self, acc):
        """The outputs of every step, [T, B, ...], from an accumulator after the loop."""
        return ops.slice(input=acc, axes=[0], starts=[1], ends=[_TO_THE_END])

    # ---- Inputs, memories and outputs -------------------------------------------------------------

    def _read_step(self, source):
        """Row ``counter`` of the time-major ``source`` (made in the enclosing block), as a body variable."""
        if self._bound is None:
            with _building_in(self._parent):
                self._bound = self._dim(source, 0)
                self._batch = self._dim(source, 1)
                ops.less_than(x=self._counter, y=self._bound, out=self._cond)
        row = ops.squeeze2(x=ops.gather(x=source, index=self._counter), axes=[0])
        self._sources[row.name] = source
        return row

    def _add_memory(self, var):
        self._memories.append(_Memory(var))
        return var

    def _memory_from(self, init):
        """A memory starting as a copy of ``init``, a variable of an enclosing block."""
        self._require_outer(init, "memory(init=...)")
        mem = self._parent_var("memory", init.shape, init.dtype)
        with _building_in(self._parent):
            ops.assign(x=init, out=mem)
        return self._add_memory(mem)

    def _memory_filled(self, shape, batch_axis, batch, value, dtype):
        """A memory starting as ``shape`` filled with ``value``, its dim ``batch_axis`` the run-time
        batch size ``batch`` (an int32 [1] variable of the enclosing block)."""
        shape = list(shape)
        if not 0 <= batch_axis < len(shape):
            raise errors.make(errors.InvalidArgumentError, "%s.memory(): the batch axis %d is not an axis of shape %s"
                              % (self._kind(), batch_axis, shape))
        for i, d in enumerate(shape):
            if i != batch_axis and (not isinstance(d, int) or isinstance(d, bool) or d < 1):
                raise errors.make(errors.InvalidArgumentError, "%s.memory(): every size of shape %s but the batch "
                                  "axis %d must be a positive int" % (self._kind(), shape, batch_axis))
        full = [-1 if i == batch_axis else d for i, d in enumerate(shape)]
        mem = self._parent_var("memory", full, dtype)
        with _building_in(self._parent):
            dims = [batch if i == batch_axis else self._int_constant(d) for i, d in enumerate(shape)]
            ops.fill_constant(out=mem, shape=[-1] * len(dims), shape_tensor_list=dims, value=float(value),
                              dtype=_VAR_TYPES[dtype])
        return self._add_memory(mem)

    def update_memory(self, mem, var):
        """Sets memory ``mem`` (from memory()) to ``var`` for the next step."""
        self._require_inside("update_memory")
        found = [m for m in self._memories if isinstance(mem, framework.Variable) and m.var.name == mem.name]
        if not found:
            raise errors.make(errors.InvalidArgumentError, "%s.update_memory(): %r is not a memory of this %s"
                              % (self._kind(), getattr(mem, "name", mem), self._kind()),
                              notes=["pass the variable memory() returned"])
        self._require_variable(var, "update_memory")
        if found[0].new is not None:
            raise errors.make(errors.InvalidArgumentError, "%s.update_memory(): memory %r is updated twice"
                              % (self._kind(), mem.name), var=mem.name)
        if not _may_agree(mem.shape, var.shape) or mem.dtype != var.dtype:
            raise errors.make(errors.ShapeError, "%s.update_memory(): memory %r is %s %s but its new value %r is %s %s"
                              % (self._kind(), mem.name, mem.dtype, framework._format_shape(mem.shape), var.name,
                                 var.dtype, framework._format_shape(var.shape)), var=var.name)
        found[0].new = var

    def _output(self, outputs, what):
        self._require_inside(what)
        for o in outputs:
            self._require_variable(o, what)
            self._step_outputs.append(o)

    def final_memory(self, mem):
        """The value of memory ``mem`` after the loop, [B, ...]: the state after the last step (for
        DynamicRNN, each sequence's own last step)."""
        if self._status != _AFTER:
            raise errors.make(errors.InvalidArgumentError, "%s.final_memory() comes after the step block"
                              % self._kind())
        if not any(isinstance(mem, framework.Variable) and m.var.name == mem.name for m in self._memories):
            raise errors.make(errors.InvalidArgumentError, "%s.final_memory(): %r is not a memory of this %s"
                              % (self._kind(), getattr(mem, "name", mem), self._kind()))
        with _building_in(self._parent):
            # A copy: the memory variable itself is the loop's to write.
            return ops.assign(x=mem, out=self._parent_var("final_memory", mem.shape, mem.dtype))

    def __call__(self):
        """The step outputs of every step: one variable, or a list when the step has several."""
        if self._status != _AFTER:
            raise errors.make(errors.InvalidArgumentError, "%s() gives the outputs after the step block"
                              % self._kind())
        if not self._results:
            raise errors.make(errors.InvalidArgumentError, "%s: the step has no outputs" % self._kind(),
                              notes=["call output() in the step"])
        return self._results[0] if len(self._results) == 1 else list(self._results)

    # ---- Helpers ----------------------------------------------------------------------------------

    def _parent_var(self, suffix, shape, dtype, stop_gradient=False):
        return self._parent.create_var(name=self._program._unique_var_name("%s.%s" % (self._prefix, suffix)),
                                       shape=None if shape is None else [-1 if d is None else d for d in shape],
                                       dtype=dtype, stop_gradient=stop_gradient)

    def _int_constant(self, value):
        out = self._parent_var("dim", [1], "int32", stop_gradient=True)
        return ops.fill_constant(out=out, shape=[1], value=float(value), dtype=_VAR_TYPES["int32"])

    def _dim(self, var, axis):
        """Dim ``axis`` of ``var`` at run time, an int32 [1] variable."""
        return ops.slice(input=ops.shape(input=var), axes=[0], starts=[axis], ends=[axis + 1])

    def _local(self, var):
        """``var`` as a body variable: loop-carried variables are assigned from one."""
        return var if self._body.has_var(var.name) else ops.assign(x=var)

    def _require_inside(self, what):
        if self._status != _INSIDE:
            raise errors.make(errors.InvalidArgumentError, "%s.%s() belongs inside the step block"
                              % (self._kind(), what))

    def _require_variable(self, var, what):
        if not isinstance(var, framework.Variable):
            raise TypeError("%s.%s(): expected a Variable, got %s" % (self._kind(), what, type(var).__name__))

    def _require_outer(self, var, what):
        self._require_variable(var, what)
        if var.block.idx == self._body.idx:
            raise errors.make(errors.InvalidArgumentError, "%s.%s: %r is made inside the step; it must come from "
                              "outside the loop" % (self._kind(), what, var.name), var=var.name)


class StaticRNN(_Recurrence):
    """A recurrence over the first axis of dense inputs [T, B, ...], all of one length T:
    ``with rnn.step():`` builds one step from step_input() rows, memory() states and
    update_memory(); step_output() values are stacked into ``rnn()``, [T, B, ...]."""

    _default_name = "static_rnn"

    def step(self):
        """The step's block: ``with rnn.step(): ...``."""
        return self._loop("step")

    def step_input(self, x):
        """The step's row of ``x`` [T, B, ...] (a variable from outside the step): [B, ...]."""
        self._require_inside("step_input")
        self._require_outer(x, "step_input(x)")
        if x.shape is None or len(x.shape) < 2:
            raise errors.make(errors.ShapeError, "StaticRNN.step_input(): %r has shape %s, not [T, B, ...]"
                              % (x.name, framework._format_shape(x.shape)), var=x.name)
        for source in self._sources.values():
            if None not in (source.shape[0], x.shape[0]) and source.shape[0] != x.shape[0]:
                raise errors.make(errors.ShapeError, "StaticRNN.step_input(): %r has %d steps but %r has %d"
                                  % (x.name, x.shape[0], source.name, source.shape[0]), var=x.name)
        return self._read_step(x)

    def memory(self, init=None, shape=None, batch_ref=None, init_value=0.0, init_batch_dim_idx=0,
               ref_batch_dim_idx=1):
        """A state carried from step to step, starting as ``init`` (a variable from outside the step)
        or, without it, as ``shape`` filled with ``init_value`` whose dim init_batch_dim_idx (given as
        -1) is the batch size: dim ref_batch_dim_idx of ``batch_ref``, where a step input stands for the
        [T, B, ...] variable it is read from. Read the returned variable in the step for the state before
        it; update_memory() sets the next one."""
        self._require_inside("memory")
        if init is not None:
            return self._memory_from(init)
        if shape is None or batch_ref is None:
            raise errors.make(errors.InvalidArgumentError, "StaticRNN.memory() needs init, or shape and batch_ref")
        self._require_variable(batch_ref, "memory")
        ref = self._sources.get(batch_ref.name)
        if ref is None:
            self._require_outer(batch_ref, "memory(batch_ref=...)")
            ref = batch_ref
        if ref.shape is None or not 0 <= ref_batch_dim_idx < len(ref.shape):
            raise errors.make(errors.ShapeError, "StaticRNN.memory(): ref_batch_dim_idx %d is not an axis of %r %s"
                              % (ref_batch_dim_idx, ref.name, framework._format_shape(ref.shape)), var=ref.name)
        with _building_in(self._parent):
            batch = self._dim(ref, ref_batch_dim_idx)
        return self._memory_filled(shape, init_batch_dim_idx, batch, init_value, ref.dtype)

    def step_output(self, o):
        """Collects ``o`` [B, ...] of every step into an output of rnn(), [T, B, ...]."""
        self._output([o], "step_output")

    def output(self, *outputs):
        """step_output() of each of ``outputs``."""
        self._output(outputs, "output")


class DynamicRNN(_Recurrence):
    """A recurrence over the sequences of LoD batches (level 1), each as long as it is:
    ``with drnn.block():`` builds one step from step_input() rows, memory() states and
    update_memory(); output() values come back as ``drnn()``, sequence batches with the input's LoD.
    A memory stops changing after its sequence's last step; final_memory() gives that last state."""

    _default_name = "dynamic_rnn"

    def __init__(self, name=None):
        super().__init__(name)
        self._length = None  # int64 [B]: the sequence lengths
        self._mask = None  # [T, B]: 1 while a sequence runs
        self._step_mask = None

    def block(self):
        """The step's block: ``with drnn.block(): ...``."""
        return self._loop("block")

    def step_input(self, x, level=0):
        """The step's row of every sequence of ``x`` (a LoD batch [sum(lengths), ...] from outside the
        step): [B, ...], zeros for the sequences already ended. Several inputs must share one LoD."""
        self._require_inside("step_input")
        self._require_outer(x, "step_input(x)")
        if level != 0:
            raise errors.make(errors.UnimplementedError, "DynamicRNN.step_input(): only level 0 (the sequences of a "
                              "one-level LoD) is supported, got level %r" % (level,))
        if not x.lod_level:
            raise errors.make(errors.InvalidArgumentError, "DynamicRNN.step_input(): %r is not a sequence batch "
                              "(lod_level 0)" % x.name, var=x.name,
                              notes=["declare it with layers.data(..., lod_level=1)"])
        with _building_in(self._parent):
            pad = self._parent_var("pad_value", [1], x.dtype, stop_gradient=True)
            ops.fill_constant(out=pad, shape=[1], value=0.0, dtype=_VAR_TYPES[x.dtype])
            padded, length = ops.sequence_pad(x=x, pad_value=pad)
            rank = len(padded.shape)
            time_major = ops.transpose2(x=padded, axis=[1, 0] + list(range(2, rank)))
            if self._length is None:
                self._length = length
                self._mask = self._running_mask(length, x.dtype)
        return self._read_step(time_major)

    def _running_mask(self, length, dtype):
        """[T, B]: 1 where step t is within sequence b."""
        mask = ops.sequence_mask(x=length, maxlen=-1, out_dtype=_VAR_TYPES["float32"])  # its only kernel
        if dtype != "float32":
            mask = ops.cast(x=mask, in_dtype=_VAR_TYPES["float32"], out_dtype=_VAR_TYPES[dtype])
        return ops.transpose2(x=mask, axis=[1, 0])

    def memory(self, init=None, shape=None, value=0.0, need_reorder=False, dtype="float32"):
        """A state carried from step to step: ``init`` [B, ...] (one row per sequence, in LoD order;
        a variable from outside the step), or zeros (``value``) of [B] + ``shape``. Read the returned
        variable in the step for the state before it; update_memory() sets the next one. need_reorder
        is fluid's; it changes nothing here, as the sequences are never reordered."""
        self._require_inside("memory")
        if init is not None:
            return self._memory_from(init)
        if shape is None:
            raise errors.make(errors.InvalidArgumentError, "DynamicRNN.memory() needs init or shape")
        if self._batch is None:
            raise errors.make(errors.InvalidArgumentError, "DynamicRNN.memory(shape=...) comes after a step_input(), "
                              "which gives the number of sequences")
        shape = [shape] if isinstance(shape, int) else list(shape)
        return self._memory_filled([-1] + shape, 0, self._batch, value, dtype)

    def output(self, *outputs):
        """Collects each of ``outputs`` [B, ...] into a sequence batch of drnn() with the input's LoD."""
        self._output(outputs, "output")

    def _next_memory(self, memory):
        # Sequences that have ended keep their state: prev + m * (new - prev).
        if self._step_mask is None:
            self._step_mask = ops.squeeze2(x=ops.gather(x=self._mask, index=self._counter), axes=[0])
        prev, new = memory.var, memory.new
        change = ops.elementwise_mul(x=ops.elementwise_sub(x=new, y=prev), y=self._step_mask, axis=0)
        return ops.elementwise_add(x=prev, y=change)

    def _result(self, acc):
        steps = super()._result(acc)
        rank = len(steps.shape)
        batch_major = ops.transpose2(x=steps, axis=[1, 0] + list(range(2, rank)))
        return ops.sequence_unpad(x=batch_major, length=self._length)
