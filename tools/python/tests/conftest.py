"""Shared fixtures: fresh default programs per test, the CLI binary, and a check that the installed
package is the one in this checkout (tests import the installed copy, as users do)."""

import filecmp
import os
import pathlib
import sysconfig

import pytest

import paddlec

REPO = pathlib.Path(__file__).resolve().parents[3]
SOURCE = REPO / "tools" / "python" / "paddlec"
BUILD = pathlib.Path(os.environ.get("PADDLEC_BUILD_DIR") or REPO / "build").resolve()
CLI = BUILD / "paddlec"


def pytest_configure(config):
    installed = pathlib.Path(paddlec.__file__).parent
    stale = []
    for src in SOURCE.rglob("*.py"):
        dst = installed / src.relative_to(SOURCE)
        if not dst.exists() or not filecmp.cmp(src, dst, shallow=False):
            stale.append(str(src.relative_to(REPO)))
    core = BUILD / "python" / "paddlec" / ("_core" + sysconfig.get_config_var("EXT_SUFFIX"))
    if core.exists() and not filecmp.cmp(core, paddlec._core.__file__, shallow=False):
        stale.append(str(core))
    lib = core.parent / "libpaddlec.so"
    if lib.exists() and not filecmp.cmp(lib, installed / "libpaddlec.so", shallow=False):
        stale.append(str(lib))
    if stale:
        raise pytest.UsageError("the installed paddlec (%s) differs from this checkout in %s: run scripts/setup.sh"
                                % (installed, ", ".join(stale[:5])))


@pytest.fixture(autouse=True)
def fresh_programs():
    """Every test builds into its own default programs, names and global scope."""
    main, startup = paddlec.Program(), paddlec.Program()
    with paddlec.program_guard(main, startup), paddlec.unique_name.guard(), paddlec.scope_guard(paddlec.Scope()):
        yield main, startup


@pytest.fixture(scope="session")
def cli():
    """The paddlec binary of the build the package came from."""
    if not CLI.exists():
        pytest.fail("%s is missing: run scripts/setup.sh" % CLI)
    return str(CLI)


@pytest.fixture(scope="session")
def repo():
    return REPO
