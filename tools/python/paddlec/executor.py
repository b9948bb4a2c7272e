"""Running programs: Scope (the tensors a program reads and writes) and Executor (feed, run, fetch).

The executor keeps one prepared plan per (program, block, scope) and rebuilds it only when the
program changed, so a Python training loop pays for kernel selection once. Feeds are passed
without a copy when the array is C-contiguous and already has the declared dtype (and no op of the
program writes the variable); fetches are new NumPy arrays. The interpreter lock is released while
the kernels run, so other Python threads go on, but none may edit the program being run.
"""

import contextlib
import warnings

import numpy as np

from paddlec import _core, errors, framework

__all__ = ["Scope", "Executor", "CPUPlace", "CUDAPlace", "LoDTensor", "create_lod_tensor", "global_scope",
           "scope_guard"]


class CPUPlace:
    """The host CPU (PaddlePaddle's spelling of place='cpu')."""

    def __str__(self):
        return "cpu"

    __repr__ = __str__


class CUDAPlace:
    """GPU ``device_id`` (PaddlePaddle's spelling of place='gpu:N')."""

    def __init__(self, device_id=0):
        if not isinstance(device_id, int) or isinstance(device_id, bool) or device_id < 0:
            raise ValueError("CUDAPlace: device_id must be an int >= 0, got %r" % (device_id,))
        self.device_id = device_id

    def __str__(self):
        return "gpu:%d" % self.device_id

    __repr__ = __str__


class Tensor:
    """A copy-on-read view of one variable of a scope (PaddlePaddle's ``scope.find_var(n).get_tensor()``)."""

    def __init__(self, scope, name):
        self._scope = scope
        self._name = name

    def __array__(self, dtype=None, copy=None):
        a = self._scope.get(self._name)
        return a if dtype is None else a.astype(dtype)

    def shape(self):
        return self._scope._core.shape(self._name)

    def set(self, array, place=None):
        self._scope.set(self._name, array)


class LoDTensor:
    """An array with its LoD: sequence offsets per level (PaddlePaddle's LoDTensor). Feed one, or an
    ``(array, lod)`` pair, for a sequence input; ``Executor.run(..., return_numpy=False)`` returns
    fetches as LoDTensors. The LoD is checked by the core when fed (offsets from 0, never decreasing,
    the last level ending at the row count)."""

    def __init__(self, array=None, lod=None):
        self._array = None if array is None else np.asarray(array)
        self._lod = [list(map(int, level)) for level in (lod or [])]

    def set(self, array, place=None):
        self._array = np.asarray(array)

    def set_lod(self, lod):
        self._lod = [list(map(int, level)) for level in lod]

    def set_recursive_sequence_lengths(self, lengths):
        self._lod = _lengths_to_offsets(lengths)

    def lod(self):
        return [list(level) for level in self._lod]

    def recursive_sequence_lengths(self):
        return [[b - a for a, b in zip(level, level[1:])] for level in self._lod]

    def has_valid_recursive_sequence_lengths(self):
        rows = 0 if self._array is None or self._array.ndim == 0 else self._array.shape[0]
        return _core.lod_problem(self._lod, rows) == ""

    def shape(self):
        return list(self._array.shape)

    def numpy(self):
        return self._array

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)

    def __repr__(self):
        return "LoDTensor(shape=%s, lod=%s)" % (list(self._array.shape), self._lod)


def _lengths_to_offsets(lengths):
    lod = []
    for level in lengths:
        offsets = [0]
        for n in level:
            if int(n) < 0:
                raise errors.make(errors.InvalidArgumentError, "sequence lengths must be >= 0, got %r" % (n,))
            offsets.append(offsets[-1] + int(n))
        lod.append(offsets)
    return lod


def create_lod_tensor(data, recursive_seq_lens, place=None):
    """A LoDTensor from ``data`` (an array, or a list of sequences, each a list of rows or ids) and
    the sequence lengths of every level (PaddlePaddle's create_lod_tensor): ``[[2, 3]]`` makes the
    offsets ``[[0, 2, 5]]``. The lengths of the last level must add up to the rows."""
    if isinstance(data, LoDTensor):
        data = data.numpy()
    if isinstance(data, list) and data and isinstance(data[0], (list, tuple, np.ndarray)):
        flat = [row for seq in data for row in seq]
        array = np.asarray(flat)
        if array.ndim == 1:
            array = array.reshape(-1, 1)
    else:
        array = np.asarray(data)
    t = LoDTensor(array, _lengths_to_offsets(recursive_seq_lens))
    problem = _core.lod_problem(t._lod, array.shape[0] if array.ndim else 0)
    if problem:
        raise errors.make(errors.InvalidArgumentError, "create_lod_tensor: sequence lengths %r do not fit %d rows: %s"
                          % (recursive_seq_lens, array.shape[0] if array.ndim else 0, problem))
    return t


