"""The executor: feeds (checks, conversion, zero copy), fetches, scopes and plan caching."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import paddlec
from paddlec import errors, layers, ops


def simple_net(main):
    x = layers.data("x", [3])
    w = main.global_block().create_parameter([3, 2], name="w", initializer=paddlec.initializer.Constant(1.0))
    return x, ops.mul(x=x, y=w)


def test_feeds_are_checked_against_declarations(fresh_programs):
    main, startup = fresh_programs
    _, y = simple_net(main)
    exe = paddlec.Executor()
    exe.run(startup)
    # Lists and float64 are converted, with the core's warning (the one `paddlec run --feed` prints).
    with pytest.warns(UserWarning, match="input 'x' is declared float32: the fed float64 array is converted to it"):
        (got,) = exe.run(main, feed={"x": [[1.0, 2.0, 3.0]]}, fetch_list=[y])
    np.testing.assert_array_equal(got, [[6.0, 6.0]])
    with pytest.raises(errors.InvalidArgumentError, match=r"input 'x' is declared with shape \[-1, 3\] but the fed "
                                                          r"array has shape \[2, 4\]"):
        exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[y])
    with pytest.raises(errors.InvalidArgumentError, match="input 'x' is declared float32 but the fed array is complex128"):
        exe.run(main, feed={"x": np.ones((2, 3), complex)}, fetch_list=[y])
    with pytest.raises(errors.InvalidArgumentError, match="input 'x' is declared float32 but the fed array is int64"):
        exe.run(main, feed={"x": np.ones((2, 3), "int64")}, fetch_list=[y])
    with pytest.raises(errors.InvalidArgumentError, match="cannot feed 'xx'") as info:
        exe.run(main, feed={"xx": np.ones((2, 3))}, fetch_list=[y])
    assert info.value.notes == ["did you mean 'x'?"]
    with pytest.raises(errors.NotFoundError, match="cannot fetch 'yy'"):
        exe.run(main, feed={"x": np.ones((2, 3))}, fetch_list=["yy"])
    with pytest.raises(errors.ExecutionError, match="reads variable 'x', which holds no value"):
        exe.run(main, scope=paddlec.Scope(), fetch_list=[y])


def test_label_shape_hint():
    label = layers.data("label", [1], dtype="int64")
    out = ops.scale(x=ops.cast(x=label, in_dtype=3, out_dtype=5))
    with pytest.raises(errors.InvalidArgumentError) as info:
        paddlec.Executor().run(feed={"label": np.zeros(4, "int64")}, fetch_list=[out])
    assert info.value.notes == ["add a trailing dimension of 1: array.reshape((4, 1))"]


def test_feeds_are_zero_copy_when_the_layout_allows(fresh_programs):
    main, startup = fresh_programs
    _, y = simple_net(main)
    exe = paddlec.Executor()
    exe.run(startup)
    a = np.ones((4, 3), "float32")
    refs = sys.getrefcount(a)
    exe.run(main, feed={"x": a}, fetch_list=[y])
    assert sys.getrefcount(a) == refs + 1  # the scope's tensor views the array
    b = np.ones((4, 3), "float64")  # converted: the scope holds the copy, not b
    refs_b = sys.getrefcount(b)
    exe.run(main, feed={"x": b}, fetch_list=[y])
    assert sys.getrefcount(b) == refs_b and sys.getrefcount(a) == refs  # a was released when x was fed again
    strided = np.ones((4, 6), "float32")[:, ::2]
    (got,) = exe.run(main, feed={"x": strided}, fetch_list=[y])
    np.testing.assert_array_equal(got, np.full((4, 2), 3.0))


def test_a_fed_variable_an_op_updates_in_place_is_never_written_through(fresh_programs):
    main, startup = fresh_programs
    x, y = simple_net(main)
    paddlec.optimizer.SGD(0.5).minimize(layers.mean(y))
    exe = paddlec.Executor()
    exe.run(startup)
    w = np.ones((3, 2), "float32")
    exe.run(main, feed={"x": np.ones((2, 3), "float32"), "w": w})
    np.testing.assert_array_equal(w, np.ones((3, 2)))  # the caller's array is untouched
    assert not np.allclose(paddlec.global_scope().get("w"), 1.0)  # the parameter was updated


def test_fetches_are_fresh_arrays():
    x = layers.data("x", [2])
    y = layers.relu(x)
    exe = paddlec.Executor()
    first, = exe.run(feed={"x": np.ones((1, 2))}, fetch_list=[y])
    first[:] = 7
    again, = exe.run(feed={"x": np.ones((1, 2))}, fetch_list=[y])
    np.testing.assert_array_equal(again, [[1.0, 1.0]])


def test_programs_sharing_a_scope_share_parameters_but_not_temporaries(fresh_programs):
    main, startup = fresh_programs
    x = layers.data("x", [3])
    y = layers.fc(x, 1, name="fc")
    test = main.clone(for_test=True)
    paddlec.optimizer.SGD(0.1).minimize(layers.mean(y))
    exe = paddlec.Executor()
    exe.run(startup)
    (before,) = exe.run(test, feed={"x": np.ones((5, 3))}, fetch_list=["fc.out"])
    exe.run(main, feed={"x": np.ones((2, 3))})  # another batch size through the same names
    (after,) = exe.run(test, feed={"x": np.ones((5, 3))}, fetch_list=["fc.out"])
    assert after.shape == (5, 1) and (after < before).all()  # the update is seen, the batch is right
    scope = paddlec.global_scope()
    assert scope.has_value("fc.w") and not scope.has_value("fc.out")  # temporaries stay per program


def test_plans_are_cached_and_rebuilt_when_the_program_changes(fresh_programs):
    main, _ = fresh_programs
    x = layers.data("x", [2])
    y = layers.relu(x)
    exe = paddlec.Executor()
    for _ in range(3):
        exe.run(main, feed={"x": -np.ones((1, 2))}, fetch_list=[y])
    assert exe._core.cached_plans == 1
    z = ops.scale(x=x, scale=2.0)  # the program changed: the plan is rebuilt, not reused stale
    (got,) = exe.run(main, feed={"x": np.ones((3, 2))}, fetch_list=[z])  # a new batch size, too
    np.testing.assert_array_equal(got, np.full((3, 2), 2.0))
    other = paddlec.Scope()
    exe.run(main, feed={"x": np.ones((1, 2))}, fetch_list=[z], scope=other)
    assert exe._core.cached_plans == 2  # one per (program, block, scope)
    exe.close()
    assert exe._core.cached_plans == 0


def test_scopes_hold_values_between_runs():
    scope = paddlec.Scope()
    scope.set("a", np.arange(6, dtype="int64").reshape(2, 3))
    assert scope.has_value("a") and "a" in scope and scope.var_names() == ["a"]
    np.testing.assert_array_equal(np.array(scope.find_var("a").get_tensor()), np.arange(6).reshape(2, 3))
    assert scope.find_var("b") is None
    with paddlec.scope_guard(scope):
        assert paddlec.global_scope() is scope
    assert paddlec.global_scope() is not scope
    assert scope.erase("a") and not scope.has_value("a")


def test_random_seed_makes_runs_repeatable(fresh_programs):
    main, startup = fresh_programs
    x = layers.data("x", [8])
    layers.fc(x, 8, name="fc")
    startup.random_seed = 3
    values = []
    for _ in range(2):
        scope = paddlec.Scope()
        paddlec.Executor().run(startup, scope=scope)
        values.append(scope.get("fc.w"))
    np.testing.assert_array_equal(values[0], values[1])
    startup.random_seed = 4
    scope = paddlec.Scope()
    paddlec.Executor().run(startup, scope=scope)
    assert not np.array_equal(values[0], scope.get("fc.w"))


def test_thread_counts_are_checked():
    # 100,000 threads once overflowed libgomp's stack and killed the interpreter: run it in a child.
    code = (
        "import paddlec, paddlec.errors as e\n"
        "for n in (100000, 2**31 - 1, -2):\n"
        "    try:\n"
        "        paddlec.Executor('cpu', num_threads=n)\n"
        "    except e.InvalidArgumentError as err:\n"
        "        print(err)\n"
        "    else:\n"
        "        print('accepted', n)\n"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    lines = child.stdout.splitlines()
    assert len(lines) == 3
    for n, line in zip((100000, 2**31 - 1, -2), lines):
        assert line.startswith(f"thread count {n} is out of range: use 1 to "), line
        assert line.endswith("(4 per core of this machine), or 0 for one per core")
    paddlec.Executor("cpu", num_threads=1)  # the bounds themselves are accepted
    paddlec.Executor("cpu", num_threads=4 * (os.cpu_count() or 1))


def _libgomp_spin_count(**env):
    """GOMP_SPINCOUNT as libgomp reports it (OMP_DISPLAY_ENV) in a child that imports paddlec with
    `env` and none of the spin settings of this process's environment."""
    spin = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "PADDLEC_SPIN_US")
    child_env = {k: v for k, v in os.environ.items() if k not in spin}
    child_env.update(env, OMP_DISPLAY_ENV="VERBOSE")
    child = subprocess.run([sys.executable, "-c", "import paddlec"], capture_output=True, text=True, env=child_env,
                           timeout=120)
    assert child.returncode == 0, child.stderr
    found = re.search(r"GOMP_SPINCOUNT = '(\d+)'", child.stderr)
    assert found, child.stderr
    return int(found.group(1))


