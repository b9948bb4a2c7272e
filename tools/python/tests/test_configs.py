"""configs/mlp.py and configs/lenet.py emit the networks of the hand-written configs: after
``paddlec compile``, the same ops with the same slots and attributes, the same variables with the
same shapes, dtypes and roles, and the same initializers."""

import subprocess
import sys

import pytest

import paddlec


def structure(program):
    gb = program.global_block()
    ops = [(op.type, sorted((s, tuple(op.input(s))) for s in op.input_names),
            sorted((s, tuple(op.output(s))) for s in op.output_names), sorted(op.all_attrs().items()))
           for op in gb.ops]
    # The Python layers also mark parameters is_parameter and data inputs stop_gradient (as
    # PaddlePaddle's do); neither changes what the network computes or trains.
    variables = {v.name: (v.dtype, v.shape, v.persistable, v.stop_gradient if v.persistable else None)
                 for v in gb.vars.values()}
    return ops, variables


@pytest.mark.parametrize("config", ["mlp", "lenet"])
def test_python_config_emits_the_hand_written_network(config, tmp_path, cli, repo):
    emitted = tmp_path / (config + ".pbtxt")
    subprocess.run([sys.executable, str(repo / "configs" / (config + ".py")), "-o", str(emitted)], check=True)
    compiled = {}
    for name, source in (("python", emitted), ("written", repo / "configs" / (config + ".pbtxt"))):
        out = tmp_path / (name + ".json")
        subprocess.run([cli, "compile", str(source), "-o", str(out)], check=True, capture_output=True)
        compiled[name] = paddlec.Program.load(out)
    python, written = compiled["python"], compiled["written"]
    assert structure(python) == structure(written)
    assert list(python.global_block().vars) == list(written.global_block().vars)  # declaration order too
    startup_ops = [[(op.type, op.output_arg_names, sorted(op.all_attrs().items())) for op in p.startup_program.global_block().ops]
                   for p in (python, written)]
    assert startup_ops[0] == startup_ops[1]
    assert python.signature() == written.signature()


def test_config_prints_text_without_output_file(repo):
    out = subprocess.run([sys.executable, str(repo / "configs" / "mlp.py")], check=True, capture_output=True,
                         text=True).stdout
    program = paddlec.Program.parse(out.encode(), "text")
    assert [op.type for op in program.global_block().ops][-2:] == ["softmax_with_cross_entropy", "mean"]