def _split_lod(value):
    """(array, lod) of a fed value: a LoDTensor, an (array, lod) pair, or a plain array (lod None)."""
    if isinstance(value, LoDTensor):
        return value.numpy(), value.lod()
    if (isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], (list, tuple)) and value[1]
            and all(isinstance(level, (list, tuple)) for level in value[1])):
        return value[0], [list(level) for level in value[1]]
    return value, None


class _ScopeVar:
    def __init__(self, scope, name):
        self._scope = scope
        self._name = name

    def get_tensor(self):
        return Tensor(self._scope, self._name)


class Scope:
    """Named tensors shared by the programs run on it: parameters live here between runs.

    Scopes nest as in PaddlePaddle's design: ``new_scope()`` makes a kid whose lookups continue in
    its parent, so a program run on the kid reads the parent's parameters and keeps its own
    temporaries (and any variable set on the kid) apart; ``drop_kids()`` frees the kids."""

    def __init__(self, parent=None):
        if parent is not None and not isinstance(parent, Scope):
            raise TypeError("Scope(parent): parent must be a paddlec.Scope, got %s" % type(parent).__name__)
        self._core = _core.Scope() if parent is None else parent._core.new_scope()
        self._parent = parent

    def new_scope(self):
        """A child scope of this one (PaddlePaddle's ``scope.new_scope()``)."""
        return Scope(self)

    @property
    def parent(self):
        """The scope this one was made from with new_scope(), or None."""
        return self._parent

    def drop_kids(self):
        """Frees every scope made from this one by new_scope() (and theirs); using one afterwards
        raises InvalidArgumentError."""
        self._core.drop_kids()

    def var_names(self):
        """Names of this scope's own variables (not its parent's), sorted."""
        return self._core.var_names()

    def has_local_value(self, name):
        """Whether this scope itself (not a parent) holds a value for ``name``."""
        return self._core.has_local_value(_name_of(name))

    def has_value(self, name):
        return self._core.has_value(_name_of(name))

    def get(self, name):
        """A copy of the variable's value as a NumPy array."""
        return self._core.get(_name_of(name))

    def set(self, name, array, local=False):
        """Copies ``array`` into the variable, found here or in a parent unless ``local`` (created
        here when missing)."""
        self._core.set(_name_of(name), np.ascontiguousarray(array), bool(local))

    def erase(self, name):
        return self._core.erase(_name_of(name))

    def find_var(self, name):
        name = _name_of(name)
        return _ScopeVar(self, name) if self._core.has_value(name) else None

    def __contains__(self, name):
        return self.has_value(name)


def _name_of(v):
    if isinstance(v, framework.Variable):
        return v.name
    if isinstance(v, str):
        return v
    raise TypeError("expected a Variable or a variable name, got %s" % type(v).__name__)


_global_scope = Scope()


def global_scope():
    """The scope Executor.run uses when none is given."""
    return _global_scope


@contextlib.contextmanager
def scope_guard(scope):
    """Makes ``scope`` the global scope inside the block."""
    global _global_scope
    previous, _global_scope = _global_scope, scope
    try:
        yield
    finally:
        _global_scope = previous


def _place_name(place):
    if place is None:
        return "cpu"
    if isinstance(place, (CPUPlace, CUDAPlace)):
        return str(place)
    if isinstance(place, str):
        return place
    raise TypeError("place must be 'cpu', 'gpu[:N]', a CPUPlace or a CUDAPlace, got %r" % (place,))


def _feed_inputs(block):
    """Names of the variables a program expects to be fed (for messages)."""
    written, needed = set(), []
    for op in block.ops:
        for n in op.input_arg_names:
            if n not in written and n not in needed:
                v = block._find_var_recursive(n)
                if v is not None and not v.persistable:
                    needed.append(n)
        written.update(op.output_arg_names)
    return needed


