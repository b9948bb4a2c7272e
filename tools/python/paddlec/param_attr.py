"""ParamAttr: how a layer should create a parameter (name, initializer, learning rate, regularizer)."""

__all__ = ["ParamAttr"]


class ParamAttr:
    """Settings for a layer's parameter. ``False`` where a layer takes a bias attribute means no bias."""

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None, trainable=True):
        self.name = name
        self.initializer = initializer
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.trainable = trainable

    @staticmethod
    def of(value, name=None):
        """A ParamAttr from what layers accept: None, a ParamAttr, a name, or an Initializer."""
        from paddlec.initializer import Initializer
        if value is None:
            return ParamAttr(name=name)
        if isinstance(value, ParamAttr):
            if value.name is None and name is not None:
                return ParamAttr(name, value.initializer, value.learning_rate, value.regularizer, value.trainable)
            return value
        if isinstance(value, str):
            return ParamAttr(name=value)
        if isinstance(value, Initializer):
            return ParamAttr(name=name, initializer=value)
        raise TypeError("expected a ParamAttr, a name or an Initializer, got %s" % type(value).__name__)

    def __repr__(self):
        return "ParamAttr(name=%r, initializer=%r, learning_rate=%r, regularizer=%r, trainable=%r)" % (
            self.name, self.initializer, self.learning_rate, self.regularizer, self.trainable)
