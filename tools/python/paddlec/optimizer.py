"""Optimizers: minimize(loss) runs the C++ backward and optimizer passes on the loss's program.

The optimizer pass appends one update op per trainable parameter (sgd, momentum or adam) with its
state (velocities, moments) as persistable variables initialized by the startup program, plus
gradient clipping, weight decay and per-parameter learning-rate multipliers.
"""

import math

from paddlec import _core, backward, errors, framework
from paddlec.clip import GradientClipByGlobalNorm
from paddlec.regularizer import L2Decay

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "SGDOptimizer", "MomentumOptimizer", "AdamOptimizer"]

_OPTIMIZE_ROLE = _core.OP_ROLE["optimize"]


def _positive(name, value):
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise errors.make(errors.InvalidArgumentError, "%s must be a positive number, got %r" % (name, value))
    return value


class Optimizer:
    """Base class: ``kind`` is the optimizer pass's type, ``_options`` its options."""

    kind = None

    def __init__(self, learning_rate, regularization=None, grad_clip=None):
        self.learning_rate = _positive("learning_rate", learning_rate)
        if regularization is not None and not isinstance(regularization, L2Decay):
            raise TypeError("regularization must be an L2Decay, got %s" % type(regularization).__name__)
        if grad_clip is not None and not isinstance(grad_clip, GradientClipByGlobalNorm):
            raise TypeError("grad_clip must be a GradientClipByGlobalNorm, got %s" % type(grad_clip).__name__)
        self.regularization = regularization
        self.grad_clip = grad_clip

    def _options(self):
        opts = {"type": self.kind, "lr": self.learning_rate}
        if self.regularization is not None and self.regularization.coeff > 0:
            opts["weight_decay"] = float(self.regularization.coeff)
        if self.grad_clip is not None:
            opts["clip_norm"] = float(self.grad_clip.clip_norm)
        return opts

    def pipeline(self):
        """The optimizer pass with this optimizer's typed options, as a pipeline step."""
        return ("optimizer", self._options())

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """Appends the backward ops of ``loss`` (unless append_backward already ran) and the
        parameter updates to the loss's program; optimizer state initializers go to
        ``startup_program`` (default: the program's startup program). Returns (update ops,
        [(parameter, gradient)])."""
        if not isinstance(loss, framework.Variable):
            raise TypeError("minimize takes the loss Variable, got %s" % type(loss).__name__)
        program = loss.block.program
        steps = [("validate", {}), ("infer-shape", {})]
        if not program.param_grads:
            steps.append(backward.backward_spec(loss, parameter_list, no_grad_set))
        elif parameter_list is not None or no_grad_set is not None:
            raise errors.make(errors.InvalidArgumentError, "append_backward already chose the parameters; pass "
                              "parameter_list / no_grad_set to it, not to minimize")
        steps.append(self.pipeline())
        first_new = len(program.global_block().ops)
        program._apply_passes(steps, startup_program)
        gb = program.global_block()
        updates = [op for op in gb.ops[first_new:]
                   if op.has_attr("op_role") and op.attr("op_role") & _OPTIMIZE_ROLE and op.type in
                   ("sgd", "momentum", "adam")]
        return updates, [(gb.var(p), gb.var(g)) for p, g in program.param_grads]


class SGD(Optimizer):
    """param -= learning_rate * grad."""

    kind = "sgd"


class Momentum(Optimizer):
    """velocity = momentum * velocity + grad; param -= learning_rate * velocity (Nesterov's variant
    with use_nesterov)."""

    kind = "momentum"

    def __init__(self, learning_rate, momentum=0.9, use_nesterov=False, regularization=None, grad_clip=None):
        super().__init__(learning_rate, regularization, grad_clip)
        momentum = float(momentum)
        if not 0 <= momentum < 1:
            raise errors.make(errors.InvalidArgumentError, "momentum must be in [0, 1), got %r" % momentum)
        self.momentum = momentum
        self.use_nesterov = bool(use_nesterov)

    def _options(self):
        opts = super()._options()
        opts["momentum"] = self.momentum
        opts["nesterov"] = self.use_nesterov
        return opts


class Adam(Optimizer):
    """Adam (PaddlePaddle's update, bias-corrected learning rate). With ``lazy_mode`` a sparse
    gradient (``embedding(is_sparse=True)``) updates only the rows it holds, so a step costs the rows
    a batch touches rather than the whole table."""

    kind = "adam"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, regularization=None,
                 grad_clip=None, lazy_mode=False):
        super().__init__(learning_rate, regularization, grad_clip)
        for n, v in (("beta1", beta1), ("beta2", beta2)):
            if not 0 <= float(v) < 1:
                raise errors.make(errors.InvalidArgumentError, "%s must be in [0, 1), got %r" % (n, v))
        if not float(epsilon) >= 0:
            raise errors.make(errors.InvalidArgumentError, "epsilon must be >= 0, got %r" % (epsilon,))
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.lazy_mode = bool(lazy_mode)

    def _options(self):
        opts = super()._options()
        opts.update(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon)
        if self.lazy_mode:
            opts.update(lazy_mode=True)
        return opts


SGDOptimizer, MomentumOptimizer, AdamOptimizer = SGD, Momentum, Adam
