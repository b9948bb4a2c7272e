"""Mistakes in Python programs: exceptions that name the layer or op, the argument and the shapes,
and never a crash of the interpreter."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import paddlec
from paddlec import errors, layers, ops


def test_a_wrong_keyword_names_the_function_and_the_keyword():
    x = layers.data("x", [3])
    with pytest.raises(TypeError, match=r"mul\(\) got an unexpected keyword argument 'z'"):
        ops.mul(x=x, z=x)
    with pytest.raises(TypeError, match=r"fc\(\) got an unexpected keyword argument 'sizes'"):
        layers.fc(x, sizes=3)
    with pytest.raises(TypeError, match="takes 0 positional arguments"):
        ops.relu(x)  # keyword-only


def test_a_missing_input_names_the_function_and_the_argument():
    x = layers.data("x", [3])
    with pytest.raises(TypeError, match=r"mul\(\) missing 1 required keyword-only argument: 'y'"):
        ops.mul(x=x)
    with pytest.raises(TypeError, match=r"mul\(\): argument 'y' \(input slot Y\) is required, got None"):
        ops.mul(x=x, y=None)
    with pytest.raises(errors.NotFoundError, match=r"mul\(\): argument 'y' \(input slot Y\) names variable 'w', "
                                                   r"which does not exist"):
        ops.mul(x=x, y="w")
    with pytest.raises(TypeError, match=r"mul\(\): argument 'y' \(input slot Y\) takes a Variable, got ndarray"):
        ops.mul(x=x, y=np.ones((3, 2)))
    with pytest.raises(errors.ValidationError, match="missing input 'Y'"):
        paddlec.default_main_program().global_block().append_op("mul", inputs={"X": x}, outputs={"Out": "o"})


def test_a_shape_mismatch_names_the_op_the_arguments_and_both_shapes():
    x = layers.data("x", [784])
    w = paddlec.default_main_program().global_block().create_parameter([512, 10], name="w")
    block = paddlec.default_main_program().global_block()
    before = dict(block.vars)
    with pytest.raises(errors.ShapeError) as info:
        ops.mul(x=x, y=w)
    message = str(info.value)
    assert message.startswith("block 0, op 0 (mul): X has shape [-1, 784] and Y has shape [512, 10]")
    assert "note: mul() was called with x=x (None, 784) float32; y=w (512, 10) float32" in message
    assert info.value.op_type == "mul" and isinstance(info.value, ValueError)
    assert block.vars == before and block.ops == []  # the failed call left nothing behind


def test_a_failing_layer_is_named_with_the_op():
    x = layers.data("x", [4])
    y = layers.data("y", [5])
    with pytest.raises(errors.ShapeError) as info:
        layers.square_error_cost(x, y, name="cost")
    message = str(info.value)
    assert message.startswith("layer square_error_cost (cost): block 0, op 0 (elementwise_sub):")
    assert "[-1, 4]" in message and "[-1, 5]" in message and info.value.layer == "square_error_cost"
    with pytest.raises(errors.ShapeError, match=r"conv2d\(\): input 'x' must be NCHW \(rank 4\), got shape "
                                                r"\(None, 4\)"):
        layers.conv2d(x, 2, 3)
    with pytest.raises(errors.InvalidArgumentError, match="unknown activation 'relux'"):
        layers.fc(x, 3, act="relux")


def test_attribute_errors_through_layers_name_the_layer_op_and_attribute():
    x = layers.data("x", [1, 8, 8])
    with pytest.raises(errors.ValidationError, match=r"layer pool2d \(pool2d_0\): op 'pool2d': attribute "
                                                     r"'pooling_type' value 'maxx' is not allowed"):
        layers.pool2d(x, 2, pool_type="maxx")
    with pytest.raises(errors.ValidationError, match="attribute 'dropout_prob' value 2 is out of range"):
        layers.dropout(x, 2.0)


def test_run_time_errors_are_exceptions():
    x = layers.data("x", [3], dtype="int64")
    emb = layers.embedding(x, size=(4, 2))
    exe = paddlec.Executor()
    exe.run(paddlec.default_startup_program())
    with pytest.raises(errors.ExecutionError, match="lookup_table_v2"):
        exe.run(feed={"x": np.array([[0, 1, 9]])}, fetch_list=[emb])  # id 9 is outside the table


FUZZ = r"""
import itertools, random
import numpy as np
import paddlec
from paddlec import _protos, errors, ops

rng = random.Random(0)
failures = ok = ran = 0
for op_type in _protos.op_types():
    spec = _protos.op(op_type)
    for trial in range(20):
        main = paddlec.Program()
        with paddlec.program_guard(main, paddlec.Program()):
            block = main.global_block()
            kwargs = {}
            for slot in spec.inputs:
                if slot.dispensable and rng.random() < 0.7:
                    continue
                shape = [rng.choice([-1, 1, 2, 3]) for _ in range(rng.choice([0, 1, 2, 3, 4]))]
                dtype = rng.choice(["float32", "float32", "int64", "int32", "float64"])
                var = block.create_var(shape=shape, dtype=dtype, persistable=rng.random() < 0.3)
                kwargs[slot.py_name] = [var, var] if slot.duplicable else var
            for slot in spec.outputs:
                if slot.duplicable:
                    kwargs[slot.py_name] = [block.create_var() for _ in range(rng.choice([1, 2]))]
            for attr in spec.attrs.values():
                if attr.py_name is None:
                    continue
                if not attr.has_default or rng.random() < 0.3:
                    kwargs[attr.py_name] = rng.choice([0, 1, -1, 2.5, "NCHW", True, [1, 1], [], None, "x"])
            try:
                getattr(ops, spec.function_name)(**kwargs)
                ok += 1
            except (errors.Error, TypeError, ValueError, LookupError) as e:
                failures += 1
                continue
            feed = {}
            for v in block.vars.values():
                if v.persistable or v.op is not None or v.shape is None:
                    continue
                shape = [2 if d is None else d for d in v.shape]
                feed[v.name] = np.asarray(np.random.RandomState(1).rand(*shape) * 3).astype(v.dtype)
            scope = paddlec.Scope()
            for v in block.vars.values():
                if v.persistable and v.shape is not None and None not in v.shape:
                    scope.set(v.name, np.ones(v.shape, v.dtype))
            try:
                paddlec.Executor().run(main, feed=feed, scope=scope)
                ran += 1
            except (errors.Error, TypeError, ValueError) as e:
                pass
print("built", ok, "rejected", failures, "ran", ran)
"""


def test_no_call_crashes_the_interpreter():
    # Every op, with random inputs, shapes, dtypes and attribute values: each call either builds the
    # op or raises a Python exception, and each built program either runs or raises. In a child
    # process, so that a crash fails this test instead of ending the session.
    proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(FUZZ)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    built, rejected, ran = (int(w) for w in proc.stdout.split()[1::2])
    assert built > 200 and rejected > 300 and ran > 100, proc.stdout
