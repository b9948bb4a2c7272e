"""paddlec._core directly: exception classes, op protos, desc handles and their failure modes."""

import json
import subprocess

import numpy as np
import pytest

from paddlec import _core, errors


def tensor(block, name, shape, dtype="float32", persistable=False):
    v = block.create_var(name)
    v.dtype = dtype
    v.shape = shape
    v.persistable = persistable
    return v


def test_exception_classes_are_builtin_exceptions_too():
    assert issubclass(errors.ValidationError, ValueError) and issubclass(errors.ValidationError, errors.Error)
    assert issubclass(errors.ShapeError, ValueError)
    assert issubclass(errors.AttributeTypeError, TypeError)
    assert issubclass(errors.NotFoundError, LookupError)
    assert issubclass(errors.FileError, OSError)
    assert issubclass(errors.ExecutionError, RuntimeError)
    assert not issubclass(errors.ShapeError, TypeError)


def test_op_protos_json_is_what_dump_opprotos_prints(cli):
    printed = subprocess.run([cli, "dump-opprotos", "--format=json"], check=True, capture_output=True, text=True)
    assert json.loads(_core.op_protos_json()) == json.loads(printed.stdout)
    types = _core.op_types()
    assert types == sorted(types) and {"mul", "conv2d", "adam", "mul_grad"} <= set(types)


def test_python_names_follow_the_documented_rules():
    assert ("input", "XShape", "x_shape") not in _core.op_python_args("reshape2")  # XShape is an output
    assert ("output", "XShape", "x_shape") in _core.op_python_args("reshape2")
    assert ("input", "LearningRate", "learning_rate") in _core.op_python_args("sgd")
    # A slot colliding with an attribute is renamed; the attribute keeps the name.
    assert ("input", "Seed", "seed_var") in _core.op_python_args("dropout")
    assert ("attr", "seed", "seed") in _core.op_python_args("dropout")
    assert ("input", "Shape", "shape_var") in _core.op_python_args("reshape2")
    assert ("input", "K", "k_var") in _core.op_python_args("top_k_v2")
    assert ("output", "Out@GRAD", "out_grad") not in _core.op_python_args("mul_grad")
    assert ("input", "Out@GRAD", "out_grad") in _core.op_python_args("mul_grad")
    # Backend-only (extra) attributes are not arguments.
    assert all(name != "use_addto" for _, name, _ in _core.op_python_args("conv2d"))
    with pytest.raises(errors.NotFoundError, match="no op named 'nope'"):
        _core.op_python_args("nope")


def test_append_op_checks_and_infers_shapes():
    p = _core.ProgramDesc()
    b = p.block(0)
    tensor(b, "x", [-1, 784])
    tensor(b, "w", [784, 10], persistable=True)
    op = b.append_op("mul", {"X": ["x"], "Y": ["w"]}, {"Out": ["y"]}, {})
    assert b.var("y").shape == [-1, 10] and b.var("y").dtype == "float32"
    # Defaults were filled in, as the validate pass does.
    assert op.attr("x_num_col_dims") == 1 and op.attr_type("y_num_col_dims") == "INT"
    assert op.index == 0 and op.type == "mul" and op.input("X") == ["x"]


def test_a_failed_append_leaves_the_block_unchanged():
    p = _core.ProgramDesc()
    b = p.block(0)
    tensor(b, "x", [-1, 784])
    tensor(b, "w", [512, 10], persistable=True)
    before = p.serialize("text")
    with pytest.raises(errors.ShapeError) as info:
        b.append_op("mul", {"X": ["x"], "Y": ["w"]}, {"Out": ["y"]}, {})
    e = info.value
    assert "X has shape [-1, 784] and Y has shape [512, 10]" in str(e)
    assert e.op_type == "mul" and e.op_index == 0 and e.block == 0 and e.code == "shape error"
    assert p.serialize("text") == before  # neither the op nor the implicitly declared 'y' stayed
    with pytest.raises(errors.ValidationError, match="missing input 'Y'"):
        b.append_op("mul", {"X": ["x"]}, {"Out": ["y"]}, {})
    with pytest.raises(errors.ValidationError, match="unknown op type 'mull'") as info:
        b.append_op("mull", {"X": ["x"]}, {"Out": ["y"]}, {})
    assert "did you mean 'mul'?" in info.value.notes
    assert p.serialize("text") == before


