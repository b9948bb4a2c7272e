"""The network v2 layers are added to, and the pruning that gives each trainer or infer() call only
the ops its outputs need."""

import contextlib

from paddlec import errors, framework, unique_name

_state = {}


def reset(place="cpu", trainer_count=1, seed=0):
    if trainer_count != 1:
        raise errors.make(errors.InvalidArgumentError, "trainer_count must be 1 (one trainer per process), got %r"
                          % (trainer_count,))
    main, startup = framework.Program(), framework.Program()
    main.random_seed = startup.random_seed = int(seed)
    main._link_startup(startup)
    _state.update(main=main, startup=startup, place=place, seed=int(seed), data_types={}, data_order=[],
                  metrics={}, names={})


def state():
    if not _state:
        reset()
    return _state


@contextlib.contextmanager
def guard():
    s = state()
    # Names restart with each network (paddlec.v2.init), whatever else was built in between.
    with framework.program_guard(s["main"], s["startup"]), unique_name.using(s["names"]):
        yield


def check_layer(value, what):
    if not isinstance(value, framework.Variable) or value.block.program is not state()["main"]:
        raise TypeError("%s must be a layer of the current v2 network, got %r" % (what, value))
    return value


def prune(targets, for_test=False):
    """A copy of the network holding only the ops (and variables) ``targets`` depend on."""
    main = state()["main"]
    gb = main.global_block()
    needed = {t.name for t in targets}
    keep = set()
    for op in reversed(gb.ops):
        if needed & set(op.output_arg_names):
            keep.add(op.idx)
            needed |= set(op.input_arg_names)
    pruned = main.clone(for_test=for_test)
    pb = pruned.global_block()
    for i in reversed(range(len(pb.ops))):
        if i not in keep:
            pb._remove_op(i)
    used = {t.name for t in targets}
    for op in pb.ops:
        used |= set(op.input_arg_names) | set(op.output_arg_names)
    for name in list(pb.vars):
        if name not in used:
            pb._remove_var(name)
    return pruned


def data_layers(program):
    """The data layers a pruned program reads, in the order they were declared."""
    gb = program.global_block()
    return [n for n in state()["data_order"] if gb.has_var(n)]
