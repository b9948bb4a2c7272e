"""A data-parallel program written by PaddlePaddle's fleet (issue 16): Paddle's GradAllReduce
transpiler rewrites an SGD linear regression for 2 ranks (all_reduce after each gradient, the loss
gradient scaled by 1/2, broadcast of the parameters in the startup program). paddlec validates both
programs and, run as 2 ranks of `mpirun` fed the same batch, reproduces the losses Paddle computes in
one process: with the allreduce skipped each rank would take half steps, and the second and third
losses would differ."""

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import run_side


@pytest.fixture(scope="session")
def fleet(paddle):
    _, _, cache = paddle
    run_side(paddle, "fleet", "--out", cache / "fleet")
    return cache / "fleet" / "fleet_fc"


def test_paddle_fleet_program_validates(fleet, cli):
    ops = json.loads((fleet / "meta.json").read_text())
    assert "all_reduce" in ops["main_ops"] and "c_sync_comm_stream" in ops["main_ops"]
    assert "broadcast" in ops["startup_ops"]
    for prog in ("main.pdmodel", "startup.pdmodel"):
        r = subprocess.run([cli, "compile", str(fleet / prog), "--passes=validate,infer-shape"], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI's mpirun is not installed (scripts/setup.sh)")
def test_paddle_fleet_program_on_two_ranks_gives_paddles_losses(fleet, cli, tmp_path):
    batch = np.load(fleet / "batch.npz")
    feeds = []
    for name in ("x", "y"):
        np.save(tmp_path / (name + ".npy"), batch[name])
        feeds += ["--feed", "%s=%s" % (name, tmp_path / (name + ".npy"))]
    root = ["--allow-run-as-root"] if os.getuid() == 0 else []
    outs = []
    cmd = ["mpirun", "-np", "2", "--oversubscribe"] + root + [
        "sh", "-c", 'exec "$0" "$@" --out "%s/rank$OMPI_COMM_WORLD_RANK"' % tmp_path,
        cli, "run", str(fleet / "main.pdmodel"), "--params", str(fleet / "state.pdiparams"), "--steps", "3",
        "--each-step"] + feeds
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    want = np.load(fleet / "losses.npy")
    for rank in (0, 1):
        (loss_file,) = list((tmp_path / ("rank%d" % rank)).iterdir())
        got = np.load(loss_file).astype("float64").reshape(-1)
        outs.append(got)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(outs[0], outs[1])
