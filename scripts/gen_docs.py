#!/usr/bin/python3
"""Regenerates the generated parts of docs/ from the build, or checks that they are current.

    scripts/gen_docs.py            # docs/ops.md, docs/passes.md and docs/paddle_ops.md from build/paddlec
    scripts/gen_docs.py --images   # also docs/images/ (a program graph and training curves)
    scripts/gen_docs.py --check    # exit 1, naming the stale files, when they differ (a test runs this)

docs/ops.md is `paddlec dump-opprotos --format=md` (the operator reference, from the registry),
docs/passes.md `paddlec list-passes --format=md` (from passes.def) and docs/paddle_ops.md
`paddlec dump-opprotos --format=paddle-md` (PaddlePaddle's ops by legacy and PIR name, from the
registry and the PIR translation table; the README links it). The images need Graphviz's `dot`
and the .venv's matplotlib (scripts/setup.sh installs both).
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMAND = "scripts/gen_docs.py"


def generated(paddlec):
    """{path relative to the root: text} for every generated document."""
    run = lambda *args: subprocess.run([paddlec, *args], check=True, capture_output=True, text=True).stdout
    return {"docs/ops.md": run("dump-opprotos", "--format=md"), "docs/passes.md": run("list-passes", "--format=md"),
            "docs/paddle_ops.md": run("dump-opprotos", "--format=paddle-md")}


def images(paddlec, python):
    out = ROOT / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    dot = shutil.which("dot")
    if dot is None:
        sys.exit("gen_docs: Graphviz's dot is not installed (scripts/setup.sh installs graphviz)")
    with tempfile.TemporaryDirectory() as tmp:
        graph = os.path.join(tmp, "lenet.dot")
        subprocess.run([paddlec, "compile", str(ROOT / "configs/lenet.pbtxt"), "--emit=dot", "-o", graph], check=True)
        for fmt in ("svg", "png"):
            subprocess.run([dot, "-T" + fmt, "-Gdpi=72", graph, "-o", str(out / ("lenet." + fmt))], check=True)
        # Curves of a short, seeded CPU run (the same figures every time; the full 5-epoch run takes minutes).
        metrics = os.path.join(tmp, "mlp.jsonl")
        subprocess.run([paddlec, "-q", "train", str(ROOT / "configs/mlp.pbtxt"), "--epochs=3", "--limit-train=12000",
                        "--limit-test=2000", "--eval-every=50", "--seed=1", "--metrics", metrics],
                       check=True, stdout=subprocess.DEVNULL)
        # The .venv's paddlec (scripts/setup.sh installs the package there).
        subprocess.run([python, "-m", "paddlec.plot", metrics, "-o", str(out / "mlp_training.png"),
                        "--title", "configs/mlp.pbtxt on Fashion-MNIST (12,000 samples, Adam 0.001)"], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paddlec", default=str(ROOT / os.environ.get("PADDLEC_BUILD_DIR", "build") / "paddlec"),
                    help="the paddlec binary (default: build/paddlec)")
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    ap.add_argument("--images", action="store_true", help="also regenerate docs/images/")
    ap.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"), help="Python with matplotlib")
    args = ap.parse_args()
    docs = generated(args.paddlec)
    if args.check:
        stale = [p for p, text in docs.items() if not (ROOT / p).is_file() or (ROOT / p).read_text() != text]
        if stale:
            print("gen_docs: %s %s stale: regenerate with `%s` and commit the result"
                  % (", ".join(stale), "is" if len(stale) == 1 else "are", COMMAND))
            return 1
        print("gen_docs: %s are current" % ", ".join(docs))
        return 0
    for path, text in docs.items():
        (ROOT / path).write_text(text)
        print("wrote", path)
    if args.images:
        images(args.paddlec, args.python)
        print("wrote docs/images/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
