"""Layers: common network pieces built from the generated operator functions.

Each layer creates its parameters (in the global block) and ops in the current block of the
default main program and returns its output Variable. Layers with parameters (fc, conv2d,
batch_norm, layer_norm, embedding) use ``name`` as the prefix of everything they create
(``fc1.w``, ``fc1.b``, ``fc1.mul``, ``fc1.out``, ``fc1.relu``); the others use it as the name of
their output. Errors raised inside a layer name the layer as well as the op.
"""

import contextlib
import math

from paddlec import errors, framework, ops
from paddlec.param_attr import ParamAttr

__all__ = [
    "data", "fc", "conv2d", "pool2d", "batch_norm", "layer_norm", "dropout", "embedding", "relu", "sigmoid",
    "tanh", "softmax", "cross_entropy", "softmax_with_cross_entropy", "square_error_cost", "mean", "accuracy",
    "concat", "reshape", "sequence_pool", "sequence_first_step", "sequence_last_step", "sequence_softmax",
    "sequence_expand", "sequence_pad", "sequence_unpad", "sequence_reverse", "sequence_mask",
]

_ACTIVATIONS = ("relu", "sigmoid", "tanh", "softmax", "gelu", "leaky_relu", "sqrt", "square")


class _Layer:
    """Naming and error context of one layer call."""

    def __init__(self, layer_type, name):
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError("%s(): name must be a non-empty str, got %r" % (layer_type, name))
        self.type = layer_type
        self.program = framework.default_main_program()
        self.block = self.program.current_block()
        self.named = name is not None
        self.prefix = name if name is not None else self.program._unique_var_name(layer_type)

    def var(self, suffix=None, name=None):
        """A new variable: ``name`` when given, else ``<prefix>.<suffix>``."""
        return self.block.create_var(name=name or "%s.%s" % (self.prefix, suffix))

    def output(self, default_suffix="out"):
        """The output of a parameterless layer: named exactly ``name`` when one was given."""
        return self.block.create_var(name=self.prefix if self.named else "%s.%s" % (self.prefix, default_suffix))

    def param(self, attr, suffix, shape, dtype, trainable=True):
        attr = ParamAttr.of(attr)
        name = attr.name or "%s.%s" % (self.prefix, suffix)
        return self.block.create_parameter(
            shape=shape, dtype=dtype, name=name, initializer=attr.initializer,
            trainable=attr.trainable and trainable, learning_rate=attr.learning_rate, regularizer=attr.regularizer)

    @contextlib.contextmanager
    def context(self):
        try:
            yield self
        except errors.Error as e:
            errors.prefix(e, "layer %s (%s)" % (self.type, self.prefix))
            e.layer = self.type
            raise

    def activation(self, x, act):
        if act is None:
            return x
        if act not in _ACTIVATIONS:
            raise errors.make(errors.InvalidArgumentError, "%s(): unknown activation %r" % (self.type, act),
                              notes=["expected one of " + ", ".join(_ACTIVATIONS)])
        return getattr(ops, act)(x=x, out=self.var(act))


def _variable(layer, arg, value):
    if not isinstance(value, framework.Variable):
        raise TypeError("%s(): %s must be a Variable, got %s" % (layer, arg, type(value).__name__))
    return value


def _known(layer, arg, var, dims):
    """The product of ``dims`` of ``var``'s shape, which must be known."""
    shape = var.shape
    sizes = [shape[d] for d in dims]
    if any(s is None for s in sizes):
        raise errors.make(errors.ShapeError, "%s(): %s %r has shape %s; dims %s must be known"
                          % (layer, arg, var.name, framework._format_shape(shape), list(dims)), var=var.name)
    return math.prod(sizes)


def _pair(layer, arg, v):
    if isinstance(v, int) and not isinstance(v, bool):
        return [v, v]
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return list(v)
    raise TypeError("%s(): %s must be an int or a pair of ints, got %r" % (layer, arg, v))


