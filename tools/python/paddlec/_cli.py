"""The ``paddlec`` command of an installed package (its console script): runs the command-line
tool that the wheel carries beside the C++ core, so ``pip install paddlec-*.whl`` puts the same
``paddlec compile/run/train`` on PATH as the repository's build."""

import os
import sys

__all__ = ["main", "executable"]


def executable():
    """The path of the packaged CLI binary."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_paddlec_cli")


def main():
    exe = executable()
    if not os.access(exe, os.X_OK):
        sys.stderr.write("error: this installation of paddlec has no command-line tool (%s is missing)\n" % exe)
        return 1
    os.execv(exe, ["paddlec"] + sys.argv[1:])
    return 1  # not reached: execv replaces the process


if __name__ == "__main__":
    sys.exit(main())
