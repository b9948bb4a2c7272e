#!/usr/bin/python3
"""Prints a pass golden case's listing before and after its last pass, and the difference.

A case, testdata/passes/<pass>/<case>.in.pbtxt, is compiled with the pipeline on its "# passes:" line
(default "validate,<pass>"), as src/passes/pass_golden_test.cc does; the listing is what
`paddlec compile --print-ir-before/--print-ir-after` print (ir::FormatListing). Copy the lines the
pass is about into the case as `# CHECK:` directives, or write `# CHECK-UNCHANGED` when the diff is
empty. Then run `build/passes_test -tc='pass goldens' -sc='*<case>*'`.

Usage: scripts/pass_listing.py [--paddlec build/paddlec] [--diff] CASE.in.pbtxt ...
"""
import argparse
import difflib
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADER = re.compile(r"^# ----- IR (before|after) (\S+)( \(unchanged\))? -----$")


def pipeline_for(path):
    for line in path.read_text().splitlines():
        if line.startswith("# passes: "):
            return line[len("# passes: "):]
    return "validate" if path.parent.name == "validate" else "validate," + path.parent.name


def last_pass(pipeline):
    # "a,b{k=v,k2=v2},c{x=1}" -> "c": the name after the last top-level comma.
    depth, start = 0, 0
    for i, ch in enumerate(pipeline):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            start = i + 1
    return pipeline[start:].split("{")[0].strip()


def listings(paddlec, case, pipeline, name):
    """The last 'before' and 'after' listings of pass `name`, and whether the pass reported a change."""
    r = subprocess.run([paddlec, "compile", str(case), "--passes", pipeline, f"--print-ir-before={name}",
                        f"--print-ir-after={name}"], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{case}: paddlec compile failed:\n{r.stderr}")
    sections, current = {}, None
    for line in r.stderr.splitlines(keepends=True):
        m = HEADER.match(line.rstrip("\n"))
        if m:
            current = m.group(1)
            sections[current] = []
            if current == "after":
                sections["unchanged"] = bool(m.group(3))
        elif current and (line.startswith(("main ", "startup ", "  "))):
            sections[current].append(line)
        else:
            current = None  # a log line ends the listing
    return "".join(sections["before"]), "".join(sections["after"]), not sections["unchanged"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paddlec", default=str(ROOT / "build/paddlec"))
    ap.add_argument("--diff", action="store_true", help="print only the difference")
    ap.add_argument("cases", nargs="+", type=pathlib.Path)
    args = ap.parse_args()
    for case in args.cases:
        case = case.resolve()
        rel = case.relative_to(ROOT) if case.is_relative_to(ROOT) else case
        pipeline = pipeline_for(case)
        name = last_pass(pipeline)
        before, after, changed = listings(args.paddlec, rel, pipeline, name)
        print(f"##### {rel}  (passes: {pipeline})")
        if not args.diff:
            print(f"# ----- before {name} -----\n{before}# ----- after {name} -----\n{after}", end="")
        diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"before {name}",
                                            f"after {name}", n=1))
        reported = "reported a change" if changed else "reported no change"
        print(f"# ----- diff ({name} {reported}) -----\n{diff or '(none: a CHECK-UNCHANGED case)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
