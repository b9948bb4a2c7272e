"""v2 Parameters: the learned values of a network, held in their own scope."""

import io
import tarfile

import numpy as np

from paddlec import errors, framework
from paddlec import io as pio
from paddlec.executor import Executor, Scope
from paddlec.v2 import topology

__all__ = ["Parameters", "create"]


class Parameters:
    """Named parameter values (NumPy arrays in and out); trainers update them in place."""

    def __init__(self, program, scope=None):
        self._program = program
        self._names = sorted(p.name for p in program.all_parameters())
        self.scope = scope or Scope()

    def names(self):
        return list(self._names)

    keys = names

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)

    def __contains__(self, name):
        return name in self._names

    def has_key(self, name):
        return name in self._names

    def _check(self, name):
        if name not in self._names:
            raise errors.make(errors.NotFoundError, "no parameter named %r" % name,
                              notes=framework._hint(name, self._names))

    def get_shape(self, name):
        self._check(name)
        return self._program.global_block().var(name).shape

    def get(self, name):
        """A copy of the parameter's value."""
        self._check(name)
        return self.scope.get(name)

    __getitem__ = get

    def set(self, name, value):
        """Replaces the parameter's value (same shape; cast to its dtype)."""
        self._check(name)
        var = self._program.global_block().var(name)
        value = np.asarray(value)
        if tuple(value.shape) != tuple(var.shape):
            raise errors.make(errors.InvalidArgumentError, "parameter %r has shape %s, the value %s"
                              % (name, framework._format_shape(var.shape), framework._format_shape(value.shape)))
        self.scope.set(name, value.astype(var.dtype))

    __setitem__ = set

    def save(self, path):
        """Writes every parameter in PaddlePaddle's combined params format (sorted names)."""
        pio.save_params(path, self._program, self.scope, names=self._names)

    def load(self, path):
        pio.load_params(path, self._program, self.scope, names=self._names)

    def to_tar(self, f):
        """Writes a tar archive with one NAME.npy per parameter to the binary file ``f``."""
        with tarfile.open(fileobj=f, mode="w") as tar:
            for name in self._names:
                buf = io.BytesIO()
                np.save(buf, self.get(name))
                info = tarfile.TarInfo(name + ".npy")
                info.size = buf.tell()
                buf.seek(0)
                tar.addfile(info, buf)

    def init_from_tar(self, f):
        """Sets the parameters found in a to_tar archive (others keep their values)."""
        with tarfile.open(fileobj=f, mode="r") as tar:
            for member in tar.getmembers():
                name = member.name[:-4] if member.name.endswith(".npy") else member.name
                if name in self._names:
                    self.set(name, np.load(io.BytesIO(tar.extractfile(member).read())))


def create(*layers):
    """Parameters of everything the given layers (usually the cost) depend on, initialized as the
    init-params pass chooses (Xavier for weights, zeros for biases, or their initializer)."""
    for l in layers:
        topology.check_layer(l, "parameters.create()")
    program = topology.prune(list(layers))
    s = topology.state()
    startup = framework.Program()
    startup.random_seed = s["seed"]
    program._link_startup(startup)
    params = Parameters(program)
    Executor(s["place"]).run(startup, scope=params.scope)
    return params
