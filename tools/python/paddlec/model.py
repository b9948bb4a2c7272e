"""The Model style of the design documents: one object holding a network, its parameters and the
data it runs on. Layers take Variables or variable names; a name nothing declared yet becomes a
data input, whose size may come later with its data::

    m = Model()
    hidden = m.fc_layer(input="img", size=200, activation="sigmoid")
    prob = m.fc_layer(input=hidden, size=10, activation="softmax")
    loss = m.mean(m.cross_entropy(prob, label="label"))
    m.backward(loss)
    m.sgd(learning_rate=0.1)
    m.initialize_parameters()
    m.fill("img", images)
    m.fill("label", labels)
    m.run()                      # one training step; returns the loss
    m.train({"img": images, "label": labels}, epochs=2, batch_size=64)   # whole epochs, with a bar
"""

import contextlib

import numpy as np

from paddlec import errors, framework, io, layers, ops, unique_name
from paddlec import progress as _progress
from paddlec import param_attr as paddlec_param_attr
from paddlec.backward import append_backward
from paddlec.executor import Executor, Scope
from paddlec.optimizer import SGD

__all__ = ["Model", "Network"]

_ACTIVATIONS = {None: None, "linear": None, "relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh",
                "softmax": "softmax"}


class Network:
    """The design's Network: the model's ops in order, each known by its index. ``add_op`` appends
    one and returns its index; ``run(scope, begin, end)`` runs the ops [begin, end) only, so a
    network may run in parts that continue in one scope."""

    def __init__(self, model):
        self._model = model

    @property
    def ops(self):
        return self._model.program.global_block().ops

    def __len__(self):
        return len(self.ops)

    def add_op(self, type, inputs=None, outputs=None, attrs=None):
        """Appends an op (as Block.append_op: slots map to Variables or names; output names nothing
        declared yet become variables) and returns its index in the network."""
        with self._model._guard():
            self._model.program.global_block().append_op(type, inputs=inputs, outputs=outputs, attrs=attrs)
        return len(self) - 1

    def run(self, scope=None, begin=0, end=None, feed=None, fetch_list=None):
        """Runs the ops [begin, end) (end None: to the last) over ``scope`` (default: the model's),
        fed with ``feed`` and the model's filled data; returns the values of ``fetch_list``."""
        m = self._model
        m._resolve()
        gb = m.program.global_block()
        data = {n: a for n, a in m._data.items() if gb.has_var(n)}
        data.update(feed or {})
        return m.executor.run(m.program, feed=data, fetch_list=list(fetch_list or []),
                              scope=m.scope if scope is None else scope, op_range=(begin, end))


