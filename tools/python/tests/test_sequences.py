"""Sequences (LoD) and sparse inputs from Python: lod_level propagation as layers are appended,
feeds with LoD ((array, lod) and create_lod_tensor), fetches returning it, the sequence layers
against NumPy, sparse embedding gradients with lazy updates, the v2 sparse data types, and reduced
runs of the two training examples (configs/sequence_rows.py and configs/sparse_bow.py, the latter
through `paddlec train` too)."""

import importlib.util
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import paddlec
from paddlec import errors, layers

REPO = pathlib.Path(__file__).resolve().parents[3]
RNG = np.random.RandomState(3)


def config(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "configs" / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(fetch, feed, return_numpy=True):
    exe = paddlec.Executor()
    exe.run(paddlec.default_startup_program())
    return exe.run(feed=feed, fetch_list=fetch, return_numpy=return_numpy)


def test_lod_level_follows_each_ops_rule():
    x = layers.data("x", [3], lod_level=1)
    h = layers.fc(x, 4, act="relu")
    pooled = layers.sequence_pool(h, "sum")
    assert x.lod_level == 1 and h.lod_level == 1 and pooled.lod_level == 0
    assert layers.mean(h).lod_level == 0
    padded, length = layers.sequence_pad(h, layers.data("pad", [1], append_batch_size=False))
    assert padded.lod_level == 0 and layers.sequence_unpad(padded, length).lod_level == 1


def test_feeds_take_a_lod_and_fetches_return_it():
    x = layers.data("x", [2], lod_level=1)
    y = layers.relu(x)
    s = layers.sequence_pool(x, "sum")
    xv = RNG.randn(5, 2).astype("f4")
    got_y, got_s = run([y, s], {"x": (xv, [[0, 2, 5]])}, return_numpy=False)
    assert got_y.lod() == [[0, 2, 5]] and got_y.recursive_sequence_lengths() == [[2, 3]]
    np.testing.assert_allclose(np.asarray(got_y), np.maximum(xv, 0))
    assert got_s.lod() == []
    np.testing.assert_allclose(np.asarray(got_s), [xv[:2].sum(0), xv[2:].sum(0)], rtol=1e-6)
    t = paddlec.create_lod_tensor(xv, [[2, 3]])
    assert t.lod() == [[0, 2, 5]] and t.has_valid_recursive_sequence_lengths()
    (again,) = run([s], {"x": t})
    np.testing.assert_allclose(again, got_s.numpy())


def test_each_run_takes_its_feeds_lod_even_when_the_shapes_stay():
    x = layers.data("x", [2], lod_level=1)
    y = layers.relu(x)
    s = layers.sequence_pool(y, "sum")
    exe = paddlec.Executor()
    xv = np.ones((4, 2), "f4")
    for lod, sums in (([[0, 1, 4]], [1, 3]), ([[0, 2, 2, 4]], [2, 0, 2])):
        got_y, got_s = exe.run(feed={"x": (xv, lod)}, fetch_list=[y, s], return_numpy=False)
        assert got_y.lod() == lod
        np.testing.assert_allclose(np.asarray(got_s)[:, 0], sums)
    # A feed without a LoD is a plain tensor again, which the pool then refuses.
    with pytest.raises(errors.Error, match="X has no LoD"):
        exe.run(feed={"x": xv}, fetch_list=[y])


def test_create_lod_tensor_from_a_list_of_sequences():
    t = paddlec.create_lod_tensor([[1, 2], [3], [4, 5, 6]], [[2, 1, 3]])
    assert t.shape() == [6, 1] and t.lod() == [[0, 2, 3, 6]]
    with pytest.raises(errors.InvalidArgumentError, match="do not fit 6 rows"):
        paddlec.create_lod_tensor(np.zeros((6, 1)), [[2, 2]])


def test_a_bad_lod_is_an_error_naming_the_variable():
    x = layers.data("x", [2], lod_level=1)
    s = layers.sequence_pool(x, "sum")
    with pytest.raises(errors.InvalidArgumentError, match=r"'x': invalid LoD \[\[0, 2, 4\]\]: level 0 ends at 4 "
                       r"but the tensor has 5 rows"):
        run([s], {"x": (np.zeros((5, 2), "f4"), [[0, 2, 4]])})
    with pytest.raises(errors.Error, match="X has no LoD"):
        run([s], {"x": np.zeros((5, 2), "f4")})


def test_sequence_layers_against_numpy():
    x = layers.data("x", [2], lod_level=1)
    lod = [[0, 3, 3, 4]]
    xv = RNG.randn(4, 2).astype("f4")
    outs = {t: layers.sequence_pool(x, t) for t in ("sum", "average", "sqrt", "max", "first", "last")}
    rev = layers.sequence_reverse(x)
    padded, length = layers.sequence_pad(x, layers.data("pad", [1], append_batch_size=False))
    unpadded = layers.sequence_unpad(padded, length)
    names = list(outs)
    got = run([outs[n] for n in names] + [rev, padded, length, unpadded],
              {"x": (xv, lod), "pad": np.array([-1], "f4")})
    seqs = [xv[0:3], xv[3:3], xv[3:4]]
    ref = {"sum": lambda s: s.sum(0), "average": lambda s: s.mean(0), "sqrt": lambda s: s.sum(0) / np.sqrt(len(s)),
           "max": lambda s: s.max(0), "first": lambda s: s[0], "last": lambda s: s[-1]}
    for n, g in zip(names, got):
        want = [ref[n](s) if len(s) else np.zeros(2) for s in seqs]
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6, err_msg=n)
    r, p, ln, u = got[len(names):]
    np.testing.assert_allclose(r, np.concatenate([xv[2::-1], xv[3:4]]))
    assert p.shape == (3, 3, 2) and (p[1] == -1).all() and ln.tolist() == [3, 0, 1]
    np.testing.assert_allclose(u, xv)


