#!/usr/bin/python3
"""Runs paddlec's CLI end-to-end tests.

Two kinds of cases, both run against the real binary:

1. Transcripts, testdata/cli/*.test. Cases are separated by a line '---'. Each case has:
     RUN: <arguments after 'paddlec'>     (%S = repository root, %t = a fresh temp dir for the case,
                                          %T = a temp dir shared by all cases of the file)
     EXIT: <code>                         (default 0)
     STDOUT: / STDERR:                    followed by the exact expected text, up to the next directive
     STDOUT-CONTAINS: / STDERR-CONTAINS:  text that must appear (repeatable)
     STDOUT-NOT: / STDERR-NOT:            text that must not appear (repeatable)
     STDOUT-COUNT: <n> <text>             text appears exactly n times (repeatable; STDERR-COUNT too)
     FILE-EXISTS: / FILE-MISSING: <path>  after the run (FILE-MISSING: '*' matches any name part)
     SAME-FILES: <path> <path>            the two files are byte-identical after the run
     ENV: NAME=VALUE                      set for the run
     MPIRUN: <N>                          run as N ranks of `mpirun -np N --oversubscribe` (Open MPI;
                                          --allow-run-as-root added when run as root)
   Lines starting with '#' before RUN are comments.

2. Invalid programs, testdata/invalid/*.{pbtxt,json,pb}. Each carries its expected diagnostics in
   '# expect: <line>' lines (for .pb and .json files: in a sibling <name>.expect file); the case
   passes when `paddlec compile <file>` exits 1 and stderr is exactly those lines.
"""
import argparse
import difflib
import glob
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile

DIRECTIVES = ("RUN:", "EXIT:", "STDOUT:", "STDERR:", "STDOUT-CONTAINS:", "STDERR-CONTAINS:", "STDOUT-NOT:",
              "STDERR-NOT:", "STDOUT-COUNT:", "STDERR-COUNT:", "FILE-EXISTS:", "FILE-MISSING:", "SAME-FILES:", "ENV:", "MPIRUN:")


def parse_cases(text):
    cases = []
    for chunk in text.split("\n---\n"):
        case = {"exit": 0, "contains": [], "not": [], "count": [], "exists": [], "missing": [], "same": [], "env": {}}
        block = None
        for line in chunk.splitlines():
            head = next((d for d in DIRECTIVES if line.startswith(d)), None)
            if head is None:
                if block is not None:
                    case[block].append(line)
                elif line.strip() and not line.startswith("#"):
                    raise ValueError(f"stray line outside a directive: {line!r}")
                continue
            value = line[len(head):].strip()
            block = None
            if head == "RUN:":
                case["run"] = value
            elif head == "EXIT:":
                case["exit"] = int(value)
            elif head in ("STDOUT:", "STDERR:"):
                block = head[:-1].lower()
                case[block] = []
            elif head.endswith("-CONTAINS:"):
                case["contains"].append((head.split("-")[0].lower(), value))
            elif head.endswith("-COUNT:"):
                n, _, text = value.partition(" ")
                case["count"].append((head.split("-")[0].lower(), int(n), text))
            elif head.endswith("-NOT:"):
                case["not"].append((head.split("-")[0].lower(), value))
            elif head == "FILE-EXISTS:":
                case["exists"].append(value)
            elif head == "FILE-MISSING:":
                case["missing"].append(value)
            elif head == "SAME-FILES:":
                case["same"].append(value.split())
            elif head == "ENV:":
                k, _, v = value.partition("=")
                case["env"][k] = v
            elif head == "MPIRUN:":
                case["ranks"] = int(value)
        if "run" in case:
            cases.append(case)
    return cases


def run(paddlec, args, root, env_extra=None, timeout=120, ranks=0):
    env = dict(os.environ)
    env.update(env_extra or {})
    launcher = []
    if ranks:
        launcher = ["mpirun", "-np", str(ranks), "--oversubscribe"] + (["--allow-run-as-root"] if os.getuid() == 0 else [])
        # Exported to every rank: with -x, or through Open MPI's mca_base_env_list where the caller set
        # one (scripts/sanitize.sh does), since mpirun refuses the two together.
        if env.get("OMPI_MCA_mca_base_env_list") and env_extra:
            env["OMPI_MCA_mca_base_env_list"] += "".join(";" + name for name in env_extra)
        else:
            launcher += [a for name in env_extra or {} for a in ("-x", name)]
    return subprocess.run(launcher + [paddlec] + args, cwd=root, capture_output=True, text=True, timeout=timeout,
                          env=env)


def expand(s, root, tmp, shared=""):
    return s.replace("%S", str(root)).replace("%t", tmp).replace("%T", shared)


