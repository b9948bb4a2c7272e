"""The table the interop suite reports: model x format x max abs diff, written to
build/interop-report.md by conftest.py at the end of the run."""

RESULTS = []  # (model, format, max abs diff or None, tolerance or None, status)


def record(model, fmt, diff, tol, status):
    RESULTS.append((model, fmt, diff, tol, status))


def markdown():
    lines = ["| model | format | max abs diff | tolerance | status |", "|---|---|---|---|---|"]
    for model, fmt, diff, tol, status in sorted(RESULTS):
        lines.append("| %s | %s | %s | %s | %s |" % (model, fmt, "-" if diff is None else "%.3g" % diff,
                                                   "-" if tol is None else "%.3g" % tol, status))
    return "\n".join(lines) + "\n"
