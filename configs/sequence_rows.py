#!/usr/bin/env python3
"""Fashion-MNIST read as sequences of rows: every image is a sequence of its 28-pixel rows with the
trailing blank rows dropped (so lengths differ), fed as a LoD batch. Each row with its position
(an embedding of the row index) goes through two fc layers, which keep the sequences; a max and an
average sequence_pool turn every sequence into one vector, classified by a last fc.

    python3 configs/sequence_rows.py --epochs 3           # the full run (README: Sequences)
    python3 configs/sequence_rows.py --train 2000 --test 500 --epochs 1   # a quick one
"""

import argparse
import sys
import time

import numpy as np

try:
    import paddlec
    from paddlec import layers
except ImportError:  # the package lives in .venv after scripts/setup.sh
    sys.exit("configs/sequence_rows.py needs the paddlec package: run scripts/setup.sh, then . .venv/bin/activate")

ROW = 28


def as_sequences(images):
    """(rows [T, 28] float32, positions [T] int64, lod [[0, ...]]) of a batch of images [N, 28, 28]:
    each image's rows up to its last row with ink."""
    inked = images.max(axis=2) > 0
    lengths = np.where(inked.any(axis=1), ROW - np.argmax(inked[:, ::-1], axis=1), 1)
    rows = np.concatenate([img[:n] for img, n in zip(images, lengths)]).astype(np.float32)
    positions = np.concatenate([np.arange(n) for n in lengths]).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    return rows, positions, [offsets]


def build(hidden=256, seed=1):
    """(main, startup, test program, loss, accuracy)."""
    main, startup = paddlec.Program(), paddlec.Program()
    main.random_seed = startup.random_seed = seed
    with paddlec.program_guard(main, startup):
        rows = layers.data("rows", [ROW], lod_level=1)
        pos = layers.data("pos", [], dtype="int64", lod_level=1)
        label = layers.data("label", [1], dtype="int64")
        where = layers.embedding(pos, [ROW, 32], name="where")
        h = layers.fc([rows, where], hidden, act="relu", name="row1")
        h = layers.fc(h, hidden, act="relu", name="row2")
        pooled = layers.concat([layers.sequence_pool(h, "max"), layers.sequence_pool(h, "average")], axis=1)
        logits = layers.fc(pooled, 10, name="out")
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
        acc = layers.accuracy(layers.softmax(logits), label)
        test = main.clone(for_test=True)
        paddlec.optimizer.Adam(learning_rate=1e-3).minimize(loss)
    return main, startup, test, loss, acc


def feed(images, labels):
    rows, positions, lod = as_sequences(images)
    return {"rows": (rows, lod), "pos": (positions, lod), "label": labels.reshape(-1, 1)}


def train(train_limit=None, test_limit=None, epochs=3, batch_size=128, seed=1, log=print, build=build, feed=feed):
    """Trains and evaluates; returns (test accuracy, median step ms, steps). configs/dynamic_rnn_rows.py
    trains its network with this loop too, passing its own `build` and `feed`."""
    (xtr, ytr), (xte, yte) = paddlec.datasets.fashion_mnist()
    xtr, ytr = xtr[:train_limit], ytr[:train_limit]
    xte, yte = xte[:test_limit], yte[:test_limit]
    main, startup, test, loss, acc = build(seed=seed)
    exe = paddlec.Executor("cpu")
    scope = paddlec.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(seed)
    times = []
    for epoch in range(epochs):
        order = rng.permutation(len(xtr))
        for b in range(0, len(order), batch_size):
            idx = order[b:b + batch_size]
            t0 = time.perf_counter()
            (value,) = exe.run(main, feed=feed(xtr[idx], ytr[idx]), fetch_list=[loss], scope=scope)
            times.append(time.perf_counter() - t0)
        log("epoch %d: loss %.4f" % (epoch + 1, float(np.asarray(value).reshape(-1)[0])))
    correct = 0
    for b in range(0, len(xte), 1000):
        (a,) = exe.run(test, feed=feed(xte[b:b + 1000], yte[b:b + 1000]), fetch_list=[acc], scope=scope)
        correct += float(np.asarray(a).reshape(-1)[0]) * len(xte[b:b + 1000])
    accuracy = correct / len(xte)
    step_ms = 1000 * float(np.median(times))
    log("test accuracy %.4f over %d images; median step %.2f ms (batch %d, %d steps)"
        % (accuracy, len(xte), step_ms, batch_size, len(times)))
    return accuracy, step_ms, len(times)


def arguments(description):
    """The command line of the examples that train on the rows (this one and configs/dynamic_rnn_rows.py)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--train", type=int, default=None, help="use only the first N training images")
    parser.add_argument("--test", type=int, default=None, help="evaluate on the first N test images")
    parser.add_argument("--batch-size", type=int, default=128)
    return parser


def main(argv=None):
    args = arguments(__doc__).parse_args(argv)
    train(args.train, args.test, args.epochs, args.batch_size)


if __name__ == "__main__":
    main()
