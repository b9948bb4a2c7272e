"""The design's Scope hierarchy and partial network runs: Scope.new_scope() with lookups through
parents and drop_kids(), Executor.run(op_range=...) continuing in one scope, Model.network.add_op
returning op indices, and v2's layer.join."""

import numpy as np
import pytest

import paddlec
import paddlec.v2 as paddle
from paddlec import errors, layers, ops


def two_layer_net(main):
    x = layers.data("x", [3])
    w = main.global_block().create_parameter([3, 2], name="w", initializer=paddlec.initializer.Constant(0.5))
    h = ops.mul(x=x, y=w)
    return x, w, h, ops.relu(x=ops.scale(x=h, scale=-1.0, bias=1.0))


def test_a_kid_scope_finds_its_parents_variables_and_keeps_its_own():
    parent = paddlec.Scope()
    parent.set("w", np.ones((2, 2), "float32"))
    kid = parent.new_scope()
    assert kid.parent is parent and parent.parent is None
    # Lookup goes through the parent...
    assert kid.has_value("w") and not kid.has_local_value("w")
    np.testing.assert_array_equal(kid.get("w"), np.ones((2, 2)))
    # ...a local variable shadows it, and the parent never sees the kid's.
    kid.set("w", np.zeros((2, 2), "float32"), local=True)
    np.testing.assert_array_equal(kid.get("w"), np.zeros((2, 2)))
    np.testing.assert_array_equal(parent.get("w"), np.ones((2, 2)))
    kid.set("t", np.full((1,), 7, "float32"))
    assert kid.var_names() == ["t", "w"] and not parent.has_value("t")
    # Without local=True, set() writes the variable where it is found.
    grandkid = kid.new_scope()
    grandkid.set("t", np.full((1,), 8, "float32"))
    assert kid.get("t")[0] == 8 and grandkid.var_names() == []


def test_drop_kids_frees_the_kids_and_refuses_their_use():
    parent = paddlec.Scope()
    kid = parent.new_scope()
    grandkid = kid.new_scope()
    kid.set("a", np.ones(3, "float32"))
    parent.drop_kids()
    assert not kid.has_value("a")
    for scope in (kid, grandkid):
        with pytest.raises(errors.InvalidArgumentError, match=r"dropped by its parent's drop_kids\(\)"):
            scope.get("a")
    with pytest.raises(errors.InvalidArgumentError, match="dropped"):
        paddlec.Executor().run(paddlec.Program(), scope=kid)
    # The parent itself is intact and makes new kids.
    parent.set("p", np.ones(1, "float32"))
    assert parent.new_scope().get("p")[0] == 1


def test_programs_run_on_a_kid_read_the_parents_parameters(fresh_programs):
    main, startup = fresh_programs
    _, _, h, _ = two_layer_net(main)
    exe = paddlec.Executor()
    root = paddlec.Scope()
    exe.run(startup, scope=root)
    kid = root.new_scope()
    x = np.arange(6, dtype="float32").reshape(2, 3)
    (got,) = exe.run(main, feed={"x": x}, fetch_list=[h], scope=kid)
    np.testing.assert_allclose(got, x @ np.full((3, 2), 0.5))
    # The parameter was found in the parent, not created again in the kid.
    assert "w" not in kid.var_names() and "w" in root.var_names()
    # A parameter set on the parent is what the kid's next run uses.
    root.set("w", np.ones((3, 2), "float32"))
    (got,) = exe.run(main, feed={"x": x}, fetch_list=[h], scope=kid)
    np.testing.assert_allclose(got, x @ np.ones((3, 2)))


