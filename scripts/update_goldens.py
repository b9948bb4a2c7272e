#!/usr/bin/python3
"""Regenerates the pass goldens: testdata/passes/<pass>/<case>.out.pbtxt from <case>.in.pbtxt.

Runs `paddlec compile <in> --passes=<pipeline> -o -` from the repository root, exactly as the golden
test does. Review `git diff testdata/passes` before committing: a golden is a claim about behaviour.
Usage: scripts/update_goldens.py [--paddlec build/paddlec] [case-name-filter ...]
"""
import argparse
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def pipeline_for(path, pass_dir):
    for line in path.read_text().splitlines():
        if line.startswith("# passes: "):
            return line[len("# passes: "):]
    return "validate" if pass_dir == "validate" else "validate," + pass_dir


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paddlec", default=str(ROOT / "build/paddlec"))
    ap.add_argument("filter", nargs="*")
    args = ap.parse_args()
    changed = 0
    for src in sorted((ROOT / "testdata/passes").glob("*/*.in.pbtxt")):
        if args.filter and not any(f in src.name for f in args.filter):
            continue
        rel = src.relative_to(ROOT)
        r = subprocess.run([args.paddlec, "compile", str(rel), "--passes", pipeline_for(src, src.parent.name), "-o", "-"],
                           cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{rel}: paddlec failed:\n{r.stderr}", file=sys.stderr)
            return 1
        out = src.with_name(src.name[:-len(".in.pbtxt")] + ".out.pbtxt")
        if not out.exists() or out.read_text() != r.stdout:
            out.write_text(r.stdout)
            changed += 1
            print(f"updated {out.relative_to(ROOT)}")
    print(f"{changed} golden(s) changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
