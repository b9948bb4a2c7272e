"""Pictures: a program drawn with Graphviz from `paddlec compile --emit=dot`, and training curves
drawn by `python -m paddlec.plot` from `paddlec train --metrics`. Each image is written, then read
back and checked for size and content."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

# Not imported from conftest: tests/interop has a conftest module of the same name.
REPO = pathlib.Path(__file__).resolve().parents[3]
CLI = pathlib.Path(os.environ.get("PADDLEC_BUILD_DIR") or REPO / "build").resolve() / "paddlec"

matplotlib = pytest.importorskip("matplotlib")
from matplotlib import image as mpimg  # noqa: E402


def _colors(png):
    pixels = mpimg.imread(str(png))[..., :3]
    return pixels, {tuple(np.round(p * 255).astype(int)) for p in pixels.reshape(-1, 3)[::7]}


def test_a_program_graph_renders_with_graphviz(tmp_path):
    dot = shutil.which("dot")
    assert dot, "Graphviz's dot is missing (scripts/setup.sh installs graphviz)"
    graph = tmp_path / "lenet.dot"
    subprocess.run([str(CLI), "compile", str(REPO / "configs/lenet.pbtxt"), "--emit=dot", "-o", str(graph)], check=True)
    text = graph.read_text()
    assert text.count("shape=box, style=\"rounded,filled\"") >= 8  # conv, pool, mul, ... ops
    png = tmp_path / "lenet.png"
    subprocess.run([dot, "-Tpng", str(graph), "-o", str(png)], check=True)
    pixels, colors = _colors(png)
    height, width = pixels.shape[:2]
    assert height > 400 and width > 150  # a tall chain of ops, not an empty canvas
    # The op fill (light blue), parameter fill (orange) and input fill (green) are all drawn.
    assert {(0xd5, 0xe5, 0xf7), (0xfd, 0xe3, 0xb5), (0xcd, 0xeb, 0xc5)} <= colors


def test_training_curves_plot_from_metrics(tmp_path):
    metrics = tmp_path / "m.jsonl"
    subprocess.run([str(CLI), "-q", "train", str(REPO / "configs/mlp.pbtxt"), "--limit-train", "1280",
                    "--limit-test", "200", "--epochs", "2", "--eval-every", "5", "--metrics", str(metrics)],
                   check=True, capture_output=True)
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert len(records) >= 6 and records[-1]["epoch_end"]
    png = tmp_path / "curves.png"
    proc = subprocess.run([sys.executable, "-m", "paddlec.plot", str(metrics), "-o", str(png), "--title", "mlp"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    pixels, colors = _colors(png)
    assert pixels.shape[:2] == (400, 1000)
    # matplotlib's first line color (C0, #1f77b4) is drawn in both panels, on white.
    blue = np.all(np.abs(pixels - np.array([0x1f, 0x77, 0xb4]) / 255) < 0.08, axis=-1)
    assert blue[:, :500].sum() > 200 and blue[:, 500:].sum() > 200
    assert (pixels.mean(axis=-1) > 0.95).mean() > 0.5


def test_plot_reports_bad_metrics_files(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 1}\n')
    proc = subprocess.run([sys.executable, "-m", "paddlec.plot", str(bad), "-o", str(tmp_path / "x.png")],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr == "error: %s:1: the record lacks train_loss, test_loss, test_accuracy (is it a paddlec " \
                          "train --metrics file?)\n" % bad