def test_sequence_softmax_expand_and_mask():
    x = layers.data("x", [1], lod_level=1)
    rows = layers.data("rows", [2])
    sm = layers.sequence_softmax(x)
    ex = layers.sequence_expand(rows, x)
    mask = layers.sequence_mask(layers.data("len", [], dtype="int64"), maxlen=4, dtype="float32")
    xv = RNG.randn(5, 1).astype("f4")
    rv = RNG.randn(2, 2).astype("f4")
    got_sm, got_ex, got_mask = run([sm, ex, mask], {"x": (xv, [[0, 2, 5]]), "rows": rv,
                                                    "len": np.array([1, 3], "int64")})
    e = np.exp(xv[:, 0])
    np.testing.assert_allclose(got_sm[:, 0], np.concatenate([e[:2] / e[:2].sum(), e[2:] / e[2:].sum()]), rtol=1e-5)
    np.testing.assert_allclose(got_ex, rv[[0, 0, 1, 1, 1]])
    np.testing.assert_allclose(got_mask, [[1, 0, 0, 0], [1, 1, 1, 0]])


def train_embedding(sparse, optimizer, steps=2):
    """Trains an embedding on ids that touch rows {1, 3} then {3, 4}; returns the table per step."""
    paddlec.switch_main_program(paddlec.Program())
    paddlec.switch_startup_program(paddlec.Program())
    ids = layers.data("ids", [1], dtype="int64", lod_level=1)
    emb = layers.embedding(ids, [6, 3], is_sparse=sparse, name="emb")
    loss = layers.mean(layers.square_error_cost(layers.sequence_pool(emb, "sum"), layers.data("y", [1, 3])))
    optimizer.minimize(loss)
    exe = paddlec.Executor()
    scope = paddlec.Scope()
    exe.run(paddlec.default_startup_program(), scope=scope)
    scope.set("emb.w", np.arange(18, dtype="f4").reshape(6, 3) / 10)
    tables = [scope.get("emb.w")]
    for batch in ([1, 3, 3], [3, 4])[:steps]:
        exe.run(feed={"ids": (np.array(batch, "int64").reshape(-1, 1), [[0, len(batch)]]),
                      "y": np.ones((1, 1, 3), "f4")}, fetch_list=[loss], scope=scope)
        tables.append(scope.get("emb.w"))
    return tables


def test_sparse_sgd_equals_dense_and_touches_only_the_rows_looked_up():
    dense = train_embedding(False, paddlec.optimizer.SGD(0.1))
    sparse = train_embedding(True, paddlec.optimizer.SGD(0.1))
    for d, s in zip(dense, sparse):
        np.testing.assert_allclose(s, d, rtol=1e-6)
    changed = np.nonzero((sparse[1] != sparse[0]).any(axis=1))[0].tolist()
    assert changed == [1, 3]


def test_lazy_adam_updates_only_the_rows_of_each_step():
    lazy = train_embedding(True, paddlec.optimizer.Adam(0.1, lazy_mode=True))
    dense = train_embedding(False, paddlec.optimizer.Adam(0.1))
    np.testing.assert_allclose(lazy[1], dense[1], rtol=1e-6)  # from zero moments the first steps agree
    # Step 2 looks up rows 3 and 4: lazy Adam leaves row 1 where step 1 put it; dense Adam moves it on.
    np.testing.assert_array_equal(lazy[2][[0, 1, 2, 5]], lazy[1][[0, 1, 2, 5]])
    assert (dense[2][1] != dense[1][1]).all()
    assert (lazy[2][[3, 4]] != lazy[1][[3, 4]]).all()


def test_sparse_momentum_is_lazy():
    tables = train_embedding(True, paddlec.optimizer.Momentum(0.1, momentum=0.9))
    np.testing.assert_array_equal(tables[2][[0, 1, 2, 5]], tables[1][[0, 1, 2, 5]])


