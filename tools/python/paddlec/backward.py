"""Gradients: append_backward runs the C++ backward pass on a program (there is no autodiff in Python)."""

from paddlec import errors, framework

__all__ = ["append_backward"]


def _names(values):
    out = []
    for v in values or ():
        out.append(v.name if isinstance(v, framework.Variable) else str(v))
    return out


def backward_spec(loss, parameter_list=None, no_grad_set=None):
    """The backward pass with its typed options for ``loss``, as a pipeline step."""
    if not isinstance(loss, framework.Variable):
        raise TypeError("the loss must be a Variable, got %s" % type(loss).__name__)
    program = loss.block.program
    if loss.block.idx != 0:
        raise errors.make(errors.InvalidArgumentError, "the loss %r must be a variable of the global block" % loss.name)
    no_grad = _names(no_grad_set)
    if parameter_list is not None:
        wanted = set(_names(parameter_list))
        unknown = wanted - {p.name for p in program.all_parameters()}
        if unknown:
            raise errors.make(errors.NotFoundError, "parameter_list names %s, which are not parameters of the program"
                              % ", ".join(sorted(unknown)))
        no_grad += [p.name for p in program.all_parameters() if p.name not in wanted]
    options = {"loss": loss.name}
    if no_grad:
        options["no_grad"] = sorted(set(no_grad))
    return ("backward", options)


def append_backward(loss, parameter_list=None, no_grad_set=None):
    """Appends the ops computing the gradient of ``loss`` with respect to every trainable parameter
    (or those of ``parameter_list``; ``no_grad_set`` names variables that get none), using the C++
    backward pass. Gradients are named ``<param>@GRAD``. Returns [(parameter, gradient)] Variables."""
    program = loss.block.program
    program._apply_passes([("validate", {}), ("infer-shape", {}), backward_spec(loss, parameter_list, no_grad_set)])
    gb = program.global_block()
    return [(gb.var(p), gb.var(g)) for p, g in program.param_grads]