def data(name, shape, dtype="float32", append_batch_size=True, lod_level=0, stop_gradient=True):
    """A data input of the global block: ``[-1] + shape`` (the batch first) unless
    append_batch_size is False; the executor checks fed arrays against it."""
    if not isinstance(name, str) or not name:
        raise TypeError("data(): name must be a non-empty str, got %r" % (name,))
    shape = [shape] if isinstance(shape, int) else list(shape)
    if append_batch_size:
        shape = [-1] + shape
    block = framework.default_main_program().global_block()
    return block.create_var(name=name, shape=shape, dtype=dtype, lod_level=lod_level, stop_gradient=stop_gradient,
                            need_check_feed=True)


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None):
    """Fully connected: ``act(flatten(input) @ w + b)``. The input's dims from num_flatten_dims on
    are flattened into the rows of ``w`` ([in, size]); a list of inputs gets one weight each and
    their products are summed. ``bias_attr=False`` leaves out the bias."""
    layer = _Layer("fc", name)
    inputs = input if isinstance(input, (list, tuple)) else [input]
    if not inputs:
        raise errors.make(errors.InvalidArgumentError, "fc(): input must not be empty")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise errors.make(errors.InvalidArgumentError, "fc(): size must be a positive int, got %r" % (size,))
    with layer.context():
        weights = []
        for i, x in enumerate(inputs):
            _variable("fc", "input", x)
            rank = len(x.shape)
            if not 1 <= num_flatten_dims < rank:
                raise errors.make(errors.InvalidArgumentError, "fc(): num_flatten_dims %d must be in [1, %d) for "
                                  "input %r of rank %d" % (num_flatten_dims, rank, x.name, rank))
            width = _known("fc", "input", x, range(num_flatten_dims, rank))
            suffix = "" if len(inputs) == 1 else "_%d" % i
            weights.append(layer.param(param_attr, "w" + suffix, [width, size], x.dtype))
        b = layer.param(bias_attr, "b", [size], inputs[0].dtype) if bias_attr is not False else None
        products = []
        for i, (x, w) in enumerate(zip(inputs, weights)):
            suffix = "" if len(inputs) == 1 else "_%d" % i
            products.append(ops.mul(x=x, y=w, out=layer.var("mul" + suffix), x_num_col_dims=num_flatten_dims))
        out = products[0] if len(products) == 1 else ops.sum(x=products, out=layer.var("sum"))
        if b is not None:
            out = ops.elementwise_add(x=out, y=b, out=layer.var("out"), axis=num_flatten_dims)
        return layer.activation(out, act)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=1, param_attr=None,
           bias_attr=None, act=None, name=None):
    """2-D convolution of an NCHW batch with a [num_filters, C / groups, kh, kw] filter, then a
    per-channel bias (unless ``bias_attr=False``) and the activation. ``padding`` is an int, a pair,
    four values (top, bottom, left, right), or 'SAME' / 'VALID'."""
    layer = _Layer("conv2d", name)
    with layer.context():
        _variable("conv2d", "input", input)
        if len(input.shape) != 4:
            raise errors.make(errors.ShapeError, "conv2d(): input %r must be NCHW (rank 4), got shape %s"
                              % (input.name, framework._format_shape(input.shape)), var=input.name)
        channels = _known("conv2d", "input", input, [1])
        if channels % groups:
            raise errors.make(errors.InvalidArgumentError, "conv2d(): %d input channels are not divisible by "
                              "groups=%d" % (channels, groups))
        kh, kw = _pair("conv2d", "filter_size", filter_size)
        algorithm, paddings = "EXPLICIT", [0, 0]
        if isinstance(padding, str):
            algorithm = padding.upper()
        elif isinstance(padding, (list, tuple)) and len(padding) == 4:
            paddings = list(padding)
        else:
            paddings = _pair("conv2d", "padding", padding)
        w = layer.param(param_attr, "w", [num_filters, channels // groups, kh, kw], input.dtype)
        out = ops.conv2d(input=input, filter=w, output=layer.var("conv"), strides=_pair("conv2d", "stride", stride),
                         paddings=paddings, padding_algorithm=algorithm,
                         dilations=_pair("conv2d", "dilation", dilation), groups=groups)
        if bias_attr is not False:
            b = layer.param(bias_attr, "b", [num_filters], out.dtype)
            out = ops.elementwise_add(x=out, y=b, out=layer.var("out"), axis=1)
        return layer.activation(out, act)


def pool2d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
           ceil_mode=False, exclusive=True, name=None):
    """2-D max or average pooling of an NCHW batch; ``pool_padding`` is an int, a pair, or four
    values (top, bottom, left, right)."""
    layer = _Layer("pool2d", name)
    with layer.context():
        _variable("pool2d", "input", input)
        if global_pooling and pool_size == -1:
            pool_size = 1
        if isinstance(pool_padding, (list, tuple)) and len(pool_padding) == 4:
            paddings = list(pool_padding)  # top, bottom, left, right
        else:
            paddings = _pair("pool2d", "pool_padding", pool_padding)
        return ops.pool2d(x=input, out=layer.output(), pooling_type=pool_type,
                          ksize=_pair("pool2d", "pool_size", pool_size),
                          strides=_pair("pool2d", "pool_stride", pool_stride), paddings=paddings,
                          global_pooling=global_pooling, ceil_mode=ceil_mode, exclusive=exclusive)


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-5, param_attr=None, bias_attr=None,
               data_layout="NCHW", name=None, moving_mean_name=None, moving_variance_name=None,
               use_global_stats=False):
    """Batch normalization over all axes but the channel axis. Creates ``<name>.scale`` (ones),
    ``<name>.bias`` (zeros) and the running statistics ``<name>.mean`` / ``<name>.variance`` (not
    trainable); the output is ``<name>`` itself."""
    layer = _Layer("batch_norm", name)
    with layer.context():
        _variable("batch_norm", "input", input)
        rank = len(input.shape)
        axis = 1 if data_layout != "NHWC" or rank == 2 else rank - 1
        channels = _known("batch_norm", "input", input, [axis])
        dtype = input.dtype
        scale = layer.param(param_attr, "scale", [channels], dtype)
        bias = layer.param(bias_attr, "bias", [channels], dtype)
        mean = layer.param(ParamAttr(name=moving_mean_name), "mean", [channels], dtype, trainable=False)
        variance = layer.param(ParamAttr(name=moving_variance_name), "variance", [channels], dtype, trainable=False)
        y = layer.block.create_var(name=layer.prefix if layer.named else layer.prefix + ".out")
        ops.batch_norm(x=input, scale=scale, bias=bias, mean=mean, variance=variance, y=y, mean_out=mean,
                       variance_out=variance, saved_mean=layer.var("saved_mean"),
                       saved_variance=layer.var("saved_variance"), momentum=momentum, epsilon=epsilon,
                       data_layout=data_layout, is_test=is_test, use_global_stats=use_global_stats)
        return layer.activation(y, act)


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-5, param_attr=None, bias_attr=None,
               act=None, name=None):
    """Layer normalization over the dims from begin_norm_axis on, with an optional learned scale
    (ones) and shift (zeros) of that size."""
    layer = _Layer("layer_norm", name)
    with layer.context():
        _variable("layer_norm", "input", input)
        rank = len(input.shape)
        if not 1 <= begin_norm_axis < rank:
            raise errors.make(errors.InvalidArgumentError, "layer_norm(): begin_norm_axis %d must be in [1, %d)"
                              % (begin_norm_axis, rank))
        width = _known("layer_norm", "input", input, range(begin_norm_axis, rank))
        s = layer.param(param_attr, "scale", [width], input.dtype) if scale else None
        b = layer.param(bias_attr, "bias", [width], input.dtype) if shift else None
        y = layer.block.create_var(name=layer.prefix if layer.named else layer.prefix + ".out")
        ops.layer_norm(x=input, scale=s, bias=b, y=y, mean=layer.var("mean"), variance=layer.var("variance"),
                       epsilon=epsilon, begin_norm_axis=begin_norm_axis)
        return layer.activation(y, act)


