"""paddlec's op definitions against PaddlePaddle's own (issue 11, item 3): for every op both register,
each attribute Paddle declares is declared by paddlec (on the op, or as a common attribute) with
Paddle's type, and each input and output slot Paddle declares is declared too. A program Paddle
writes then validates here, and one paddlec writes carries attributes of the types Paddle's loader
reads (it rejects, e.g., slice's `axes` as LONGS where it declares INTS)."""

import json
import subprocess

import pytest

from conftest import run_side

# framework.proto's AttrType, by number.
ATTR_TYPES = ["INT", "FLOAT", "STRING", "INTS", "FLOATS", "STRINGS", "BOOLEAN", "BOOLEANS", "BLOCK", "LONG",
              "BLOCKS", "LONGS", "FLOAT64S", "VAR", "VARS", "FLOAT64", "SCALAR", "SCALARS"]


@pytest.fixture(scope="module")
def both(paddle, cli):
    """(Paddle's protos by op type, paddlec's protos by op type, paddlec's common attribute names)."""
    _, _, cache = paddle
    path = cache / "protos.json"
    if not path.exists():
        run_side(paddle, "protos", "--out", path)
    theirs = json.loads(path.read_text())
    dump = json.loads(subprocess.run([cli, "dump-opprotos", "--format=json"], check=True, capture_output=True,
                                     text=True).stdout)
    ours = {d["proto"]["type"]: d["proto"] for d in dump["ops"]}
    return theirs, ours, {a["name"] for a in dump.get("common_attrs", [])}


def test_paddlecs_ops_declare_paddles_attributes_with_paddles_types(both):
    theirs, ours, common = both
    shared = sorted(set(theirs) & set(ours))
    assert len(shared) > 60, shared  # the forward ops of the model zoo (Paddle has no protos for _grad ops)
    problems = []
    for op in shared:
        declared = {a["name"]: a["type"] for a in ours[op].get("attrs", [])}
        for name, number in theirs[op]["attrs"].items():
            if name in declared:
                if declared[name] != ATTR_TYPES[number]:
                    problems.append("%s.%s: paddlec %s, Paddle %s" % (op, name, declared[name], ATTR_TYPES[number]))
            elif name not in common:
                problems.append("%s.%s: not declared (Paddle %s)" % (op, name, ATTR_TYPES[number]))
    assert not problems, "\n".join(problems)


def test_paddlecs_ops_declare_paddles_slots(both):
    theirs, ours, _ = both
    problems = []
    for op in sorted(set(theirs) & set(ours)):
        for kind in ("inputs", "outputs"):
            declared = {s["name"] for s in ours[op].get(kind, [])}
            problems += ["%s: %s slot %s not declared" % (op, kind[:-1], s) for s in theirs[op][kind]
                         if s not in declared]
    assert not problems, "\n".join(problems)