def test_op_ranges_continue_in_one_scope_and_equal_a_full_run(fresh_programs):
    main, startup = fresh_programs
    _, _, h, out = two_layer_net(main)
    exe = paddlec.Executor()
    scope = paddlec.Scope()
    exe.run(startup, scope=scope)
    x = np.random.RandomState(0).normal(size=(4, 3)).astype("float32")
    (whole,) = exe.run(main, feed={"x": x}, fetch_list=[out], scope=scope)
    n = len(main.global_block().ops)
    assert [op.type for op in main.global_block().ops] == ["mul", "scale", "relu"]
    # Network.run(scope, 0, 1) then (1, n): the second range reads what the first wrote.
    (first,) = exe.run(main, feed={"x": 2 * x}, fetch_list=[h], scope=scope, op_range=(0, 1))
    np.testing.assert_allclose(first, 2 * x @ np.full((3, 2), 0.5), rtol=1e-6)
    (second,) = exe.run(main, fetch_list=[out], scope=scope, op_range=(1, None))
    np.testing.assert_allclose(second, np.maximum(1 - first, 0), rtol=1e-6)
    (again,) = exe.run(main, feed={"x": x}, fetch_list=[out], scope=scope, op_range=(0, n))
    np.testing.assert_array_equal(again, whole)
    # An empty range runs nothing; ranges outside the block are refused.
    exe.run(main, scope=scope, op_range=(2, 2))
    with pytest.raises(errors.InvalidArgumentError, match=r"op_range \(1, 4\) is outside the block's ops: "
                                                          r"expected 0 <= from <= to <= 3"):
        exe.run(main, scope=scope, op_range=(1, 4))
    with pytest.raises(TypeError, match="op_range must be a pair"):
        exe.run(main, scope=scope, op_range=3)


def test_a_later_range_in_a_fresh_scope_misses_the_earlier_results(fresh_programs):
    main, startup = fresh_programs
    _, _, _, out = two_layer_net(main)
    exe = paddlec.Executor()
    scope = paddlec.Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(errors.ExecutionError, match=r"reads variable 'mul_0.out', which holds no value"):
        exe.run(main, fetch_list=[out], scope=scope, op_range=(1, None))


def test_model_network_add_op_returns_indices_and_runs_in_parts():
    m = paddlec.Model(seed=1)
    m.data("x", [2])
    assert len(m.network) == 0
    assert m.network.add_op("scale", inputs={"X": "x"}, outputs={"Out": "y"}, attrs={"scale": 3.0}) == 0
    assert m.network.add_op("relu", inputs={"X": "y"}, outputs={"Out": "z"}) == 1
    assert m.network.add_op("elementwise_add", inputs={"X": "z", "Y": "x"}, outputs={"Out": "s"}) == 2
    assert [op.type for op in m.network.ops] == ["scale", "relu", "elementwise_add"]
    x = np.array([[1, -1], [-2, 3]], "float32")
    m.fill("x", x)
    expected = np.maximum(3 * x, 0) + x
    (whole,) = m.network.run(fetch_list=["s"])
    np.testing.assert_array_equal(whole, expected)
    (y,) = m.network.run(None, 0, 1, fetch_list=["y"])
    np.testing.assert_array_equal(y, 3 * x)
    (s,) = m.network.run(None, 1, None, fetch_list=["s"])
    np.testing.assert_array_equal(s, expected)
    # A kid of the model's scope runs the network apart from it.
    kid = m.scope.new_scope()
    (s2,) = m.network.run(kid, 0, 3, feed={"x": 2 * x}, fetch_list=["s"])
    np.testing.assert_array_equal(s2, 2 * expected)
    with pytest.raises((errors.ValidationError, errors.NotFoundError), match="nonexistent_op"):
        m.network.add_op("nonexistent_op", inputs={"X": "x"}, outputs={"Out": "q"})
    assert len(m.network) == 3


def test_v2_layer_join_concatenates_features():
    paddle.init(use_gpu=False, trainer_count=1, seed=1)
    a = paddle.layer.data(name="a", type=paddle.data_type.dense_vector(2))
    b = paddle.layer.data(name="b", type=paddle.data_type.dense_vector(3))
    joined = paddle.layer.join(input=[a, b])
    assert joined.shape == (None, 5)
    out = paddle.layer.fc(input=joined, size=1, act=paddle.activation.Linear())
    params = paddle.parameters.create(out)
    got = paddle.infer(output_layer=joined, parameters=params, input=[([1, 2], [3, 4, 5])],
                       feeding={"a": 0, "b": 1})
    np.testing.assert_array_equal(got, [[1, 2, 3, 4, 5]])
    with pytest.raises(TypeError, match="join\\(\\): input must be a non-empty list of layers"):
        paddle.layer.join(input=a)
