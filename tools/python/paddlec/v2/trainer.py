"""The v2 SGD trainer: a training program (the cost's ops plus the backward and optimizer passes)
run batch by batch over a reader, reporting through events."""

import numpy as np

from paddlec import errors, framework
from paddlec import progress as _progress
from paddlec.executor import Executor
from paddlec.v2 import event as v2_event
from paddlec.v2 import topology
from paddlec.v2.feeding import feed_dict
from paddlec.v2.optimizer import _UpdateEquation
from paddlec.v2.parameters import Parameters

__all__ = ["SGD"]


class SGD:
    """Trains ``parameters`` to lower ``cost`` with ``update_equation`` (Momentum, SGD, Adam)."""

    def __init__(self, cost, parameters, update_equation, extra_layers=None):
        topology.check_layer(cost, "SGD(): cost")
        if not isinstance(parameters, Parameters):
            raise TypeError("SGD(): parameters must come from paddlec.v2.parameters.create")
        if not isinstance(update_equation, _UpdateEquation):
            raise TypeError("SGD(): update_equation must be a paddlec.v2.optimizer object")
        extra = list(extra_layers or [])
        for l in extra:
            topology.check_layer(l, "SGD(): extra_layers")
        s = topology.state()
        metrics = s["metrics"].get(cost.name, {})
        self._fetch_names = [cost.name] + [l.name for l in extra] + [v.name for v in metrics.values()]
        self._metric_names = [l.name for l in extra] + list(metrics)
        targets = [cost] + extra + list(metrics.values())
        self._train = topology.prune(targets)
        self._test = topology.prune(targets, for_test=True)
        missing = [p.name for p in self._train.all_parameters() if p.name not in parameters]
        if missing:
            raise errors.make(errors.InvalidArgumentError, "SGD(): the parameters lack %s" % ", ".join(missing),
                              notes=["create them with paddlec.v2.parameters.create(cost)"])
        self.parameters = parameters
        startup = framework.Program()
        startup.random_seed = self._train.random_seed = s["seed"]
        update_equation.build().minimize(self._train.global_block().var(cost.name), startup_program=startup)
        # The startup program only initializes the optimizer state: the parameters already hold values.
        startup._mains.discard(self._train)
        self._executor = Executor(s["place"])
        self._executor.run(startup, scope=parameters.scope)

    def _run(self, program, batch, feeding):
        values = self._executor.run(program, feed=feed_dict(program, batch, feeding), fetch_list=self._fetch_names,
                                    scope=self.parameters.scope)
        cost = float(np.mean(values[0]))
        metrics = {n: float(np.mean(v)) for n, v in zip(self._metric_names, values[1:])}
        return cost, metrics

    def train(self, reader, num_passes=1, event_handler=None, feeding=None, progress=None):
        """For each pass, one update per batch the reader yields; ``event_handler`` gets BeginPass,
        BeginIteration, EndIteration (the batch's cost and metrics) and EndPass (their means).
        ``progress``: a bar per pass with the mean cost and samples/s (None: when stderr is a
        terminal; see paddlec.progress)."""
        handler = event_handler or (lambda e: None)
        for pass_id in range(num_passes):
            handler(v2_event.BeginPass(pass_id))
            total, count, sums = 0.0, 0, {}
            with _progress.bar(desc="pass %d" % pass_id, progress=progress) as pbar:
                for batch_id, batch in enumerate(reader()):
                    batch = list(batch)
                    handler(v2_event.BeginIteration(pass_id, batch_id))
                    cost, metrics = self._run(self._train, batch, feeding)
                    if not np.isfinite(cost):
                        raise errors.make(errors.ExecutionError, "the cost became %r in pass %d, batch %d"
                                          % (cost, pass_id, batch_id), notes=["lower the learning rate"])
                    total += cost * len(batch)
                    count += len(batch)
                    for k, v in metrics.items():
                        sums[k] = sums.get(k, 0.0) + v * len(batch)
                    pbar.update(len(batch))
                    pbar.set_postfix(cost="%.4f" % (total / count), refresh=False)
                    handler(v2_event.EndIteration(pass_id, batch_id, cost, metrics))
            handler(v2_event.EndPass(pass_id, total / max(count, 1), {k: v / max(count, 1) for k, v in sums.items()}))

    def test(self, reader, feeding=None):
        """The mean cost and metrics over a reader's batches, without updating anything."""
        total, count, sums = 0.0, 0, {}
        for batch in reader():
            batch = list(batch)
            cost, metrics = self._run(self._test, batch, feeding)
            total += cost * len(batch)
            count += len(batch)
            for k, v in metrics.items():
                sums[k] = sums.get(k, 0.0) + v * len(batch)
        if count == 0:
            raise errors.make(errors.InvalidArgumentError, "test(): the reader yielded no samples")
        return v2_event.TestResult(total / count, {k: v / count for k, v in sums.items()})
