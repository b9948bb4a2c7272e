"""Parameter files in PaddlePaddle's combined format (what save_combine writes and .pdiparams hold):
one tensor record per variable, in sorted-name order, no names stored."""

from paddlec import _core, executor as executor_mod, framework

__all__ = ["parameter_names", "save_params", "load_params"]


def parameter_names(program=None, model_only=False):
    """The variables a params file of ``program`` holds, in file order: every persistable tensor
    of the global block (parameters and optimizer state), as ``paddlec compile`` records them and
    ``paddlec run --params`` reads them; ``model_only``: only the Parameters (what ``paddlec train
    --save-params`` writes)."""
    program = program or framework.default_main_program()
    if model_only:
        return sorted(p.name for p in program.all_parameters())
    return list(program.signature()[2])


def save_params(path, program=None, scope=None, names=None, model_only=False):
    """Writes the program's parameters (or ``names``) from ``scope`` (default: the global scope)."""
    scope = scope or executor_mod.global_scope()
    names = list(names) if names is not None else parameter_names(program, model_only)
    _core.save_params(str(path), names, scope._core)
    return names


def load_params(path, program=None, scope=None, names=None, model_only=False):
    """Reads a params file into ``scope``; every record is checked against the program's
    declaration of its variable (dtype, dims)."""
    program = program or framework.default_main_program()
    scope = scope or executor_mod.global_scope()
    names = list(names) if names is not None else parameter_names(program, model_only)
    _core.load_params(str(path), names, scope._core, program.desc)
    return names
