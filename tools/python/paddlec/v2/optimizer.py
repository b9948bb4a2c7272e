"""v2 update equations: settings that become a paddlec optimizer when a trainer is built."""

from paddlec import optimizer as opt
from paddlec.clip import GradientClipByGlobalNorm
from paddlec.regularizer import L2Decay

__all__ = ["Momentum", "SGD", "Adam", "L2Regularization"]


class L2Regularization:
    """Weight decay: ``rate * param`` added to every gradient."""

    def __init__(self, rate):
        self.decay = L2Decay(rate)


class _UpdateEquation:
    def __init__(self, learning_rate=1e-3, regularization=None, gradient_clipping_threshold=None):
        if regularization is not None and not isinstance(regularization, L2Regularization):
            raise TypeError("regularization must be an L2Regularization, got %r" % (regularization,))
        self._common = dict(
            learning_rate=learning_rate,
            regularization=regularization.decay if regularization is not None else None,
            grad_clip=GradientClipByGlobalNorm(gradient_clipping_threshold) if gradient_clipping_threshold else None)
        self.build()  # checks the settings now, where the user wrote them

    def build(self):
        raise NotImplementedError


class Momentum(_UpdateEquation):
    """SGD with momentum (0 gives plain SGD)."""

    def __init__(self, momentum=None, learning_rate=1e-3, regularization=None, gradient_clipping_threshold=None,
                 use_nesterov=False):
        self.momentum = 0.0 if momentum is None else momentum
        self.use_nesterov = use_nesterov
        super().__init__(learning_rate, regularization, gradient_clipping_threshold)

    def build(self):
        return opt.Momentum(momentum=self.momentum, use_nesterov=self.use_nesterov, **self._common)


class SGD(_UpdateEquation):
    """Plain stochastic gradient descent."""

    def build(self):
        return opt.SGD(**self._common)


class Adam(_UpdateEquation):
    def __init__(self, beta1=0.9, beta2=0.999, epsilon=1e-8, learning_rate=1e-3, regularization=None,
                 gradient_clipping_threshold=None):
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        super().__init__(learning_rate, regularization, gradient_clipping_threshold)

    def build(self):
        return opt.Adam(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon, **self._common)
