"""Fixtures of the interop suite: a Python interpreter with the real PaddlePaddle wheel, and the
models it exports, generated at test time by paddle_side.py and cached under the build directory
(keyed by Paddle's version and the generator's own hash, so an edit to the generator regenerates).

PaddlePaddle is a test-only dependency: scripts/test.sh installs the CPU wheel into .venv. Without
it the suite is skipped, unless PADDLEC_REQUIRE_PADDLE=1 (set by scripts/test.sh), where a missing
wheel fails. PADDLEC_PADDLE_PYTHON picks another interpreter, e.g. a scratch venv with an older
Paddle 3.x (scripts/interop_versions.sh runs the suite that way for every 3.x release).
"""

import hashlib
import os
import pathlib
import subprocess
import sys

import pytest

from interop_report import RESULTS, markdown

HERE = pathlib.Path(__file__).resolve().parent
SIDE = HERE / "paddle_side.py"
REPO = HERE.parents[3]
BUILD = pathlib.Path(os.environ.get("PADDLEC_BUILD_DIR") or REPO / "build").resolve()
REPORT = BUILD / "interop-report.md"


def paddle_python():
    return os.environ.get("PADDLEC_PADDLE_PYTHON") or sys.executable


def paddle_version(python):
    probe = "import importlib.metadata as m; print(m.version('paddlepaddle'))"
    r = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


@pytest.fixture(scope="session")
def paddle():
    """(interpreter, version, cache directory) of the PaddlePaddle the suite compares against."""
    python = paddle_python()
    version = paddle_version(python)
    if version is None:
        message = "PaddlePaddle is not installed for %s (scripts/test.sh installs it)" % python
        if os.environ.get("PADDLEC_REQUIRE_PADDLE") == "1":
            pytest.fail(message)
        pytest.skip(message)
    digest = hashlib.sha256(SIDE.read_bytes()).hexdigest()[:12]
    cache = BUILD / "interop-cache" / ("paddle-%s-%s" % (version, digest))
    cache.mkdir(parents=True, exist_ok=True)
    return python, version, cache


def run_side(paddle, *args):
    python, _, _ = paddle
    env = dict(os.environ, GLOG_minloglevel="2", OMP_NUM_THREADS="2")
    r = subprocess.run([python, str(SIDE)] + [str(a) for a in args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise AssertionError("paddle_side.py %s failed:\n%s" % (" ".join(map(str, args)), r.stderr[-4000:]))
    return r


@pytest.fixture(scope="session")
def exported(paddle):
    """Every model in both formats: {format: directory}, each holding <model>/model.* + case.npz."""
    _, _, cache = paddle
    out = {}
    for fmt in ("pir", "legacy"):
        run_side(paddle, "export", "--format", fmt, "--out", cache / fmt)
        out[fmt] = cache / fmt
    return out


@pytest.fixture(scope="session")
def trained(paddle):
    """Paddle's own training programs in both formats: {format: directory holding mlp_train/ and
    cnn_train/} (paddle_side.py train)."""
    _, _, cache = paddle
    out = {}
    for fmt in ("pir", "legacy"):
        run_side(paddle, "train", "--format", fmt, "--out", cache / ("train-" + fmt))
        out[fmt] = cache / ("train-" + fmt)
    return out


def pytest_sessionfinish(session, exitstatus):
    if not RESULTS:
        return
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(markdown())


def pytest_terminal_summary(terminalreporter):
    if RESULTS and REPORT.exists():
        terminalreporter.write_sep("-", "interop: model x format x max diff (%s)" % REPORT)
        terminalreporter.write(REPORT.read_text())
