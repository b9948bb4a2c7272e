"""The README's Python section runs as written: its shell and Python blocks, in order, from a
directory laid out like the repository root, with .venv's python3 first on PATH."""

import os
import re
import subprocess
import sys

from conftest import BUILD, REPO


def python_section():
    text = (REPO / "README.md").read_text()
    start = text.index("\n## Python\n")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```(sh|python)\n(.*?)```", text[start:end], re.S)


def test_readme_python_examples_run_as_written(tmp_path):
    blocks = python_section()
    assert [kind for kind, _ in blocks].count("python") >= 5 and any(kind == "sh" for kind, _ in blocks)
    for name in ("configs", "tools"):
        (tmp_path / name).symlink_to(REPO / name)
    (tmp_path / "build").symlink_to(BUILD)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    for i, (kind, code) in enumerate(blocks):
        if kind == "sh":
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=tmp_path, env=env,
                                  capture_output=True, text=True)
        else:
            script = tmp_path / ("block%d.py" % i)
            script.write_text(code)
            proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                                  text=True)
        assert proc.returncode == 0, "README block %d (%s) failed:\n%s\n%s" % (i, kind, code, proc.stderr[-3000:])
        if "pooling_type=\"maxx\"" in code:
            assert "attribute 'pooling_type' value 'maxx' is not allowed" in proc.stdout
            assert "layer square_error_cost" in proc.stdout and "op 1 (elementwise_sub)" in proc.stdout
            assert "X = [-1, 4]" in proc.stdout and "Y = [-1, 5]" in proc.stdout
    assert (tmp_path / "mlp_train.pb").exists() and (tmp_path / "mlp.pdiparams").exists()


def test_the_package_docstring_example_runs(tmp_path):
    import paddlec
    doc = paddlec.__doc__
    code = doc[doc.index("::\n") + 3:]
    script = tmp_path / "example.py"
    script.write_text("\n".join(line[4:] for line in code.splitlines()) + "\nprint(float(value))\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert float(proc.stdout.split()[-1]) > 0
