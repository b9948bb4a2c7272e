#!/usr/bin/python3
"""Regenerates the README's PaddlePaddle op table, or checks that it is current.

    scripts/gen_paddle_ops.py           # rewrite the table between the paddle-ops markers of README.md
    scripts/gen_paddle_ops.py --check   # exit 1 when it differs (tools/python/tests/test_readme.py runs this)

The table is `paddlec dump-opprotos --format=paddle-md`: every PIR op the translator maps
(src/ir/pir/pir_op_table.cc), the legacy op it becomes, and whether the registry has that op.
"""
import argparse
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- paddle-ops:begin (scripts/gen_paddle_ops.py) -->\n", "<!-- paddle-ops:end -->\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paddlec", default=str(ROOT / os.environ.get("PADDLEC_BUILD_DIR", "build") / "paddlec"))
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args()
    table = subprocess.run([args.paddlec, "dump-opprotos", "--format=paddle-md"], check=True, capture_output=True,
                           text=True).stdout
    readme = ROOT / "README.md"
    text = readme.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    if args.check:
        if text[start:end] != table:
            print("gen_paddle_ops: the PaddlePaddle op table of README.md is stale: regenerate it with "
                  "`scripts/gen_paddle_ops.py` and commit the result")
            return 1
        return 0
    readme.write_text(text[:start] + table + text[end:])
    print("wrote the PaddlePaddle op table of README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