def test_attribute_values_are_converted_by_declared_type():
    p = _core.ProgramDesc()
    b = p.block(0)
    tensor(b, "x", [2, 3])
    with pytest.raises(errors.AttributeTypeError, match=r"attribute 'scale' \(FLOAT\) takes a float, got str"):
        b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": "2"})
    with pytest.raises(errors.AttributeTypeError, match="takes a bool, got int"):
        b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"bias_after_scale": 1})
    with pytest.raises(errors.InvalidArgumentError, match="out of range for a 32-bit float"):
        b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": 1e300})
    with pytest.raises(errors.ValidationError, match="unknown attribute 'scal'"):
        b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scal": 2.0})
    op = b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": 2})  # ints are floats
    assert op.attr("scale") == 2.0 and op.attr_type("scale") == "FLOAT"
    op.set_attr("bias", 0.5)
    assert op.attr("bias") == 0.5
    with pytest.raises(errors.AttributeTypeError):
        op.set_attr("bias", "0.5")
    with pytest.raises(errors.ValidationError, match="unknown attribute"):
        op.set_attr("biass", 0.5)
    tensor(b, "img", [-1, 1, 8, 8])
    tensor(b, "f", [2, 1, 3, 3], persistable=True)
    with pytest.raises(errors.ValidationError, match="attribute 'strides' value 0 is out of range: must be >= 1"):
        b.append_op("conv2d", {"Input": ["img"], "Filter": ["f"]}, {"Output": ["z"]}, {"strides": [0, 1]})


def test_handles_fail_cleanly_instead_of_crashing():
    p = _core.ProgramDesc()
    b = p.block(0)
    with pytest.raises(errors.NotFoundError):
        p.block(3)
    with pytest.raises(errors.NotFoundError):
        b.var("missing")
    with pytest.raises(IndexError):
        b.op(0)
    v = b.create_var("v")
    with pytest.raises(errors.ShapeError, match="rank exceeds"):
        v.shape = [1] * 10
    with pytest.raises(errors.ShapeError):
        v.shape = [-2]
    with pytest.raises(errors.InvalidArgumentError, match="unknown data type"):
        v.dtype = "complex64"
    with pytest.raises(errors.InvalidArgumentError, match="already declares"):
        b.create_var("v")
    with pytest.raises(errors.InvalidArgumentError, match="position 5"):
        b.insert_op(5, "relu", {"X": ["v"]}, {"Out": ["r"]}, {})
    op = b.append_op("relu", {"X": ["v"]}, {"Out": ["r"]}, {})
    with pytest.raises(errors.InvalidArgumentError, match="used by a relu op"):
        b.remove_var("v")
    b.remove_op(0)
    assert not op.valid
    with pytest.raises(errors.NotFoundError, match="earlier version"):
        op.type
    b.remove_var("r")
    b.remove_var("v")
    with pytest.raises(errors.NotFoundError, match="no longer exists"):
        v.shape


def test_serialize_and_parse_round_trip():
    p = _core.ProgramDesc()
    b = p.block(0)
    tensor(b, "x", [-1, 4])
    b.append_op("relu", {"X": ["x"]}, {"Out": ["y"]}, {})
    for fmt in ("binary", "text", "json"):
        q = _core.ProgramDesc.parse(p.serialize(fmt), fmt)
        assert q == p and q.serialize("binary") == p.serialize("binary")
    with pytest.raises(errors.ParseError):
        _core.ProgramDesc.parse(b"blocks { idx: ", "text")


def test_scope_round_trips_supported_dtypes():
    s = _core.Scope()
    for dtype in ("float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"):
        a = (np.arange(6) % 2).astype(dtype).reshape(2, 3)
        s.set("v_" + dtype, a)
        got = s.get("v_" + dtype)
        assert got.dtype == a.dtype and got.shape == (2, 3) and (got == a).all()
    with pytest.raises(errors.InvalidArgumentError, match="not supported"):
        s.set("c", np.zeros(2, np.complex64))
    with pytest.raises(errors.InvalidArgumentError, match="not C-contiguous"):
        s.set("t", np.zeros((3, 4), np.float32).T)
    with pytest.raises(errors.InvalidArgumentError, match="not an array"):
        s.set("o", object())
    with pytest.raises(errors.NotFoundError):
        s.get("nothing")