def dropout(x, dropout_prob, is_test=False, seed=None, name=None, dropout_implementation="downgrade_in_infer"):
    """Zeroes elements with probability dropout_prob in training (``seed`` fixes the mask)."""
    layer = _Layer("dropout", name)
    with layer.context():
        _variable("dropout", "x", x)
        return ops.dropout(x=x, out=layer.output(), mask=layer.var("mask"), dropout_prob=float(dropout_prob),
                           is_test=is_test, fix_seed=seed is not None, seed=seed or 0,
                           dropout_implementation=dropout_implementation)


def embedding(input, size, is_sparse=False, padding_idx=None, param_attr=None, dtype="float32", name=None):
    """Looks up rows of a [vocabulary, dim] table (``size``) for int64 ids of any shape; the output
    is the ids' shape plus [dim]."""
    layer = _Layer("embedding", name)
    with layer.context():
        _variable("embedding", "input", input)
        vocab, dim = size
        w = layer.param(param_attr, "w", [vocab, dim], dtype)
        if padding_idx is None:
            padding_idx = -1
        elif padding_idx < 0:
            padding_idx += vocab
        return ops.lookup_table_v2(w=w, ids=input, out=layer.var("out"), padding_idx=padding_idx, is_sparse=is_sparse)


def _unary(op_type, doc):
    def layer_fn(x, name=None):
        layer = _Layer(op_type, name)
        with layer.context():
            _variable(op_type, "x", x)
            return getattr(ops, op_type)(x=x, out=layer.output())

    layer_fn.__name__ = layer_fn.__qualname__ = op_type
    layer_fn.__doc__ = doc
    return layer_fn


