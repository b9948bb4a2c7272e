"""Events a v2 trainer sends to its event handler."""

__all__ = ["BeginPass", "EndPass", "BeginIteration", "EndIteration", "TestResult"]


class WithMetric:
    def __init__(self, metrics):
        self.metrics = dict(metrics or {})


class BeginPass:
    def __init__(self, pass_id):
        self.pass_id = pass_id


class EndPass(WithMetric):
    """``cost``: the mean cost over the pass's samples; ``metrics``: their means too."""

    def __init__(self, pass_id, cost, metrics=None):
        super().__init__(metrics)
        self.pass_id = pass_id
        self.cost = cost


class BeginIteration:
    def __init__(self, pass_id, batch_id):
        self.pass_id = pass_id
        self.batch_id = batch_id


class EndIteration(WithMetric):
    """``cost``: the batch's cost, after the update."""

    def __init__(self, pass_id, batch_id, cost, metrics=None):
        super().__init__(metrics)
        self.pass_id = pass_id
        self.batch_id = batch_id
        self.cost = cost


class TestResult(WithMetric):
    """The mean cost (and metrics) over a test reader's samples."""

    def __init__(self, cost, metrics=None):
        super().__init__(metrics)
        self.cost = cost
