"""PaddlePaddle's own training programs run in paddlec (issue 11, item 4): an MLP and a small CNN
(conv2d, training-mode batch_norm, pooling) that Paddle builds with Adam.minimize, saved in both
formats with their startup programs. From the same initial state (Paddle's .pdiparams of every
persistable), `paddlec run --each-step` gives Paddle's losses for 3 steps on one batch; `paddlec
train` trains them with the programs' own backward and optimizer ops."""

import subprocess

import numpy as np
import pytest

FORMATS = ["legacy", "pir"]


def program(d, fmt):
    ext = ".pdmodel" if fmt == "legacy" else ".json"
    return d / ("main" + ext), d / ("startup" + ext)


@pytest.mark.parametrize("model", ["mlp_train", "cnn_train"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_paddle_training_program_gives_paddles_losses(trained, cli, fmt, model, tmp_path):
    d = trained[fmt] / model
    main, _ = program(d, fmt)
    batch = np.load(d / "batch.npz")
    feeds = []
    for name in ("x", "y"):
        np.save(tmp_path / (name + ".npy"), batch[name])
        feeds += ["--feed", "%s=%s" % (name, tmp_path / (name + ".npy"))]
    out = tmp_path / "out"
    r = subprocess.run([cli, "run", str(main), "--params", str(d / "state.pdiparams"), "--steps", "3", "--each-step",
                        "--out", str(out)] + feeds, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (loss_file,) = list(out.iterdir())  # the program's one output: the loss
    got = np.load(loss_file).astype("float64")
    want = np.load(d / "losses.npy")
    assert got.shape == (3,)
    # Paddle's losses within a few float32 roundings (the GEMMs sum in another order): a wrong
    # gradient, update or learning rate moves the second and third losses by far more.
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)


@pytest.mark.parametrize("model", ["mlp_train", "cnn_train"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_paddlec_train_uses_the_programs_own_optimizer(trained, cli, fmt, model):
    d = trained[fmt] / model
    main, startup = program(d, fmt)
    args = [cli, "train", str(main), "--limit-train", "256", "--limit-test", "128", "--epochs", "2", "--batch-size",
            "32", "--no-progress"]
    r = subprocess.run(args + ["--startup", str(startup)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    losses = [float(line.split("train loss ")[1].split(",")[0]) for line in r.stdout.splitlines()
              if "train loss" in line]
    assert len(losses) == 2 and losses[1] < losses[0], r.stdout
    # Without its startup program, the learning rate and Adam's state would have no values.
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.startswith("error: the program holds its own optimizer ops but no startup program"), r.stderr
