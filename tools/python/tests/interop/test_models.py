"""Every model of paddle.vision.models, Transformer encoder/decoder layers and 2-layer bidirectional
LSTM/GRU/SimpleRNN, built and saved by the real PaddlePaddle in both formats (PIR model.json and a
legacy model.pdmodel, each with its model.pdiparams), run by `paddlec run` on the same input: the
outputs match Paddle's within 1e-4 x max |out| (interop_report.tolerance). The table model x format x max diff is
written to build/interop-report.md and printed at the end of the run."""

import subprocess

import numpy as np
import pytest

import paddlec

from interop_report import max_diff, record, tolerance

# Models whose legacy program needs an op paddlec does not register yet, as {model: [(op, engineer)]}.
# They fail loudly (strict xfail) once the op lands; the op's engineer removes the mark.
NEEDS = {}
MODELS = ["mlp", "lenet", "alexnet", "vgg11", "resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2",
          "densenet121", "googlenet", "inception_v3", "squeezenet1_0", "squeezenet1_1", "mobilenet_v1",
          "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "shufflenet_v2_x0_25",
          "shufflenet_v2_swish", "transformer_encoder", "transformer_decoder", "lstm", "gru", "simple_rnn"]


def cases():
    for model in MODELS:
        for fmt in ("pir", "legacy"):
            marks = []
            if model in NEEDS:
                reason = "needs op " + ", ".join("%s (%s)" % n for n in NEEDS[model])
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            yield pytest.param(model, fmt, marks=marks, id="%s-%s" % (model, fmt))


@pytest.mark.parametrize("model,fmt", list(cases()))
def test_model_matches_paddle(exported, cli, model, fmt, tmp_path):
    d = exported[fmt] / model
    if (d / "unavailable.txt").exists():
        record(model, fmt, None, None, "not written by Paddle")
        pytest.skip((d / "unavailable.txt").read_text().strip())
    program = d / ("model.json" if fmt == "pir" else "model.pdmodel")
    case = np.load(d / "case.npz")
    feeds = []
    for name in sorted(k for k in case.files if k.startswith("x")):
        np.save(tmp_path / (name + ".npy"), case[name])
        feeds += ["--feed", "%s=%s" % (name, tmp_path / (name + ".npy"))]
    out = tmp_path / "out"
    r = subprocess.run([cli, "run", str(program), "--params", str(d / "model.pdiparams"), "--out", str(out)] + feeds,
                       capture_output=True, text=True)
    if r.returncode != 0:
        record(model, fmt, None, None, "fails")
    assert r.returncode == 0, r.stderr
    fetches = paddlec.Program.load(program).signature()[1]
    want = [case[k] for k in sorted((k for k in case.files if k.startswith("out")), key=lambda k: int(k[3:]))]
    assert len(fetches) == len(want)
    worst, tol = 0.0, 0.0
    for name, ref in zip(fetches, want):
        got = np.load(out / (name.replace("/", "_") + ".npy"))
        assert got.shape == ref.shape, (name, got.shape, ref.shape)
        diff, bound = max_diff(got, ref), tolerance(ref)
        worst, tol = max(worst, diff), max(tol, bound)
        assert diff <= bound, "%s: max abs diff %g > %g" % (name, diff, bound)
    record(model, fmt, worst, tol, "ok")
