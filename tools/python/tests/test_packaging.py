"""Packaging: scripts/build_wheel.sh gives a platform wheel, repaired by auditwheel, that carries the
module the CMake build made, the libraries it loads and the `paddlec` command. Installed into a fresh
virtual environment with LD_LIBRARY_PATH unset it imports and runs, and every library its ELF files
load is inside the installation or on the manylinux allow-list (checked with ldd)."""

import json
import os
import pathlib
import re
import subprocess
import sys
import zipfile

import numpy
import pytest

from conftest import BUILD, REPO

auditwheel = pytest.importorskip("auditwheel")

# CUDA's libraries are deliberately left out of the wheel (scripts/build_wheel.sh); the GPU backend
# finds them on a machine with CUDA, and is never loaded by a CPU run.
CUDA_LIBS = re.compile(r"^lib(cudart|cublas|cublasLt|cudnn|cuda)\.so")


def _allow_list(tag):
    policies = json.loads((pathlib.Path(auditwheel.__file__).parent / "policy" / "manylinux-policy.json").read_text())
    name = tag[:-len("_x86_64")] if tag.endswith("_x86_64") else tag
    return {lib for p in policies if p["name"] == name for lib in p["lib_whitelist"]}


def test_the_repaired_wheel_installs_and_runs_anywhere(tmp_path):
    env = dict(os.environ, PADDLEC_BUILD_DIR=str(BUILD), PYTHON=sys.executable)
    subprocess.run([str(REPO / "scripts" / "build_wheel.sh"), str(tmp_path / "dist")], check=True, env=env,
                   capture_output=True, cwd=REPO)
    (wheel,) = (tmp_path / "dist").glob("paddlec-*.whl")
    tag = re.search(r"(manylinux_\d+_\d+_x86_64)", wheel.name)
    assert tag, wheel.name  # a manylinux wheel, not linux_x86_64
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("paddlec/_core.") and n.endswith(".so") for n in names)
    assert "paddlec/_paddlec_cli" in names and "paddlec/v2/trainer.py" in names and "paddlec/ops.py" in names
    bundled = [n for n in names if n.startswith("paddlec.libs/")]
    assert any("libdnnl" in n for n in bundled) and any("libprotobuf" in n for n in bundled)
    assert not any("libpaddlec" in n for n in bundled)  # one core, the package's own (two would split the registries)
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "paddlec = paddlec._cli:main" in entry_points

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True)
    # The dependencies (NumPy, tqdm) from this environment, without the rest of its site-packages.
    deps = tmp_path / "deps"
    deps.mkdir()
    site = pathlib.Path(numpy.__file__).parents[1]
    for name in ("numpy", "numpy.libs", "tqdm"):
        if (site / name).exists():
            (deps / name).symlink_to(site / name)
    clean = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    clean["PYTHONPATH"] = str(deps)
    check = ("import paddlec, numpy as np\n"
             "from paddlec import layers\n"
             "print(paddlec.__file__)\n"
             "y = layers.relu(layers.data('x', [2]))\n"
             "print(paddlec.Executor().run(feed={'x': -np.ones((1, 2), 'float32')}, fetch_list=[y])[0].tolist())\n")
    out = subprocess.run([str(python), "-c", check], cwd=tmp_path, check=True, capture_output=True, text=True,
                         env=clean).stdout.splitlines()
    assert out[0].startswith(str(venv)) and out[1] == "[[0.0, 0.0]]"

    # The console script runs the packaged CLI.
    cli = venv / "bin" / "paddlec"
    assert subprocess.run([str(cli), "--version"], capture_output=True, text=True, env=clean,
                          check=True).stdout.startswith("paddlec ")
    shapes = subprocess.run([str(cli), "compile", str(REPO / "configs/mlp.pbtxt"), "--print-shapes"],
                            capture_output=True, text=True, env=clean, check=True).stdout
    assert "fc1" in shapes or "img" in shapes

    # Every library the installed ELF files load comes from the installation or the allow-list.
    allowed = _allow_list(tag.group(1))
    assert "libc.so.6" in allowed
    installed = next(venv.glob("lib/python*/site-packages"))
    elves = [p for p in installed.rglob("*") if p.is_file() and p.read_bytes()[:4] == b"\x7fELF"]
    assert len(elves) >= 5
    for elf in elves:
        ldd = subprocess.run(["ldd", str(elf)], capture_output=True, text=True, env=clean).stdout
        for line in ldd.splitlines():
            m = re.match(r"\s*(\S+) => (\S+|not found)", line)
            if not m:
                continue
            soname, path = m.groups()
            if CUDA_LIBS.match(soname) and elf.name.startswith("libpaddlec_cuda"):
                continue
            assert path != "not found", "%s needs %s, which is not found" % (elf, soname)
            assert path.startswith(str(installed)) or soname in allowed, \
                "%s loads %s from %s, outside the wheel and not on the %s allow-list" % (elf.name, soname, path,
                                                                                         tag.group(1))
