"""Blocks and loops with gradients: the public block guard (parameters made inside a block live in
the global block), layers.While forward in training and test mode, and the gradient through a
10-step while loop: equal to the unrolled program's, and to finite differences."""

import numpy as np
import pytest

import paddlec
from paddlec import errors, layers, ops
from paddlec.backward import append_backward

STEPS = 10
W0 = np.random.RandomState(3).uniform(-0.6, 0.6, (4, 4)).astype("float32")
X0 = np.random.RandomState(4).uniform(-1, 1, (2, 4)).astype("float32")


def test_blocks_nest_and_parameters_made_inside_live_in_the_global_block(fresh_programs):
    main, _ = fresh_programs
    x = layers.data("x", [4])
    with main.block_guard() as sub:
        assert main.current_block() is sub and sub.parent_idx == 0
        y = layers.fc(x, 3, name="inner")
        local = sub.create_var(name="local_only", shape=[1], dtype="float32")
    assert main.current_block().idx == 0
    gb = main.global_block()
    # The layer's ops are the block's; its parameters are the global block's.
    assert [op.type for op in sub.ops][:2] == ["mul", "elementwise_add"] and not gb.ops
    assert gb.has_var("inner.w") and gb.var("inner.w").is_parameter and not sub.has_var("inner.w")
    assert sub.has_var(y.name) and not gb.has_var(local.name)
    # Lookups from the sub-block reach the global block, not the other way.
    assert sub._find_var_recursive("x") is not None and gb._find_var_recursive("local_only") is None
    # An exception inside the guard still restores the current block.
    with pytest.raises(RuntimeError):
        with main.block_guard():
            raise RuntimeError("boom")
    assert main.current_block().idx == 0


def while_program(is_test=False):
    """h = tanh(h @ w), STEPS times, from h = x; loss = mean(h)."""
    main, startup = paddlec.Program(), paddlec.Program()
    with paddlec.program_guard(main, startup):
        x = layers.data("x", [4])
        w = main.global_block().create_parameter([4, 4], name="w", initializer=paddlec.initializer.Constant(0.0))
        h = ops.assign(x=x, out=main.global_block().create_var(name="h", shape=[-1, 4], dtype="float32"))
        i = layers.fill_constant([1], "float32", 0.0, name="i")
        n = layers.fill_constant([1], "float32", float(STEPS), name="n")
        cond = ops.less_than(x=i, y=n)
        loop = layers.While(cond, is_test=is_test)
        with loop.block():
            # The loop-carried h is written last, by an assign from a body variable (see control_flow.py).
            h_new = ops.tanh(x=ops.mul(x=h, y=w))
            ops.assign(x=h_new, out=h)
            ops.scale(x=i, out=i, bias=1.0)
            ops.less_than(x=i, y=n, out=cond)
        loss = layers.mean(h)
    return main, startup, loss


def unrolled_program():
    main, startup = paddlec.Program(), paddlec.Program()
    with paddlec.program_guard(main, startup):
        x = layers.data("x", [4])
        w = main.global_block().create_parameter([4, 4], name="w", initializer=paddlec.initializer.Constant(0.0))
        h = x
        for _ in range(STEPS):
            h = ops.tanh(x=ops.mul(x=h, y=w))
        loss = layers.mean(h)
    return main, startup, loss


def run(main, startup, fetch, w=W0, x=X0):
    exe = paddlec.Executor()
    scope = paddlec.Scope()
    exe.run(startup, scope=scope)
    scope.set("w", w)
    return exe.run(main, feed={"x": x}, fetch_list=fetch, scope=scope)


def expected_h(w=W0, x=X0):
    h = x.astype("float64")
    for _ in range(STEPS):
        h = np.tanh(h @ w)
    return h


@pytest.mark.parametrize("is_test", [False, True])
def test_while_runs_its_body_until_the_condition_fails(is_test):
    main, startup, loss = while_program(is_test)
    gb = main.global_block()
    op = gb.ops[-2]
    assert op.type == "while" and op.attr("is_test") == is_test
    assert set(op.input("X")) == {"h", "w", "i", "n"} and set(op.output("Out")) == {"h", "i", "less_than_0.out"}
    h, i = run(main, startup, ["h", "i"])
    assert i[0] == STEPS
    np.testing.assert_allclose(h, expected_h(), rtol=1e-5, atol=1e-6)


def test_a_while_body_must_update_its_condition(fresh_programs):
    i = layers.fill_constant([1], "float32", 0.0)
    cond = ops.less_than(x=i, y=i)
    loop = layers.While(cond)
    with pytest.raises(errors.InvalidArgumentError, match="never writes its condition"):
        with loop.block():
            ops.scale(x=i, out=i, bias=1.0)
    with pytest.raises(errors.InvalidArgumentError, match="must be one bool"):
        layers.While(i)


