"""Packaging: the wheel is platform-specific and carries the module the CMake build made, and
installing it into a fresh virtual environment gives a working ``import paddlec``."""

import os
import subprocess
import sys
import zipfile

import numpy

from conftest import BUILD, REPO


def test_the_wheel_installs_into_a_fresh_environment(tmp_path):
    env = dict(os.environ, PADDLEC_BUILD_DIR=str(BUILD))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
                    str(REPO / "tools" / "python"), "-w", str(tmp_path)], check=True, env=env, capture_output=True)
    (wheel,) = tmp_path.glob("paddlec-*.whl")
    assert "-none-any" not in wheel.name and "linux" in wheel.name  # platform-specific
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("paddlec/_core.") and n.endswith(".so") for n in names)
    assert "paddlec/v2/trainer.py" in names and "paddlec/ops.py" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True)
    # NumPy (the one dependency) from this environment, without the rest of its site-packages.
    deps = tmp_path / "deps"
    deps.mkdir()
    site = os.path.dirname(os.path.dirname(numpy.__file__))
    for name in ("numpy", "numpy.libs"):
        if os.path.exists(os.path.join(site, name)):
            (deps / name).symlink_to(os.path.join(site, name))
    check = ("import paddlec, numpy as np\n"
             "from paddlec import layers\n"
             "print(paddlec.__file__)\n"
             "y = layers.relu(layers.data('x', [2]))\n"
             "print(paddlec.Executor().run(feed={'x': -np.ones((1, 2))}, fetch_list=[y])[0].tolist())\n")
    out = subprocess.run([str(python), "-c", check], cwd=tmp_path, check=True, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(deps))).stdout.splitlines()
    assert out[0].startswith(str(venv)) and out[1] == "[[0.0, 0.0]]"
