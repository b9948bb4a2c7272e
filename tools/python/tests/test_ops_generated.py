"""The generated operator functions: names, signatures, docstrings, attribute checks, outputs, and
agreement between ``paddlec gen-python``'s file and the functions paddlec.ops builds at import."""

import importlib.util
import inspect
import subprocess

import numpy as np
import pytest

import paddlec
from paddlec import _core, _protos, errors, layers, ops


@pytest.fixture(scope="module")
def static_ops(tmp_path_factory, cli):
    path = tmp_path_factory.mktemp("gen") / "ops.py"
    subprocess.run([cli, "gen-python", "-o", str(path)], check=True)
    spec = importlib.util.spec_from_file_location("static_ops", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_keyword_only_function_per_registered_op():
    assert sorted(ops.__all__) == sorted(_core.op_function_name(t) for t in _core.op_types())
    for name in ops.__all__:
        sig = inspect.signature(getattr(ops, name))
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in sig.parameters.values()), name
    sig = inspect.signature(ops.mul)
    assert list(sig.parameters) == ["x", "y", "out", "x_num_col_dims", "y_num_col_dims"]
    assert sig.parameters["x"].default is inspect.Parameter.empty and sig.parameters["out"].default is None
    assert sig.parameters["x_num_col_dims"].default == 1
    conv = inspect.signature(ops.conv2d).parameters
    assert conv["strides"].default == (1, 1) and conv["padding_algorithm"].default == "EXPLICIT"
    assert "use_addto" not in conv  # backend-only (extra) attributes keep their defaults
    assert inspect.signature(ops.pool2d).parameters["ksize"].default is inspect.Parameter.empty  # required
    drop = inspect.signature(ops.dropout).parameters
    assert "seed_var" in drop and drop["seed"].default == 0


def test_docstrings_come_from_the_protos():
    proto = _protos.op("batch_norm")
    doc = " ".join(ops.batch_norm.__doc__.split())  # wrapping aside
    assert doc.startswith(" ".join(proto.comment.split()))
    assert "x (Variable): Input [N, C] or [N, C, spatial...]" in doc
    assert "momentum_tensor (Variable, optional): A one-value tensor overriding the momentum attribute. " \
           "[Input slot ``MomentumTensor``; dispensable]" in doc
    assert "saved_mean (Variable, optional)" in doc and "intermediate, not returned" in doc
    assert "epsilon (float): Added to the variance before the square root. [attribute ``epsilon``, FLOAT, " \
           "default 1e-05; in [0, 0.001]]" in doc
    assert 'one of "NCHW", "NHWC", "AnyLayout"' in doc
    assert "Returns: tuple: (y, mean_out, variance_out), in this order:" in doc
    assert "Returns:\n    Variable: ``out`` (output ``Out``)" in inspect.getdoc(ops.relu)
    assert "[Input slot ``X``; duplicable]" in " ".join(ops.concat.__doc__.split())
    assert "Operator: the appended op" in ops.conditional_block.__doc__
    assert "ksize (list of int): Window size (height, width); the output size when adaptive. [attribute " \
           "``ksize``, INTS, required; >= 1; non-empty]" in " ".join(ops.pool2d.__doc__.split())


def test_static_module_agrees_with_the_runtime_functions(static_ops):
    assert static_ops.__all__ == ops.__all__
    with open(static_ops.__file__) as f:
        assert f.read() == ops.SOURCE
    for name in ops.__all__:
        a, b = getattr(ops, name), getattr(static_ops, name)
        assert inspect.signature(a) == inspect.signature(b), name
        assert a.__doc__ == b.__doc__, name
    # The same calls build the same program with either module.
    programs = []
    for module in (ops, static_ops):
        main = paddlec.Program()
        with paddlec.program_guard(main, paddlec.Program()), paddlec.unique_name.guard():
            x = layers.data("x", [3, 8, 8])
            w = main.global_block().create_parameter([4, 3, 3, 3], name="w")
            y = module.conv2d(input=x, filter=w, paddings=[1, 1], strides=(2, 2))
            z = module.pool2d(x=module.relu(x=y), ksize=[2, 2], pooling_type="avg")
            module.reshape2(x=z, shape=[0, -1])
        programs.append(main.serialize())
    assert programs[0] == programs[1]


