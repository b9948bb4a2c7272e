"""The table the interop suite reports: model x format x max abs diff, written to
build/interop-report.md by conftest.py at the end of the run."""

import numpy as np

RESULTS = []  # (model, format, max abs diff or None, tolerance or None, status)


def tolerance(ref):
    """The largest max-abs difference accepted against Paddle's output `ref`: 1e-4 x max|ref|. For
    outputs of magnitude 1 and above this is the suite's 1e-4 x max(1, max|out|); below, it stays
    relative, because narrowed models with Paddle's default initializers end in tiny outputs
    (mobilenet_v1's are about 1e-13) where an absolute 1e-4 would accept any result at all."""
    return 1e-4 * float(np.max(np.abs(ref))) if ref.size else 0.0


def max_diff(got, ref):
    return float(np.max(np.abs(np.asarray(got, dtype="float64") - ref))) if ref.size else 0.0


def record(model, fmt, diff, tol, status):
    RESULTS.append((model, fmt, diff, tol, status))


def markdown():
    lines = ["| model | format | max abs diff | tolerance | status |", "|---|---|---|---|---|"]
    for model, fmt, diff, tol, status in sorted(RESULTS):
        lines.append("| %s | %s | %s | %s | %s |" % (model, fmt, "-" if diff is None else "%.3g" % diff,
                                                   "-" if tol is None else "%.3g" % tol, status))
    return "\n".join(lines) + "\n"
