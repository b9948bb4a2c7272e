"""What paddlec writes, PaddlePaddle reads (issue 11, item 5): a .pdmodel written by `paddlec
compile` (forward, --train, --inference) loads with paddle.static.load_inference_model (and the
--inference one with paddle.inference's predictor), finds its feeds and fetches, and gives paddlec's
outputs on the same parameters; a training program's losses agree step by step. And a Paddle 3 PIR
model converted by paddlec to a .pdmodel runs in Paddle, both ways, with Paddle's own outputs."""

import subprocess

import numpy as np
import pytest

from conftest import REPO, run_side
from interop_report import max_diff, tolerance

CONFIGS = {"lenet": (4, 1, 28, 28), "mlp": (4, 784)}
MODES = {"forward": [], "train": ["--train", "--optimizer", "adam", "--lr", "0.01"], "inference": ["--inference"]}


def paddlec(cli, *args):
    r = subprocess.run([cli] + [str(a) for a in args], capture_output=True, text=True)
    assert r.returncode == 0, "paddlec %s:\n%s" % (" ".join(map(str, args)), r.stderr)
    return r


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("config", list(CONFIGS))
def test_paddle_runs_what_paddlec_wrote(paddle, cli, config, mode, tmp_path):
    src = REPO / "configs" / (config + ".pbtxt")
    model, compiled = tmp_path / "model.pdmodel", tmp_path / "model.pb"
    paddlec(cli, "compile", src, "-o", model, *MODES[mode])
    paddlec(cli, "compile", src, "-o", compiled, *MODES[mode])
    text = paddlec(cli, "compile", model, "-o", "-", "--format", "text", "--emit", "program").stdout
    assert 'type: "fused_' not in text  # --inference writes a .pdmodel unfused: Paddle has no fused_conv2d_bn_act
    rng = np.random.RandomState(5)
    case = {"img": rng.uniform(0, 1, CONFIGS[config]).astype("float32"),
            "label": rng.randint(0, 10, (CONFIGS[config][0], 1)).astype("int64")}
    np.savez(tmp_path / "case.npz", **case)
    feeds = []
    for k, v in case.items():
        np.save(tmp_path / (k + ".npy"), v)
        feeds += ["--feed", "%s=%s" % (k, tmp_path / (k + ".npy"))]
    # The initial parameters, from the compiled program's startup program, before any step.
    params = tmp_path / "model.pdiparams"
    paddlec(cli, "run", compiled, "--op-range", "0:0", "--fetch", "label", "--save-params", params, *feeds)
    steps = 2 if mode == "train" else 1
    out = tmp_path / "out"
    paddlec(cli, "run", model, "--params", params, "--steps", steps, "--each-step", "--out", out, *feeds)

    side = tmp_path / "paddle.npz"
    # An inference program also goes through paddle.inference's predictor (which runs every program in
    # inference mode: batch_norm on its running statistics, so not the forward or training programs).
    predictor = ["--predictor"] if mode == "inference" else []
    run_side(paddle, "run-legacy", "--model", model, "--params", params, "--feeds", tmp_path / "case.npz", "--out",
             side, "--steps", steps, *predictor)
    got = np.load(side)
    assert sorted(got["feeds"]) == ["img", "label"]
    fetches = list(got["fetches"])
    assert fetches
    for i, name in enumerate(fetches):
        mine = np.load(out / (name.replace("/", "_") + ".npy"))
        for s in range(steps):
            key = "s%d_%d" % (s, i)
            assert key in got.files, "Paddle computed no value for fetch %s at step %d" % (name, s)
            ref = got[key]
            assert mine[s].shape == ref.shape, (name, s)
            diff, bound = max_diff(mine[s], ref), tolerance(ref)
            assert diff <= bound, "%s step %d: max abs diff %g > %g" % (name, s, diff, bound)
    if predictor:
        assert list(got["predictor_outputs"]) == fetches
        for i, name in enumerate(fetches):
            mine, ref = np.load(out / (name.replace("/", "_") + ".npy"))[0], got["p_%d" % i]
            assert mine.shape == ref.shape and max_diff(mine, ref) <= tolerance(ref), name


# One model per op family (all 24 pass; these keep the suite short): convolutions with batch_norm,
# depthwise convolutions with hard_swish, channel shuffles, concatenated branches with several
# outputs, attention (Paddle cannot write these two as legacy programs itself), and every rnn mode
# (shape tensors, slice, fill_constant with ShapeTensorList, rnn's non-persistable dropout state).
CONVERTED = ["resnet18", "mobilenet_v3_small", "shufflenet_v2_swish", "googlenet", "transformer_encoder",
             "transformer_decoder", "lstm", "gru", "simple_rnn"]


@pytest.mark.parametrize("model", CONVERTED)
def test_paddle_runs_a_pir_model_paddlec_converted(paddle, exported, cli, model, tmp_path):
    d = exported["pir"] / model
    converted = tmp_path / "model.pdmodel"
    paddlec(cli, "compile", d / "model.json", "-o", converted)
    case = np.load(d / "case.npz")
    side = tmp_path / "paddle.npz"
    run_side(paddle, "run-legacy", "--model", converted, "--params", d / "model.pdiparams", "--feeds", d / "case.npz",
             "--out", side, "--predictor")
    got = np.load(side)
    want = [case[k] for k in sorted((k for k in case.files if k.startswith("out")), key=lambda k: int(k[3:]))]
    assert len(got["fetches"]) == len(want) == len(got["predictor_outputs"])
    for i, ref in enumerate(want):
        assert max_diff(got["s0_%d" % i], ref) <= tolerance(ref)
        assert max_diff(got["p_%d" % i], ref) <= tolerance(ref)