relu = _unary("relu", "max(x, 0), element-wise.")
sigmoid = _unary("sigmoid", "1 / (1 + exp(-x)), element-wise.")
tanh = _unary("tanh", "tanh(x), element-wise.")


def softmax(input, axis=-1, name=None):
    """exp(x) normalized to sum 1 along ``axis``."""
    layer = _Layer("softmax", name)
    with layer.context():
        _variable("softmax", "input", input)
        return ops.softmax(x=input, out=layer.output(), axis=axis)


def cross_entropy(input, label, soft_label=False, ignore_index=-100, name=None):
    """-log(input[label]) per sample, for probabilities ``input`` [N, classes] and int64 labels [N, 1]."""
    layer = _Layer("cross_entropy", name)
    with layer.context():
        _variable("cross_entropy", "input", input)
        _variable("cross_entropy", "label", label)
        return ops.cross_entropy(x=input, label=label, y=layer.output(), soft_label=soft_label,
                                 ignore_index=ignore_index)


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100, return_softmax=False, axis=-1,
                               name=None):
    """Softmax of ``logits`` and its cross entropy with ``label``, in one numerically stable op.
    Returns the per-sample loss [N, 1], and the softmax too with return_softmax."""
    layer = _Layer("softmax_with_cross_entropy", name)
    with layer.context():
        _variable("softmax_with_cross_entropy", "logits", logits)
        _variable("softmax_with_cross_entropy", "label", label)
        prob = layer.var("softmax")
        loss = ops.softmax_with_cross_entropy(logits=logits, label=label, softmax=prob, loss=layer.output("loss"),
                                              soft_label=soft_label, ignore_index=ignore_index, axis=axis)
        return (loss, prob) if return_softmax else loss


def square_error_cost(input, label, name=None):
    """(input - label)^2, element-wise."""
    layer = _Layer("square_error_cost", name)
    with layer.context():
        _variable("square_error_cost", "input", input)
        _variable("square_error_cost", "label", label)
        diff = ops.elementwise_sub(x=input, y=label, out=layer.var("sub"))
        return ops.square(x=diff, out=layer.output())


def mean(x, name=None):
    """The mean of all elements, a one-element tensor."""
    layer = _Layer("mean", name)
    with layer.context():
        _variable("mean", "x", x)
        return ops.mean(x=x, out=layer.output())


def accuracy(input, label, k=1, name=None):
    """The fraction of samples whose label is among the k largest scores of ``input`` [N, classes]."""
    layer = _Layer("accuracy", name)
    with layer.context():
        _variable("accuracy", "input", input)
        _variable("accuracy", "label", label)
        values, indices = ops.top_k_v2(x=input, out=layer.var("topk"), indices=layer.var("topk_indices"), k=k)
        acc, _, _ = ops.accuracy(out=values, indices=indices, label=label, accuracy=layer.output(),
                                 correct=layer.var("correct"), total=layer.var("total"))
        return acc


def concat(input, axis=0, name=None):
    """Joins the tensors of ``input`` along ``axis``."""
    layer = _Layer("concat", name)
    with layer.context():
        if not isinstance(input, (list, tuple)) or not input:
            raise TypeError("concat(): input must be a non-empty list of Variables")
        for x in input:
            _variable("concat", "input", x)
        return ops.concat(x=list(input), out=layer.output(), axis=axis)


def reshape(x, shape, name=None):
    """x with a new shape: 0 copies x's dimension at that index, one -1 is inferred."""
    layer = _Layer("reshape", name)
    with layer.context():
        _variable("reshape", "x", x)
        return ops.reshape2(x=x, out=layer.output(), x_shape=layer.var("x_shape"), shape=list(shape))


