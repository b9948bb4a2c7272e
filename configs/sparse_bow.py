#!/usr/bin/env python3
"""A bag-of-words classifier over a sparse binary input: every Fashion-MNIST image becomes the set of
its hashed pixel patterns (each 4x4 patch's binarized pixels with the patch's place, hashed into a
vocabulary of --vocab ids; blank patches dropped), fed as a sparse_binary_vector (a LoD batch of
ids). The first layer is an fc over that sparse vector: an is_sparse embedding summed per image, so
its gradient is a SelectedRows of the rows the batch touched and lazy Adam updates only those. A
step therefore costs the same whatever the vocabulary:

    python3 configs/sparse_bow.py --vocab 10000 --vocab 100000 --vocab 1000000 --steps 50
    python3 configs/sparse_bow.py --vocab 100000 --epochs 2 --dense   # compare: a dense gradient
    python3 configs/sparse_bow.py --vocab 100000 -o bow.pb    # the forward program, for `paddlec train --lazy`
"""

import argparse
import sys
import time

import numpy as np

try:
    import paddlec
    from paddlec import layers
except ImportError:  # the package lives in .venv after scripts/setup.sh
    sys.exit("configs/sparse_bow.py needs the paddlec package: run scripts/setup.sh, then . .venv/bin/activate")

PATCH = 4


def pattern_ids(images, vocab):
    """(ids [T, 1] int64, lod) of a batch of images [N, 28, 28]: one id per inked 4x4 patch."""
    n = images.shape[0]
    bits = (images > 0.5).reshape(n, 7, PATCH, 7, PATCH).transpose(0, 1, 3, 2, 4).reshape(n, 49, 16)
    code = (bits.astype(np.int64) << np.arange(16)).sum(axis=2)  # [N, 49] 16-bit patterns
    place = np.arange(49, dtype=np.int64)
    hashed = ((code * 49 + place) * 2654435761) % (2**32) % vocab
    keep = code != 0
    ids = [hashed[i][keep[i]] for i in range(n)]
    lengths = [len(x) for x in ids]
    return np.concatenate(ids).reshape(-1, 1), [np.concatenate([[0], np.cumsum(lengths)]).tolist()]


def network(vocab, dim=64, sparse=True):
    """The forward network in the current program: (logits, label, loss)."""
    words = layers.data("words", [1], dtype="int64", lod_level=1)
    label = layers.data("label", [1], dtype="int64")
    # The same initial scale whatever the vocabulary (Xavier's would shrink with it).
    emb = layers.embedding(words, [vocab, dim], is_sparse=sparse, name="bow",
                           param_attr=paddlec.ParamAttr(initializer=paddlec.initializer.Uniform(-0.05, 0.05)))
    bag = layers.sequence_pool(emb, "sum")
    hidden = layers.fc(bag, 128, act="relu", name="hidden")
    logits = layers.fc(hidden, 10, name="out")
    loss = layers.mean(layers.softmax_with_cross_entropy(logits, label), name="loss")
    return logits, label, loss


def build(vocab, dim=64, sparse=True, seed=1):
    main, startup = paddlec.Program(), paddlec.Program()
    main.random_seed = startup.random_seed = seed
    with paddlec.program_guard(main, startup):
        logits, label, loss = network(vocab, dim, sparse)
        acc = layers.accuracy(layers.softmax(logits), label)
        test = main.clone(for_test=True)
        paddlec.optimizer.Adam(learning_rate=2e-3, lazy_mode=sparse).minimize(loss)
    return main, startup, test, loss, acc


def run(vocab, steps=None, epochs=1, batch_size=128, sparse=True, train_limit=None, test_limit=None, seed=1,
        log=print):
    """Trains; returns (test accuracy, median step ms, steps)."""
    (xtr, ytr), (xte, yte) = paddlec.datasets.fashion_mnist()
    xtr, ytr, xte, yte = xtr[:train_limit], ytr[:train_limit], xte[:test_limit], yte[:test_limit]
    main, startup, test, loss, acc = build(vocab, sparse=sparse, seed=seed)
    exe = paddlec.Executor("cpu")
    scope = paddlec.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(seed)
    times = []
    done = False
    for _ in range(epochs):
        order = rng.permutation(len(xtr))
        for b in range(0, len(order), batch_size):
            idx = order[b:b + batch_size]
            ids, lod = pattern_ids(xtr[idx], vocab)
            t0 = time.perf_counter()
            exe.run(main, feed={"words": (ids, lod), "label": ytr[idx].reshape(-1, 1)}, fetch_list=[loss],
                    scope=scope)
            times.append(time.perf_counter() - t0)
            if steps is not None and len(times) >= steps:
                done = True
                break
        if done:
            break
    correct = 0
    for b in range(0, len(xte), 1000):
        ids, lod = pattern_ids(xte[b:b + 1000], vocab)
        (a,) = exe.run(test, feed={"words": (ids, lod), "label": yte[b:b + 1000].reshape(-1, 1)}, fetch_list=[acc],
                       scope=scope)
        correct += float(np.asarray(a).reshape(-1)[0]) * len(xte[b:b + 1000])
    accuracy = correct / len(xte)
    # The first steps allocate; the median is the steady state.
    step_ms = 1000 * float(np.median(times[min(3, len(times) - 1):]))
    log("vocabulary %8d (%s gradient): median step %.2f ms over %d steps, test accuracy %.4f"
        % (vocab, "sparse" if sparse else "dense", step_ms, len(times), accuracy))
    return accuracy, step_ms, len(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, action="append", help="vocabulary size (repeatable)")
    parser.add_argument("--steps", type=int, default=None, help="stop after N steps")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--dense", action="store_true", help="a dense embedding gradient (for comparison)")
    parser.add_argument("-o", "--output", help="write the forward program (of the one --vocab) here (.pb, .pbtxt or "
                        ".json) instead of training: `paddlec train` feeds each image's pattern ids to its int64 "
                        "sequence input")
    args = parser.parse_args(argv)
    if args.output:
        if len(args.vocab or []) > 1:
            parser.error("-o writes one program: give at most one --vocab")
        main_program = paddlec.Program()
        with paddlec.program_guard(main_program, paddlec.Program()):
            network((args.vocab or [100000])[0], sparse=not args.dense)
        main_program.save(args.output)
        return
    for vocab in args.vocab or [100000]:
        run(vocab, args.steps, args.epochs, args.batch_size, sparse=not args.dense)


if __name__ == "__main__":
    main()
