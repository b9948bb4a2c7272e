"""paddlec: describe networks in Python, compile and run them with paddlec's C++ core.

Python builds PaddlePaddle ProgramDescs (programs of ops over variables); the C++ core checks every
op as it is appended, infers shapes, appends backward and optimizer ops (compile passes) and runs
the kernels::

    import numpy as np
    import paddlec
    from paddlec import layers

    main, startup = paddlec.Program(), paddlec.Program()
    with paddlec.program_guard(main, startup):
        img = layers.data("img", [784])
        label = layers.data("label", [1], dtype="int64")
        hidden = layers.fc(img, size=64, act="relu")
        loss = layers.mean(layers.softmax_with_cross_entropy(layers.fc(hidden, size=10), label))
        paddlec.optimizer.Adam(learning_rate=1e-3).minimize(loss)
    exe = paddlec.Executor("cpu")
    exe.run(startup)
    (value,) = exe.run(main, feed={"img": np.random.rand(8, 784).astype("float32"),
                                   "label": np.zeros((8, 1), "int64")},
                       fetch_list=[loss])
"""

import os as _os

from paddlec import _spin

# libgomp (OpenMP, which oneDNN and a training run's loops run on) reads its wait policy once, when
# _core loads it: spin as long as paddlec's own threads (PADDLEC_SPIN_US), counted in this CPU's
# pauses as the executables count it, then sleep, instead of its default milliseconds of spinning,
# which made runs 5-10x slower beside busy processes (runtime/threads.h). A fixed 1,000 pauses, as
# before, are 24 us on a Zen 3 CPU: there the MLP training step at batch 64 (2 threads) was slower
# with them than with the calibrated count in 10 of 10 alternating runs, medians 1.31-2.52 ms
# against 1.26-2.15 (the VM's noise moved both).
_spin_count = _spin.bounded_spin_count()
if _spin_count is not None:
    _os.environ["GOMP_SPINCOUNT"] = str(_spin_count)
del _spin_count
from paddlec import _core  # noqa: E402
from paddlec import errors
from paddlec import unique_name
from paddlec.framework import (Block, Operator, Parameter, Program, Variable, default_main_program,
                               default_startup_program, program_guard, switch_main_program,
                               switch_startup_program)
from paddlec import ops
from paddlec.executor import (CPUPlace, CUDAPlace, Executor, LoDTensor, Scope, create_lod_tensor, global_scope,
                              scope_guard)
from paddlec.param_attr import ParamAttr
from paddlec import initializer, regularizer, clip
from paddlec.backward import append_backward
from paddlec import optimizer
from paddlec import io
from paddlec import layers
from paddlec import datasets
from paddlec import progress
from paddlec.model import Model

__version__ = _core.__version__

__all__ = [
    "Block", "CPUPlace", "CUDAPlace", "Executor", "LoDTensor", "Model", "Operator", "ParamAttr", "Parameter", "Program", "Scope",
    "Variable",
    "append_backward", "clip", "create_lod_tensor", "datasets", "default_main_program", "default_startup_program", "errors",
    "global_scope", "initializer", "io", "layers", "ops", "optimizer", "program_guard", "progress", "regularizer",
    "scope_guard", "switch_main_program", "switch_startup_program", "unique_name", "passes",
]


def passes():
    """Every compile pass: [(name, summary, [(option, type, default, help)])]."""
    return _core.list_passes()