# ---- Sequences (LoD) ---------------------------------------------------------------------------
# A sequence input is declared with data(..., lod_level=1) and fed with its LoD; every layer's output
# level follows from its op's rule (fc and element-wise ops keep their input's sequences, a pool
# removes one level), computed by the core as each op is appended.


def sequence_pool(input, pool_type, is_test=False, pad_value=0.0, name=None):
    """One row per sequence of ``input`` (its last LoD level): pool_type 'sum', 'average', 'sqrt'
    (sum / sqrt(length)), 'max', 'first' or 'last'; empty sequences give ``pad_value``."""
    layer = _Layer("sequence_pool", name)
    with layer.context():
        _variable("sequence_pool", "input", input)
        out = ops.sequence_pool(x=input, out=layer.output(), max_index=layer.var("max_index"),
                                pooltype=str(pool_type).upper(), is_test=is_test, pad_value=float(pad_value))
        return out


def sequence_first_step(input, name=None):
    """The first row of every sequence."""
    return sequence_pool(input, "first", name=name)


def sequence_last_step(input, name=None):
    """The last row of every sequence."""
    return sequence_pool(input, "last", name=name)


def sequence_softmax(input, name=None):
    """Softmax over the rows of each sequence of ``input`` ([N, 1] or [N])."""
    layer = _Layer("sequence_softmax", name)
    with layer.context():
        _variable("sequence_softmax", "input", input)
        return ops.sequence_softmax(x=input, out=layer.output())


def sequence_expand(x, y, ref_level=-1, name=None):
    """Repeats each row (or sequence) of ``x`` as many times as the matching sequence of ``y`` is long."""
    layer = _Layer("sequence_expand", name)
    with layer.context():
        _variable("sequence_expand", "x", x)
        _variable("sequence_expand", "y", y)
        return ops.sequence_expand(x=x, y=y, out=layer.output(), ref_level=ref_level)


def sequence_pad(x, pad_value, maxlen=None, name=None):
    """Pads every sequence of ``x`` to ``maxlen`` rows (the longest when None) with ``pad_value`` (a
    Variable holding one value or one row). Returns (padded [num_sequences, maxlen, ...], lengths)."""
    layer = _Layer("sequence_pad", name)
    with layer.context():
        _variable("sequence_pad", "x", x)
        _variable("sequence_pad", "pad_value", pad_value)
        return ops.sequence_pad(x=x, pad_value=pad_value, out=layer.output(), length=layer.var("length"),
                                padded_length=-1 if maxlen is None else int(maxlen))


def sequence_unpad(x, length, name=None):
    """The inverse of sequence_pad: the first length[i] rows of every x[i], as a sequence batch."""
    layer = _Layer("sequence_unpad", name)
    with layer.context():
        _variable("sequence_unpad", "x", x)
        _variable("sequence_unpad", "length", length)
        return ops.sequence_unpad(x=x, length=length, out=layer.output())


def sequence_reverse(x, name=None):
    """``x`` with the rows of every sequence in reverse order."""
    layer = _Layer("sequence_reverse", name)
    with layer.context():
        _variable("sequence_reverse", "x", x)
        return ops.sequence_reverse(x=x, y=layer.output())


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """Rows of ``maxlen`` 0/1 values, the first x[i] of them 1 (maxlen None: the longest length)."""
    layer = _Layer("sequence_mask", name)
    with layer.context():
        _variable("sequence_mask", "x", x)
        return ops.sequence_mask(x=x, y=layer.output(), maxlen=-1 if maxlen is None else int(maxlen),
                                 out_dtype=_core_dtype(dtype))


def _core_dtype(name):
    """The VarType number of a dtype name (PaddlePaddle's enum)."""
    return {"bool": 0, "int16": 1, "int32": 2, "int64": 3, "float16": 4, "float32": 5, "float64": 6,
            "uint8": 20, "int8": 21}[name]


from paddlec.control_flow import While, cond, fill_constant  # noqa: E402  (control flow over sub-blocks)
from paddlec.rnn import DynamicRNN, StaticRNN  # noqa: E402  (recurrences built on While)

__all__ += ["While", "cond", "fill_constant", "StaticRNN", "DynamicRNN"]
