"""Program building: programs, blocks, variables, parameters, operators and their shapes."""

import numpy as np
import pytest

import paddlec
from paddlec import errors, layers, ops


def test_variables_have_generated_names_shapes_and_flags(fresh_programs):
    main, _ = fresh_programs
    block = main.global_block()
    x = block.create_var(shape=[None, 3], dtype="float64")
    y = block.create_var(shape=[-1, 3])
    assert x.name != y.name and x.name.startswith("tmp_")
    assert x.shape == (None, 3) and x.dtype == "float64" and x.block is block
    assert not x.persistable and not x.stop_gradient and x.op is None
    x.stop_gradient = True
    assert x.stop_gradient and x.desc.stop_gradient
    assert block.var(x.name) is x and block.has_var(x.name)
    assert block.create_var(name=x.name, shape=[None, 3]) is x
    with pytest.raises(errors.InvalidArgumentError, match="already exists with shape"):
        block.create_var(name=x.name, shape=[4, 3])
    with pytest.raises(errors.NotFoundError, match="did you mean"):
        block.var(x.name + "x")


def test_ops_infer_shapes_on_creation_and_record_their_writer(fresh_programs):
    main, _ = fresh_programs
    x = layers.data("x", [5])
    w = main.global_block().create_parameter([5, 7], name="w")
    y = ops.mul(x=x, y=w)
    assert y.shape == (None, 7) and y.dtype == "float32"
    assert y.op.type == "mul" and y.op.input("X") == ["x"] and y.op.output("Out") == [y.name]
    assert x.op is None and w.op is None  # read before any op writes them
    op = main.global_block().ops[0]
    assert op.idx == 0 and op.attr("x_num_col_dims") == 1 and "y_num_col_dims" in op.attr_names
    assert op.input_arg_names == ["x", "w"] and repr(op) == "mul(X=x, Y=w) -> (Out=%s)" % y.name


def test_parameters_live_in_the_global_block_with_their_attributes(fresh_programs):
    main, startup = fresh_programs
    sub = main._create_block()
    assert main.current_block() is sub and sub.parent_block is main.global_block() is sub.parent
    p = sub.create_parameter([3, 4], name="p", initializer=paddlec.initializer.Uniform(-0.5, 0.5),
                             learning_rate=0.1, regularizer=paddlec.regularizer.L2Decay(1e-3))
    main._rollback()
    assert main.current_block() is main.global_block()
    assert isinstance(p, paddlec.Parameter) and p.block is main.global_block() and not sub.has_var("p")
    assert p.persistable and p.trainable and p.desc.is_parameter
    assert p.initializer == "uniform:-0.5:0.5" and p.learning_rate == 0.1 and p.regularizer == "l2:0.001"
    assert main.all_parameters() == [p] and main.startup_program is startup
    p.trainable = False
    assert p.stop_gradient
    assert main.global_block().create_parameter([3, 4], name="p") is p  # a shared parameter
    with pytest.raises(errors.InvalidArgumentError, match="already has a variable named 'p'"):
        main.global_block().create_parameter([1], name="p")
    with pytest.raises(errors.InvalidArgumentError, match="needs known dims"):
        main.global_block().create_parameter([None, 2], name="q")
    with pytest.raises(errors.InvalidArgumentError, match="invalid initializer"):
        main.global_block().create_parameter([2], name="r", initializer="gauss:1")
    assert not main.global_block().has_var("r")


def test_startup_program_initializes_parameters_and_global_vars(fresh_programs):
    main, startup = fresh_programs
    block = main.global_block()
    p = block.create_parameter([2, 3], name="p", initializer=paddlec.initializer.Constant(0.25))
    step = block.create_global_var([1], 7.0, name="step")
    ops.elementwise_add(x=ops.scale(x=p), y=step)
    exe = paddlec.Executor()
    exe.run(startup)
    assert [op.type for op in startup.global_block().ops] == ["fill_constant", "fill_constant"]
    scope = paddlec.global_scope()
    np.testing.assert_array_equal(scope.get("p"), np.full((2, 3), 0.25, np.float32))
    np.testing.assert_array_equal(scope.get(step), [7.0])
    # Running the startup program again only adds initializers for parameters created since.
    block.create_parameter([4], name="q")
    ops.relu(x="q")
    exe.run(startup)
    assert len(startup.global_block().ops) == 3 and scope.get("q").shape == (4,)


def test_append_and_prepend_op_take_variables_names_and_lists(fresh_programs):
    main, _ = fresh_programs
    block = main.global_block()
    a = block.create_var(name="a", shape=[2, 3])
    b = block.create_var(name="b", shape=[2, 3])
    op = block.append_op("sum", inputs={"X": [a, "b"]}, outputs={"Out": "s"})
    assert block.var("s").shape == (2, 3) and op.input("X") == ["a", "b"]
    first = block.prepend_op("scale", inputs={"X": a}, outputs={"Out": b}, attrs={"scale": 3})
    assert [o.type for o in block.ops] == ["scale", "sum"] and first.attr("scale") == 3.0 and op.idx == 1
    with pytest.raises(errors.AttributeTypeError, match="op 'scale': attribute 'scale' \\(FLOAT\\) takes a float"):
        block.append_op("scale", inputs={"X": a}, outputs={"Out": "t"}, attrs={"scale": "3"})
    with pytest.raises(TypeError, match="takes Variables or names"):
        block.append_op("relu", inputs={"X": 3}, outputs={"Out": "t"})
    assert not block.has_var("t")
    other = paddlec.Program()
    with pytest.raises(errors.InvalidArgumentError, match="belongs to another program"):
        other.global_block().append_op("relu", inputs={"X": a}, outputs={"Out": "t"})