class Model:
    """A network with its own main and startup programs, scope and executor."""

    def __init__(self, place="cpu", seed=0):
        self.program = framework.Program()
        self.startup_program = framework.Program()
        self.program._link_startup(self.startup_program)
        self.program.random_seed = self.startup_program.random_seed = int(seed)
        self.scope = Scope()
        self.executor = Executor(place)
        self._data = {}
        self._names = {}
        self._deferred = []  # (weight, input) pairs waiting for the input's width
        self._last = None
        self._loss = None
        self._initialized = False
        self.network = Network(self)

    @contextlib.contextmanager
    def _guard(self):
        # The model's own name counters: its parameters are named the same in every model built the
        # same way, so parameter files move between them.
        with framework.program_guard(self.program, self.startup_program), unique_name.using(self._names):
            yield

    def _track(self, var):
        self._last = var
        return var

    def data(self, name, shape, dtype="float32"):
        """Declares a data input of shape [batch] + shape."""
        with self._guard():
            return layers.data(name, shape, dtype=dtype)

    def _input(self, method, arg, value, shape=None, dtype="float32", deferrable=False):
        if isinstance(value, framework.Variable):
            if value.block.program is not self.program:
                raise errors.make(errors.InvalidArgumentError, "%s(): %s %r belongs to another model"
                                  % (method, arg, value.name))
            return value
        if not isinstance(value, str):
            raise TypeError("%s(): %s must be a Variable or a variable name, got %s"
                            % (method, arg, type(value).__name__))
        var = self.program.global_block()._find_var_recursive(value)
        if var is not None:
            return var
        if shape is None and value in self._data:
            shape = list(self._data[value].shape[1:])
        if shape is None and deferrable:
            shape = [-1]  # the width comes with the data (see _resolve)
        if shape is None:
            raise errors.make(errors.InvalidArgumentError, "%s(): %s %r names no variable yet, and its size is unknown"
                              % (method, arg, value),
                              notes=["pass input_size=, declare it with Model.data(), or fill() it first"])
        return self.data(value, shape, dtype)

    def fc_layer(self, input, size, activation=None, name=None, input_size=None, param_attr=None, bias_attr=None):
        """A fully connected layer. ``input`` may name a data input nothing declares yet: it becomes
        float32 [batch, input_size], or [batch, width] with the width of the first array filled into
        it when input_size is not given."""
        if activation not in _ACTIVATIONS:
            raise errors.make(errors.InvalidArgumentError, "fc_layer(): unknown activation %r" % (activation,),
                              notes=["expected one of " + ", ".join(repr(a) for a in _ACTIVATIONS if a)])
        x = self._input("fc_layer", "input", input, None if input_size is None else [int(input_size)],
                        deferrable=True)
        with self._guard():
            if len(x.shape) == 2 and x.shape[1] is None:
                return self._track(self._deferred_fc(x, size, _ACTIVATIONS[activation], name, param_attr, bias_attr))
            return self._track(layers.fc(x, size, act=_ACTIVATIONS[activation], name=name, param_attr=param_attr,
                                         bias_attr=bias_attr))

    def _deferred_fc(self, x, size, act, name, param_attr, bias_attr):
        # layers.fc's ops, with a weight whose height is set once the input's width is known.
        layer = layers._Layer("fc", name)
        with layer.context():
            attr = paddlec_param_attr.ParamAttr.of(param_attr)
            w = layer.block._new_parameter([-1, size], x.dtype, attr.name or layer.prefix + ".w", attr.initializer,
                                           attr.trainable, attr.learning_rate, attr.regularizer)
            b = layer.param(bias_attr, "b", [size], x.dtype) if bias_attr is not False else None
            out = ops.mul(x=x, y=w, out=layer.var("mul"))
            if b is not None:
                out = ops.elementwise_add(x=out, y=b, out=layer.var("out"), axis=1)
            self._deferred.append((w, x))
            return layer.activation(out, act)

    def _resolve(self):
        """Sets the sizes that waited for data: each deferred input takes its filled array's width,
        each deferred weight that height, and shape inference runs again over the program."""
        if not self._deferred:
            return
        for _, x in self._deferred:
            if x.shape[1] is not None:
                continue
            if x.name not in self._data:
                raise errors.make(errors.InvalidArgumentError, "the size of input %r is not known yet" % x.name,
                                  notes=["fill(%r, array) before initializing or running, or pass input_size= to "
                                         "the layer" % x.name])
            array = self._data[x.name]
            if array.ndim != 2:
                raise errors.make(errors.InvalidArgumentError, "input %r takes [batch, width] arrays, got shape %s"
                                  % (x.name, framework._format_shape(array.shape)))
            x.desc.shape = [-1, int(array.shape[1])]
        for w, x in self._deferred:
            w.desc.shape = [x.shape[1], w.shape[1]]
        self.program._apply_passes([("infer-shape", {})], self.startup_program)
        self._deferred = []

    def cross_entropy(self, input, label, name=None):
        """-log(input[label]) per sample; a label name nothing declares becomes an int64 [batch, 1] input."""
        x = self._input("cross_entropy", "input", input)
        y = self._input("cross_entropy", "label", label, [1], "int64")
        with self._guard():
            return self._track(layers.cross_entropy(x, y, name=name))

    def square_error_cost(self, input, label, name=None):
        """(input - label)^2; a label name nothing declares becomes a float32 input shaped like input."""
        x = self._input("square_error_cost", "input", input)
        y = self._input("square_error_cost", "label", label, list(x.shape[1:]))
        with self._guard():
            return self._track(layers.square_error_cost(x, y, name=name))

    def mean(self, x, name=None):
        x = self._input("mean", "x", x)
        with self._guard():
            return self._track(layers.mean(x, name=name))

    def backward(self, loss):
        """Appends the gradient ops of ``loss`` (the C++ backward pass); returns [(param, grad)]."""
        loss = self._input("backward", "loss", loss)
        pairs = append_backward(loss)
        self._loss = loss
        return pairs

    def sgd(self, learning_rate):
        """Appends plain SGD updates of every parameter (the C++ optimizer pass)."""
        if self._loss is None:
            raise errors.make(errors.InvalidArgumentError, "sgd(): call backward(loss) first")
        SGD(learning_rate).minimize(self._loss)

    def initialize_parameters(self):
        """Runs the startup program: every parameter gets its initial value."""
        self._resolve()
        self.executor.run(self.startup_program, scope=self.scope)
        self._initialized = True

    def load_parameters(self, path):
        """Reads the model's parameters from a PaddlePaddle combined params file (sorted names), as
        ``paddlec train --save-params`` writes it."""
        self._resolve()
        names = io.load_params(path, self.program, self.scope, model_only=True)
        self._initialized = True
        return names

    def save_parameters(self, path):
        return io.save_params(path, self.program, self.scope, model_only=True)

    def fill(self, name, array):
        """Sets a data input (used by every following run) or a parameter's value."""
        if isinstance(name, framework.Variable):
            name = name.name
        var = self.program.global_block()._find_var_recursive(name)
        array = np.asarray(array)
        if var is None or not var.persistable:
            self._data[name] = array
            return
        want = np.dtype(var.dtype)
        if array.shape != tuple(var.shape) or not np.can_cast(array.dtype, want, casting="same_kind"):
            raise errors.make(errors.InvalidArgumentError, "fill(%r): the variable is %s %s, the array %s %s"
                              % (name, want.name, framework._format_shape(var.shape), array.dtype.name,
                                 framework._format_shape(array.shape)), var=name)
        self.scope.set(name, array.astype(want))

    def get(self, name):
        """The current value of a persistable variable (a parameter); run(fetch) returns others."""
        return self.scope.get(name.name if isinstance(name, framework.Variable) else name)

    def run(self, fetch=None):
        """Runs the network once on the filled inputs (a training step once sgd() was called).
        Returns the value of ``fetch`` (a Variable or name; default: the loss, else the last
        layer), or a list of values for a list."""
        self._resolve()
        if not self._initialized and self.program.all_parameters():
            raise errors.make(errors.InvalidArgumentError, "run(): the parameters have no values",
                              notes=["call initialize_parameters() or load_parameters(path) first"])
        gb = self.program.global_block()
        missing = [v.name for v in gb.vars.values() if v.need_check_feed and v.name not in self._data]
        if missing:
            raise errors.make(errors.InvalidArgumentError, "run(): no data for %s" % ", ".join(missing),
                              notes=["fill(name, array) each input first"])
        single = not isinstance(fetch, (list, tuple))
        targets = [fetch if fetch is not None else (self._loss or self._last)] if single else list(fetch)
        if targets[0] is None:
            raise errors.make(errors.InvalidArgumentError, "run(): the model has no layers yet")
        feed = {n: a for n, a in self._data.items() if gb.has_var(n)}
        values = self.executor.run(self.program, feed=feed, fetch_list=targets, scope=self.scope)
        return values[0] if single else values

    def train(self, data, epochs=1, batch_size=64, seed=0, progress=None):
        """Trains on ``data`` (input name -> array, the first axis the sample) for ``epochs``, one
        run() per batch of ``batch_size`` samples in a seeded shuffled order. Shows a bar per epoch
        with the mean loss and samples/s (``progress``: None shows it when stderr is a terminal,
        False never; see paddlec.progress). Returns the mean loss of each epoch."""
        if not self._loss:
            raise errors.make(errors.InvalidArgumentError, "train(): the model has no loss yet",
                              notes=["call backward(loss) and sgd(learning_rate) first"])
        arrays = {(k.name if isinstance(k, framework.Variable) else k): np.asarray(v) for k, v in data.items()}
        sizes = {len(a) for a in arrays.values()}
        if len(sizes) != 1:
            raise errors.make(errors.InvalidArgumentError, "train(): the arrays of data hold different numbers of "
                              "samples: %s" % ", ".join("%s %d" % (k, len(a)) for k, a in arrays.items()))
        n = sizes.pop()
        losses = []
        for epoch in range(epochs):
            order = np.random.RandomState(seed + epoch).permutation(n)
            total = 0.0
            with _progress.bar(total=n, desc="epoch %d/%d" % (epoch + 1, epochs), progress=progress) as pbar:
                for begin in range(0, n, batch_size):
                    idx = order[begin:begin + batch_size]
                    for name, a in arrays.items():
                        self.fill(name, a[idx])
                    total += float(np.mean(self.run())) * len(idx)
                    pbar.update(len(idx))
                    pbar.set_postfix(loss="%.4f" % (total / min(n, begin + len(idx))), refresh=False)
            losses.append(total / max(n, 1))
        return losses