def test_v2_sparse_inputs_feed_an_fc_as_row_lookups():
    import paddlec.v2 as paddle
    paddle.init(seed=1)
    words = paddle.layer.data(name="words", type=paddle.data_type.sparse_binary_vector(1000))
    weighted = paddle.layer.data(name="weighted", type=paddle.data_type.sparse_float_vector(50))
    seq = paddle.layer.data(name="seq", type=paddle.data_type.integer_value_sequence(30))
    label = paddle.layer.data(name="label", type=paddle.data_type.integer_value(2))
    assert words.lod_level == 1 and seq.lod_level == 1 and words.dtype == "int64"
    out = paddle.layer.fc(input=[words, weighted], size=2, act=paddle.activation.Softmax())
    types = [op.type for op in words.block.program.global_block().ops]
    assert "lookup_table_v2" in types and "sequence_pool" in types and "mul" not in types
    cost = paddle.layer.classification_cost(input=out, label=label)
    parameters = paddle.parameters.create(cost)
    trainer = paddle.trainer.SGD(cost=cost, parameters=parameters,
                                 update_equation=paddle.optimizer.Adam(learning_rate=0.05))
    samples = [([1, 5, 9], [(3, 0.5)], [1, 2], 0), ([700, 5], [(10, 2.0), (11, 1.0)], [4], 1),
               ([], [(3, 1.0)], [0], 0), ([701, 702, 9], [(12, 1.5)], [5, 6, 7], 1)] * 8
    costs = []
    trainer.train(reader=paddle.batch(lambda: iter(samples), batch_size=8), num_passes=5,
                  event_handler=lambda e: costs.append(e.cost) if isinstance(e, paddle.event.EndIteration) else None,
                  feeding={"words": 0, "weighted": 1, "seq": 2, "label": 3})
    assert costs[-1] < costs[0] * 0.5


def test_reduced_lod_fashion_mnist_run_learns():
    accuracy, step_ms, steps = config("sequence_rows").train(train_limit=3840, test_limit=500, epochs=1,
                                                             log=lambda *_: None)
    assert steps == 30 and accuracy > 0.65


def test_reduced_sparse_bag_of_words_run_learns():
    accuracy, _, steps = config("sparse_bow").run(10000, steps=30, train_limit=3840, test_limit=500,
                                                 log=lambda *_: None)
    assert steps == 30 and accuracy > 0.55


def test_the_cli_trains_the_sparse_bag_of_words_with_lazy_adam(tmp_path, cli):
    """`paddlec train --lazy` feeds an int64 sequence input each image's hashed pixel-pattern ids (the
    vocabulary read from the embedding table) and applies Adam to the rows a batch looked up."""
    program = tmp_path / "bow.pb"
    subprocess.run([sys.executable, str(REPO / "configs" / "sparse_bow.py"), "--vocab", "100000", "-o", str(program)],
                   check=True)
    done = subprocess.run([cli, "train", str(program), "--lazy", "--lr", "2e-3", "--batch-size", "128",
                           "--limit-train", "3840", "--limit-test", "500", "--no-progress"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert float(re.search(r"test accuracy ([\d.]+)%", done.stdout).group(1)) > 55, done.stdout


@pytest.mark.parametrize("lazy", [False, True])
def test_compile_lazy_sets_adams_lazy_mode(tmp_path, cli, lazy):
    out = tmp_path / "mlp.json"
    subprocess.run([cli, "compile", str(REPO / "configs" / "mlp.pbtxt"), "--train", "--optimizer", "adam", "-o", str(out)]
                   + (["--lazy"] if lazy else []), check=True, capture_output=True)
    adams = [op for op in paddlec.Program.load(out).global_block().ops if op.type == "adam"]
    assert len(adams) == 6 and all(op.attr("lazy_mode") is lazy for op in adams)


def test_the_cli_refuses_ids_whose_vocabulary_it_cannot_tell(tmp_path, cli):
    main = paddlec.Program()
    with paddlec.program_guard(main, paddlec.Program()):
        words = layers.data("words", [1], dtype="int64", lod_level=1)
        label = layers.data("label", [1], dtype="int64")
        bag = layers.sequence_pool(paddlec.ops.cast(x=words, in_dtype=3, out_dtype=5), "sum")  # int64 -> float32
        layers.mean(layers.softmax_with_cross_entropy(layers.fc(bag, 10), label))
    main.save(str(tmp_path / "ids.pb"))
    done = subprocess.run([cli, "train", str(tmp_path / "ids.pb"), "--limit-train", "64", "--no-progress"],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.splitlines()[:2] == [
        "error: input 'words' holds ids, but no lookup_table_v2 reads them: the vocabulary is unknown",
        "note: an embedding of the ids (layers.embedding) gives their vocabulary: the rows of its table"]