def test_program_guard_switches_and_restores_the_defaults():
    outer = paddlec.default_main_program()
    main, startup = paddlec.Program(), paddlec.Program()
    with paddlec.program_guard(main, startup):
        assert paddlec.default_main_program() is main and paddlec.default_startup_program() is startup
        x = layers.data("x", [3])
    assert paddlec.default_main_program() is outer and x.block.program is main
    assert main.startup_program is startup
    with pytest.raises(TypeError):
        with paddlec.program_guard("main"):
            pass


def test_clone_for_test_keeps_the_forward_part_with_is_test(fresh_programs):
    main, _ = fresh_programs
    x = layers.data("x", [4])
    h = layers.dropout(layers.fc(x, 3), 0.5)
    loss = layers.mean(h)
    paddlec.optimizer.SGD(0.1).minimize(loss)
    test = main.clone(for_test=True)
    types = [op.type for op in test.global_block().ops]
    assert types == ["mul", "elementwise_add", "dropout", "mean"]
    assert test.global_block().ops[2].attr("is_test") is True
    assert main.global_block().ops[2].attr("is_test") is False
    copy = main.clone()
    assert copy.serialize() == main.serialize() and copy.param_grads == main.param_grads


def test_views_follow_passes_that_rewrite_the_program(fresh_programs):
    main, _ = fresh_programs
    x = layers.data("x", [4])
    loss = layers.mean(layers.fc(x, 2, name="fc"))
    first = main.global_block().ops[0]
    pairs = paddlec.append_backward(loss)
    assert sorted((p.name, g.name) for p, g in pairs) == [("fc.b", "fc.b@GRAD"), ("fc.w", "fc.w@GRAD")]
    block = main.global_block()
    assert "fc.w@GRAD" in block.vars and block.var("fc.w@GRAD").shape == (4, 2)
    assert [op.type for op in block.ops] == ["mul", "elementwise_add", "mean", "fill_constant", "mean_grad",
                                             "elementwise_add_grad", "mul_grad"]
    assert block.ops[0].type == "mul" and loss.shape == ()
    with pytest.raises(errors.NotFoundError, match="earlier version"):
        first.type  # the backward pass replaced the desc; views are looked up again
    assert main.loss_name == loss.name and "backward{loss=%s}" % loss.name in main.passes_applied


def test_variable_arithmetic_builds_ops(fresh_programs):
    main, startup = fresh_programs
    x = layers.data("x", [3], append_batch_size=False)
    y = layers.data("y", [3], append_batch_size=False)
    z = (x + y) * 2.0 - x / 4.0 + (-y) + 1.0
    w = 1.0 - x
    (zv, wv) = paddlec.Executor().run(main, feed={"x": [1.0, 2.0, 3.0], "y": [4.0, 5.0, 6.0]}, fetch_list=[z, w])
    xv, yv = np.array([1.0, 2, 3]), np.array([4.0, 5, 6])
    np.testing.assert_allclose(zv, (xv + yv) * 2 - xv / 4 - yv + 1, rtol=1e-6)
    np.testing.assert_allclose(wv, 1 - xv)


def test_signature_matches_what_compile_records(fresh_programs):
    main, _ = fresh_programs
    x = layers.data("x", [4])
    label = layers.data("label", [1], dtype="int64")
    layers.mean(layers.cross_entropy(layers.fc(x, 3, act="softmax", name="fc"), label))
    feeds, fetches, params = main.signature()
    assert feeds == [("x", "float32", [-1, 4]), ("label", "int64", [-1, 1])]
    assert fetches == ["mean_0.out"] and params == ["fc.b", "fc.w"]


def test_compile_passes_run_from_python(fresh_programs):
    main, startup = fresh_programs
    img = layers.data("img", [2, 6, 6])
    conv = layers.conv2d(img, 4, 3, padding=1, bias_attr=False, name="conv")
    out = layers.relu(layers.batch_norm(conv, name="bn"), name="out")
    exe = paddlec.Executor()
    exe.run(startup)
    scope = paddlec.global_scope()
    scope.set("bn.mean", np.linspace(-1, 1, 4).astype("f4"))
    scope.set("bn.variance", np.linspace(0.5, 2, 4).astype("f4"))
    data = {"img": np.random.RandomState(0).rand(3, 2, 6, 6).astype("f4")}
    test = main.clone()
    timings = test.apply_passes("for-test,fuse-conv-bn-act")
    assert [t[0] for t in timings] == ["for-test", "fuse-conv-bn-act"] and all(t[2] for t in timings)
    assert [op.type for op in test.global_block().ops] == ["fused_conv2d_bn_act"]
    (fused,) = exe.run(test, feed=data, fetch_list=[out.name])
    main.global_block().ops[1]._set_attr("is_test", True)  # the unfused program in inference mode
    (plain,) = exe.run(main, feed=data, fetch_list=[out])
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    assert [name for name, _, _ in paddlec.passes()][:3] == ["validate", "infer-shape", "init-params"]
    with pytest.raises(errors.InvalidArgumentError, match="unknown pass|no pass"):
        main.apply_passes("no-such-pass")