def test_outputs_are_created_and_returned_per_proto():
    x = layers.data("x", [4, 3], append_batch_size=False)
    out = ops.relu(x=x)
    assert out.name == "relu_0.out" and out.shape == (4, 3)
    # Several non-intermediate outputs: a tuple in proto order; intermediate ones are made but not returned.
    values, indices = ops.top_k_v2(x=x, k=2)
    assert values.shape == (4, 2) and indices.dtype == "int64"
    reshaped = ops.reshape2(x=x, shape=[2, 6])
    assert reshaped.shape == (2, 6) and paddlec.default_main_program().global_block().has_var("reshape2_0.x_shape")
    # Outputs given as variables or names are used as they are.
    named = ops.scale(x=x, out="scaled", scale=2.0)
    assert named.name == "scaled"
    # Duplicable outputs need the variables (their number depends on attributes).
    parts = ops.split(x=x, out=["p0", "p1"], num=2, axis=0)
    assert [p.name for p in parts] == ["p0", "p1"] and parts[0].shape == (2, 3)
    with pytest.raises(TypeError, match="split\\(\\): argument 'out' \\(output slot Out\\) is duplicable"):
        ops.split(x=x, num=2)
    # Duplicable inputs take lists.
    assert ops.concat(x=[x, x], axis=1).shape == (4, 6)


@pytest.mark.parametrize("call, cls, message", [
    (lambda x: ops.scale(x=x, scale="2"), TypeError,
     "op 'scale': attribute 'scale' (FLOAT) takes a float, got str '2'"),
    (lambda x: ops.scale(x=x, bias_after_scale=1), TypeError,
     "op 'scale': attribute 'bias_after_scale' (BOOLEAN) takes a bool, got int 1"),
    (lambda x: ops.transpose2(x=x, axis=1), TypeError,
     "op 'transpose2': attribute 'axis' (INTS) takes a list of int, got int 1"),
    (lambda x: ops.transpose2(x=x, axis=[0, 1.5]), TypeError,
     "op 'transpose2': attribute 'axis' (INTS) takes an int, got float 1.5"),
    (lambda x: ops.dropout(x=x, dropout_prob=1.5), ValueError,
     "op 'dropout': attribute 'dropout_prob' value 1.5 is out of range: must be [0, 1]"),
    (lambda x: ops.layer_norm(x=x, begin_norm_axis=0), ValueError,
     "op 'layer_norm': attribute 'begin_norm_axis' value 0 is out of range: must be > 0"),
    (lambda x: ops.dropout(x=x, dropout_implementation="up"), ValueError,
     "op 'dropout': attribute 'dropout_implementation' value 'up' is not allowed: expected one of "
     "'downgrade_in_infer', 'upscale_in_train'"),
    (lambda x: ops.cast(x=x, out_dtype=4), ValueError,
     "op 'cast': attribute 'out_dtype' value 4 is not allowed: expected one of 0, 1, 2, 3, 5, 6, 20, 21"),
    (lambda x: ops.pool2d(x=x, ksize=[]), ValueError, "op 'pool2d': attribute 'ksize' must not be empty"),
    (lambda x: ops.scale(x=x, scale=float("nan"), bias=1e39), ValueError,
     "op 'scale': attribute 'bias' value 1e+39 is out of range for a 32-bit float"),
    (lambda x: ops.top_k_v2(x=x, k=2 ** 31), ValueError,
     "op 'top_k_v2': attribute 'k' value 2147483648 is out of range for a 32-bit int"),
])
def test_attribute_values_are_checked_before_reaching_cpp(call, cls, message):
    x = layers.data("x", [1, 4, 4])
    n = len(paddlec.default_main_program().global_block().vars)
    with pytest.raises(cls) as info:
        call(x)
    assert str(info.value) == message and isinstance(info.value, errors.Error)
    assert len(paddlec.default_main_program().global_block().vars) == n  # no output left behind


def test_numpy_values_are_cast():
    x = layers.data("x", [3, 4], append_batch_size=False)
    y = ops.scale(x=x, scale=np.float32(0.5), bias=np.int64(1))
    t = ops.transpose2(x=x, axis=np.array([1, 0]))
    assert y.op.attr("scale") == 0.5 and y.op.attr("bias") == 1.0 and t.shape == (4, 3)


def test_the_collision_rule_applies_to_the_calls():
    x = layers.data("x", [3, 8], append_batch_size=False)
    seed = paddlec.default_main_program().global_block().create_var(name="seed", shape=[1], dtype="int32")
    out = ops.dropout(x=x, seed_var=seed, seed=7, fix_seed=True)
    assert out.op.input("Seed") == ["seed"] and out.op.attr("seed") == 7


def test_generated_functions_compute_what_their_docs_say():
    x = layers.data("x", [2, 3], append_batch_size=False)
    out = ops.scale(x=x, scale=3.0, bias=1.0, bias_after_scale=False)
    (value,) = paddlec.Executor().run(feed={"x": np.ones((2, 3))}, fetch_list=[out])
    np.testing.assert_allclose(value, np.full((2, 3), 6.0))