def check_transcript(paddlec, root, path):
    failures = []
    with tempfile.TemporaryDirectory() as shared:
        failures += run_cases(paddlec, root, path, shared)
    return failures


def run_cases(paddlec, root, path, shared):
    failures = []
    for i, case in enumerate(parse_cases(path.read_text())):
        with tempfile.TemporaryDirectory() as tmp:
            x = lambda s: expand(s, root, tmp, shared)
            args = [x(a) for a in shlex.split(case["run"])]
            name = f"{path.name}#{i + 1} (paddlec {' '.join(shlex.split(case['run']))})"
            try:
                r = run(paddlec, args, root, {k: x(v) for k, v in case["env"].items()}, ranks=case.get("ranks", 0))
            except subprocess.TimeoutExpired:
                failures.append(f"{name}: timed out")
                continue
            out = {"stdout": r.stdout, "stderr": r.stderr}
            problems = []
            if r.returncode != case["exit"]:
                problems.append(f"exit code {r.returncode}, expected {case['exit']}")
            for stream in ("stdout", "stderr"):
                if stream in case:
                    want = "\n".join(x(l) for l in case[stream]).rstrip("\n")
                    got = out[stream].rstrip("\n")
                    if want != got:
                        diff = "\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), "expected", "actual",
                                                              lineterm=""))
                        problems.append(f"{stream} differs:\n{diff}")
            for stream, text in case["contains"]:
                if x(text) not in out[stream]:
                    problems.append(f"{stream} lacks {text!r}")
            for stream, n, text in case["count"]:
                if out[stream].count(x(text)) != n:
                    problems.append(f"{stream} holds {text!r} {out[stream].count(x(text))} times, expected {n}")
            for stream, text in case["not"]:
                if x(text) in out[stream]:
                    problems.append(f"{stream} contains {text!r}")
            for p in case["exists"]:
                if not os.path.exists(x(p)):
                    problems.append(f"file {p} missing")
            for p in case["missing"]:
                if glob.glob(glob.escape(x(p)).replace(glob.escape("*"), "*")) if "*" in p else os.path.exists(x(p)):
                    problems.append(f"file {p} exists")
            for a, b in case["same"]:
                try:
                    if pathlib.Path(x(a)).read_bytes() != pathlib.Path(x(b)).read_bytes():
                        problems.append(f"files {a} and {b} differ")
                except OSError as e:
                    problems.append(f"cannot compare {a} and {b}: {e}")
            if problems:
                failures.append(f"{name}:\n  " + "\n  ".join(problems) + f"\n  stdout: {r.stdout!r}\n  stderr: {r.stderr!r}")
    return failures


def check_invalid(paddlec, root, path):
    if path.suffix in (".pb", ".json"):
        expect_file = path.with_suffix(".expect")
        header = expect_file.read_text().splitlines()
    else:
        header = path.read_text(errors="replace").splitlines()
    expected = [l[len("# expect: "):] for l in header if l.startswith("# expect: ")]
    if not expected:
        return [f"{path}: no '# expect:' lines"]
    rel = path.relative_to(root)
    r = run(paddlec, ["compile", str(rel)], root)
    problems = []
    if r.returncode != 1:
        problems.append(f"exit code {r.returncode}, expected 1")
    if r.stderr.rstrip("\n") != "\n".join(expected):
        diff = "\n".join(difflib.unified_diff(expected, r.stderr.rstrip("\n").splitlines(), "expected", "actual",
                                              lineterm=""))
        problems.append("stderr differs:\n" + diff)
    return [f"{rel}:\n  " + "\n  ".join(problems)] if problems else []


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paddlec", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("filter", nargs="*", help="only files whose name contains one of these")
    args = ap.parse_args()
    root = pathlib.Path(args.root).resolve()
    paddlec = str(pathlib.Path(args.paddlec).resolve())
    files = sorted((root / "testdata/cli").glob("*.test"))
    invalid = sorted(p for ext in ("pbtxt", "json", "pb") for p in (root / "testdata/invalid").glob(f"*.{ext}"))
    if args.filter:
        files = [f for f in files if any(s in f.name for s in args.filter)]
        invalid = [f for f in invalid if any(s in f.name for s in args.filter)]
    failures, count = [], 0
    for f in files:
        n = len(parse_cases(f.read_text()))
        count += n
        failures += check_transcript(paddlec, root, f)
    for f in invalid:
        count += 1
        failures += check_invalid(paddlec, root, f)
    for msg in failures:
        print("FAIL", msg, file=sys.stderr)
    print(f"{count - len(failures)} of {count} CLI cases passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