class Executor:
    """Runs programs on a place: 'cpu' (default), 'gpu' or 'gpu:N' (CUDAPlace(N)).

    On a GPU, feeds are copied to the device and fetches back; parameters stay in device memory
    between runs (``Scope.get`` and ``io.save_params`` copy them out) and executors of one GPU share
    its stream and memory. Values a program reads from another place (set from Python, or left by a
    run elsewhere) are moved to this one when it runs.
    """

    def __init__(self, place=None, num_threads=0, check_nan_inf=False):
        """``num_threads``: CPU threads, 1 to 4 per core (0: one per core). ``check_nan_inf``: every run
        fails at the first op (forward, backward or optimizer) whose output holds a NaN or Inf, with an
        ``ExecutionError`` naming the op, its block and index, the variable and the element (PaddlePaddle's
        ``FLAGS_check_nan_inf``); ``run`` can also ask for it per call."""
        self.place = _place_name(place)
        self.check_nan_inf = bool(check_nan_inf)
        self._core = _core.Executor(self.place, int(num_threads))

    def close(self):
        """Drops the cached plans (and the references they hold to programs and scopes)."""
        self._core.clear_cache()

    def run(self, program=None, feed=None, fetch_list=None, scope=None, return_numpy=True, op_range=None,
            check_nan_inf=None):
        """Runs the global block of ``program`` (default: the default main program) once.

        ``feed`` maps variables (or their names) to arrays, checked against the declared shapes
        (None matches any size) and converted to the declared dtype when that loses no kind of
        information (float64 to float32, int32 to int64). ``fetch_list`` names variables whose
        values are returned as new NumPy arrays, in order. Running a startup program first gives
        every parameter of the programs it serves an initializer. Variables that are not
        persistable live in a scope of the program's own under ``scope`` (as in PaddlePaddle):
        fetch them; persistable ones (parameters) are in ``scope`` itself.

        ``op_range=(from, to)`` runs only the global block's ops [from, to) (``to`` None: to the
        end), PaddlePaddle's ``Network.run(scope, from, to)``: ranges run one after another over
        one scope see each other's results, so running (0, k) then (k, None) equals one full run.

        ``check_nan_inf`` (default: the executor's) checks every op's outputs for NaN/Inf."""
        if program is None:
            program = framework.default_main_program()
        if not isinstance(program, framework.Program):
            raise TypeError("Executor.run takes a Program, got %s" % type(program).__name__)
        scope = global_scope() if scope is None else scope
        if not isinstance(scope, Scope):
            raise TypeError("scope must be a paddlec.Scope, got %s" % type(scope).__name__)
        if program._mains:
            program._sync_startup()
        block = program.global_block()
        feeds, lods = {}, {}
        for key, value in (feed or {}).items():
            name = _name_of(key)
            value, lod = _split_lod(value)
            feeds[name] = self._feed_array(block, name, value)
            if lod is not None:
                lods[name] = lod
        fetches = []
        for f in fetch_list or []:
            name = _name_of(f)
            if block._find_var_recursive(name) is None:
                raise errors.make(errors.NotFoundError, "cannot fetch %r: the program has no such variable" % name,
                                  var=name, notes=framework._hint(name, block.vars))
            fetches.append(name)
        op_begin, op_end = self._op_range(block, op_range)
        check = self.check_nan_inf if check_nan_inf is None else bool(check_nan_inf)
        out = self._core.run(program.desc, 0, scope._core, feeds, fetches, int(program.random_seed), True, lods,
                             not return_numpy, op_begin, op_end, check)
        return out if return_numpy else [LoDTensor(a, lod) for a, lod in out]

    @staticmethod
    def _op_range(block, op_range):
        if op_range is None:
            return 0, -1
        num_ops = len(block.ops)
        if not isinstance(op_range, (tuple, list)) or len(op_range) != 2:
            raise TypeError("op_range must be a pair (from, to), got %r" % (op_range,))
        begin = 0 if op_range[0] is None else op_range[0]
        end = num_ops if op_range[1] is None else op_range[1]
        for v in (begin, end):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError("op_range bounds must be ints or None, got %r" % (op_range,))
        if not 0 <= begin <= end <= num_ops:
            raise errors.make(errors.InvalidArgumentError,
                              "op_range (%d, %d) is outside the block's ops: expected 0 <= from <= to <= %d"
                              % (begin, end, num_ops))
        return begin, end

    @staticmethod
    def _feed_array(block, name, value):
        var = block._find_var_recursive(name)
        if var is None:
            inputs = _feed_inputs(block)
            notes = framework._hint(name, block.vars) or (
                ["its inputs are: " + ", ".join(inputs)] if inputs else ["it reads no inputs"])
            raise errors.make(errors.InvalidArgumentError, "cannot feed %r: the program has no such variable" % name,
                              var=name, notes=notes)
        array = np.asarray(value)
        declared = None if var.shape is None else [-1 if d is None else d for d in var.shape]
        # The core's feed rule, the one `paddlec run --feed` applies: same-kind dtypes are converted
        # (narrowing ones with a warning), shapes must match the declaration.
        convert_to, warning = _core.check_feed(name, var.dtype or "", declared, array.dtype.name, list(array.shape))
        if warning:
            warnings.warn(warning, stacklevel=3)
        if convert_to:
            array = array.astype(convert_to)
        return np.ascontiguousarray(array)
