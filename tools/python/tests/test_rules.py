"""One behaviour, two front ends: the Python package gets its rules from the core (the feed rule,
attribute checks, typed pass options, file formats, op roles), so Python and the CLI accept and
refuse the same things with the same words, and Python's advice names Python arguments."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

import paddlec
from paddlec import _core, errors, layers, ops

# Not imported from conftest: tests/interop has a conftest module of the same name.
REPO = pathlib.Path(__file__).resolve().parents[3]
CLI = pathlib.Path(os.environ.get("PADDLEC_BUILD_DIR") or REPO / "build").resolve() / "paddlec"


def test_the_feed_rule_is_the_cores(tmp_path):
    assert _core.check_feed("img", "float32", [-1, 784], "float32", [2, 784]) == (None, None)
    to, warning = _core.check_feed("img", "float32", [-1, 784], "float64", [2, 784])
    assert to == "float32"
    assert warning == "input 'img' is declared float32: the fed float64 array is converted to it, which may lose " \
                      "precision"
    assert _core.check_feed("label", "int64", [-1, 1], "int32", [2, 1]) == ("int64", None)
    with pytest.raises(errors.InvalidArgumentError) as info:
        _core.check_feed("label", "int64", [-1, 1], "float32", [2, 1])
    python_message = str(info.value)
    # The CLI refuses the same array with the same words.
    np.save(tmp_path / "img.npy", np.zeros((2, 784), "float32"))
    np.save(tmp_path / "label.npy", np.zeros((2, 1), "float32"))
    cli = subprocess.run([str(CLI), "run", str(REPO / "configs/mlp.pbtxt"), "--feed", "img=%s" % (tmp_path / "img.npy"),
                          "--feed", "label=%s" % (tmp_path / "label.npy")], capture_output=True, text=True)
    assert cli.returncode == 1 and cli.stderr == "error: " + python_message + "\n"


def test_python_advice_names_python_arguments():
    x = layers.data("x", [3])
    y = layers.relu(x)
    with pytest.raises(errors.InvalidArgumentError) as info:
        paddlec.Executor().run(feed={"x": np.zeros(4, "float32")}, fetch_list=[y])
    assert "--" not in str(info.value)
    label = layers.data("label", [1], dtype="int64")
    out = ops.scale(x=ops.cast(x=label, in_dtype=3, out_dtype=5))
    with pytest.raises(errors.InvalidArgumentError) as info:
        paddlec.Executor().run(feed={"label": np.zeros(4, "int64")}, fetch_list=[out])
    assert info.value.notes == ["add a trailing dimension of 1: array.reshape((4, 1))"]
    with pytest.raises(errors.ExecutionError) as info:
        paddlec.Executor().run(scope=paddlec.Scope(), fetch_list=[y])
    assert "--feed" not in str(info.value) and "feed={'x': array}" in str(info.value)
    assert info.value.notes == ["feed it (feed={'x': array}), run the startup program first, or load it with "
                                "paddlec.io.load_params"]


def test_attribute_checks_are_the_cores():
    # The messages `paddlec compile` gives for the same values in a program file.
    assert _core.check_attr("pool2d", "pooling_type", "max") == "max"
    with pytest.raises(errors.ValidationError, match="^op 'pool2d': attribute 'pooling_type' value 'maxx' is not "
                                                    "allowed: expected one of 'max', 'avg'$"):
        _core.check_attr("pool2d", "pooling_type", "maxx")
    with pytest.raises(TypeError, match=r"^op 'scale': attribute 'scale' \(argument 's'\) \(FLOAT\) takes a float"):
        _core.check_attr("scale", "scale", "2", "s")
    assert _core.check_attr("transpose2", "axis", np.array([1, 0])) == [1, 0]
    assert _core.check_attr("relu", "no_such_attr", 5) == 5  # left for CheckOp's "did you mean"


def test_pass_options_are_typed_not_text(fresh_programs):
    main, startup = fresh_programs
    with paddlec.program_guard(main, startup):
        x = layers.data("x", [4])
        loss = layers.mean(layers.fc(x, 1, name="fc"), name="weird,{name}")
    # A loss whose name holds the old grammar's separators is fine: no pipeline text is built.
    main._apply_passes([("validate", {}), ("infer-shape", {}), ("backward", {"loss": loss.name}),
                        ("optimizer", {"type": "momentum", "lr": 0.1, "nesterov": True})])
    assert main.param_grads and main.global_block().ops[-1].type == "momentum"
    with pytest.raises(errors.InvalidArgumentError, match="option 'lr' of pass 'optimizer' takes a float, got 'fast'"):
        main._apply_passes([("optimizer", {"type": "sgd", "lr": "fast"})])
    with pytest.raises(errors.InvalidArgumentError, match="option 'no_grad' of pass 'backward' takes a list of str"):
        main._apply_passes([("backward", {"no_grad": "fc.w_0"})])
    # The text form (what `paddlec compile --passes` takes) still works for apply_passes.
    assert [t[0] for t in main.apply_passes("validate,infer-shape")] == ["validate", "infer-shape"]


def test_formats_and_op_roles_come_from_the_core(tmp_path):
    assert _core.format_from_path("m.pbtxt") == "text" and _core.format_from_path("m.pdmodel") == "binary"
    assert _core.format_from_path("m.json") == "json" and _core.format_from_path("m.weird") is None
    assert _core.is_bare_program_path("x/m.pdmodel") and not _core.is_bare_program_path("m.pb")
    assert _core.OP_ROLE["optimize"] == 2 and _core.OP_ROLE["backward"] == 1 and _core.OP_ROLE["loss"] == 0x100
    layers.data("x", [2])
    paddlec.default_main_program().save(str(tmp_path / "p.txt"))
    assert (tmp_path / "p.txt").read_text().startswith("blocks {")


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="this machine has an NVIDIA driver")
def test_a_machine_without_a_gpu_says_so():
    # The CUDA runtime reports "driver version is insufficient" when there is no driver at all.
    cli = subprocess.run([str(CLI), "run", str(REPO / "configs/mlp.pbtxt"), "--device=gpu", "--fill", "zeros"],
                         capture_output=True, text=True)
    assert cli.returncode == 1
    if "built without CUDA" in cli.stderr:
        assert cli.stderr.startswith("error: this paddlec was built without CUDA support\n")
        return
    assert cli.stderr == ("error: no GPU found: no NVIDIA driver is installed on this machine\n"
                          "note: there is no libcuda.so.1 and no /dev/nvidiactl\n"
                          "note: run with --device=cpu\n")
    with pytest.raises(errors.UnavailableError) as info:
        paddlec.Executor("gpu")
    assert info.value.notes == ["there is no libcuda.so.1 and no /dev/nvidiactl", "run on the CPU: Executor('cpu')"]