def test_libgomp_spins_as_long_as_paddlecs_own_threads():
    # The count is PADDLEC_SPIN_US in this CPU's pauses, as the executables set it (a fixed 1,000
    # pauses had been 24 us on a Zen 3 CPU against the 200 us default).
    assert _libgomp_spin_count(PADDLEC_SPIN_US="0") == 0
    short, long = _libgomp_spin_count(PADDLEC_SPIN_US="25"), _libgomp_spin_count(PADDLEC_SPIN_US="1600")
    assert 0 < short < long
    default = _libgomp_spin_count()
    assert short < default < long  # 200 us, 8x from each
    assert _libgomp_spin_count(GOMP_SPINCOUNT="777") == 777  # the user's settings stay theirs
    assert _libgomp_spin_count(PADDLEC_SPIN_US="400", OMP_WAIT_POLICY="passive") == 0


def test_check_nan_inf_names_the_op_the_variable_and_the_element(fresh_programs):
    main, startup = fresh_programs
    x = layers.data("x", [3])
    y = ops.log(x=x)
    feed = {"x": np.array([[1.0, 0.0, 2.0]], "float32")}
    (got,) = paddlec.Executor().run(main, feed=feed, fetch_list=[y])  # off by default: -inf comes back
    assert np.isneginf(got[0, 1])
    for exe, kwargs in ((paddlec.Executor(check_nan_inf=True), {}), (paddlec.Executor(), {"check_nan_inf": True})):
        with pytest.raises(errors.ExecutionError) as info:
            exe.run(main, feed=feed, fetch_list=[y], **kwargs)
        err = info.value
        assert err.message == ("forward op 'log' produced a non-finite value: output 'Out' (variable '%s', "
                               "float32 [1, 3]) holds -inf at element 1 [0, 1]" % y.name)
        assert (err.op_type, err.block, err.op_index, err.var) == ("log", 0, 0, y.name)
        assert err.notes == ["its inputs are finite: the op itself overflowed or divided by zero (a learning rate "
                             "too high, log(0), x/0)"]
    # A NaN fed in is reported at the first op that reads it, with a note saying where it came from.
    with pytest.raises(errors.ExecutionError, match=r"holds nan at element 2 \[0, 2\]") as info:
        paddlec.Executor().run(main, feed={"x": np.array([[1, 2, np.nan]], "float32")}, fetch_list=[y],
                               check_nan_inf=True)
    assert info.value.notes[0].startswith("its input 'X' (variable 'x') already holds nan at element 2: it was fed")