def test_the_gradient_of_a_10_step_while_equals_the_unrolled_programs():
    main, startup, loss = while_program()
    append_backward(loss)
    grad_op = [op for op in main.global_block().ops if op.type == "while_grad"]
    assert len(grad_op) == 1 and grad_op[0].output("X@GRAD") == ["h@GRAD", "w@GRAD", "@EMPTY@", "@EMPTY@"]
    got_loss, got_w = run(main, startup, [loss, "w@GRAD"])

    u_main, u_startup, u_loss = unrolled_program()
    append_backward(u_loss)
    want_loss, want_w = run(u_main, u_startup, [u_loss, "w@GRAD"])
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-6)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-5, atol=1e-7)
    assert np.abs(got_w).max() > 1e-3  # not vacuous
    # Running again (fresh step scopes) gives the same gradient.
    np.testing.assert_array_equal(run(main, startup, ["w@GRAD"])[0], got_w)


def test_the_gradient_through_while_matches_finite_differences():
    main, startup, loss = while_program()
    append_backward(loss)
    (grad,) = run(main, startup, ["w@GRAD"])

    def loss_at(w):
        return float(np.mean(expected_h(w=w)))

    eps = 1e-3
    numeric = np.zeros_like(W0, dtype="float64")
    for idx in np.ndindex(*W0.shape):
        plus, minus = W0.astype("float64"), W0.astype("float64")
        plus[idx] += eps
        minus[idx] -= eps
        numeric[idx] = (loss_at(plus) - loss_at(minus)) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=2e-3, atol=2e-5)
    # And the float32 program's own loss moves as its gradient says.
    (base,) = run(main, startup, [loss])
    step = 1e-2 * grad / np.linalg.norm(grad)
    (moved,) = run(main, startup, [loss], w=(W0 - step).astype("float32"))
    assert float(moved) < float(base)


def test_a_while_of_zero_steps_passes_the_gradient_through(fresh_programs):
    main, startup, loss = while_program()
    # n = 0: the body never runs, h stays x, and d loss / d w is zero.
    for op in startup.global_block().ops + main.global_block().ops:
        if op.type == "fill_constant" and op.output("Out") == ["n"]:
            op._set_attr("value", 0.0)
    append_backward(loss)
    h, grad = run(main, startup, ["h", "w@GRAD"])
    np.testing.assert_array_equal(h, X0)
    np.testing.assert_array_equal(grad, np.zeros((4, 4), "float32"))


def ifelse_program():
    """out = tanh(x @ tw + tb) if flag < 0 else sigmoid(x @ fw + fb); loss = mean(out)."""
    main, startup = paddlec.Program(), paddlec.Program()
    main.random_seed = startup.random_seed = 5
    with paddlec.program_guard(main, startup):
        x = layers.data("x", [4])
        flag = layers.data("flag", [1], append_batch_size=False)
        zero = layers.fill_constant([1], "float32", 0.0)
        pred = ops.less_than(x=flag, y=zero)
        out = layers.cond(pred, lambda: layers.fc(x, 3, act="tanh", name="t"),
                          lambda: layers.fc(x, 3, act="sigmoid", name="f"))
        loss = layers.mean(out)
    return main, startup, loss


def ifelse_numpy(params, x, flag):
    if flag < 0:
        return np.tanh(x @ params["t.w"] + params["t.b"]).mean()
    return (1 / (1 + np.exp(-(x @ params["f.w"] + params["f.b"])))).mean()


@pytest.mark.parametrize("flag", [-1.0, 1.0])
def test_ifelse_branches_get_gradients_that_match_finite_differences(flag):
    main, startup, loss = ifelse_program()
    gb = main.global_block()
    assert [op.type for op in gb.ops].count("conditional_block") == 2
    assert {"t.w", "t.b", "f.w", "f.b"} <= {p.name for p in main.all_parameters()}
    append_backward(loss)
    assert [op.type for op in gb.ops].count("conditional_block_grad") == 2
    exe = paddlec.Executor()
    scope = paddlec.Scope()
    exe.run(startup, scope=scope)
    names = ["t.w", "t.b", "f.w", "f.b"]
    params = {n: scope.get(n).astype("float64") for n in names}
    feed = {"x": X0, "flag": np.array([flag], "float32")}
    got = exe.run(main, feed=feed, fetch_list=[loss] + [n + "@GRAD" for n in names], scope=scope)
    np.testing.assert_allclose(got[0], ifelse_numpy(params, X0.astype("float64"), flag), rtol=1e-5)
    taken, other = (["t.w", "t.b"], ["f.w", "f.b"]) if flag < 0 else (["f.w", "f.b"], ["t.w", "t.b"])
    eps = 1e-4
    for name, grad in zip(names, got[1:]):
        if name in other:
            np.testing.assert_array_equal(grad, np.zeros_like(grad))
            continue
        numeric = np.zeros_like(params[name])
        for idx in np.ndindex(*params[name].shape):
            plus = {k: v.copy() for k, v in params.items()}
            minus = {k: v.copy() for k, v in params.items()}
            plus[name][idx] += eps
            minus[name][idx] -= eps
            numeric[idx] = (ifelse_numpy(plus, X0, flag) - ifelse_numpy(minus, X0, flag)) / (2 * eps)
        np.testing.assert_allclose(grad, numeric, rtol=1e-3, atol=1e-6)
        assert np.abs(grad).max() > 1e-4
    # The same program, run again with the other flag, takes the other branch.
    feed["flag"] = np.array([-flag], "float32")
    other_grads = exe.run(main, feed=feed, fetch_list=[n + "@GRAD" for n in taken], scope=scope)
    for g in other_grads:
        np.testing.assert_array_equal(g, np.zeros_like(g))
