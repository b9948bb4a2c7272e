#!/usr/bin/env python3
"""Trains configs/mlp's network (784-512-256-10, relu) on Fashion-MNIST from Python, the way
``paddlec train configs/mlp.pbtxt --epochs=5`` does: Adam, learning rate 0.001, batch 64, a seeded
shuffle per epoch, test accuracy after each epoch.

A progress bar with the loss and samples/s runs on stderr when it is a terminal; --quiet (or
PADDLEC_QUIET=1) silences it.

Usage: python3 tools/python/examples/fashion_mnist_mlp.py [--epochs 5] [--limit-train N] [--limit-test N] [-q]
"""

import argparse
import time

import numpy as np

import paddlec
from paddlec import layers


def build(learning_rate):
    """(main, startup, test program, loss, logits): the training program and its forward clone."""
    main, startup = paddlec.Program(), paddlec.Program()
    with paddlec.program_guard(main, startup), paddlec.unique_name.guard():
        img = layers.data("img", [784])
        label = layers.data("label", [1], dtype="int64")
        hidden = layers.fc(img, 512, act="relu", name="fc1")
        hidden = layers.fc(hidden, 256, act="relu", name="fc2")
        logits = layers.fc(hidden, 10, name="fc3")
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, label), name="loss")
        test = main.clone(for_test=True)
        paddlec.optimizer.Adam(learning_rate=learning_rate).minimize(loss)
    return main, startup, test, loss, logits


def evaluate(exe, test, logits, scope, images, labels, batch=1000):
    correct = 0
    for begin in range(0, len(images), batch):
        (scores,) = exe.run(test, feed={"img": images[begin:begin + batch], "label": labels[begin:begin + batch]},
                            fetch_list=[logits.name], scope=scope)
        correct += int((scores.argmax(1) == labels[begin:begin + batch, 0]).sum())
    return correct / len(images)


def train(epochs=5, batch_size=64, learning_rate=0.001, seed=1, limit_train=0, limit_test=0, log=None,
          progress=None):
    """Trains and returns the test accuracy after each epoch (``progress``: see paddlec.progress)."""
    (train_x, train_y), (test_x, test_y) = paddlec.datasets.fashion_mnist()
    train_x, test_x = train_x.reshape(len(train_x), 784), test_x.reshape(len(test_x), 784)
    train_y, test_y = train_y.reshape(-1, 1), test_y.reshape(-1, 1)
    if limit_train:
        train_x, train_y = train_x[:limit_train], train_y[:limit_train]
    if limit_test:
        test_x, test_y = test_x[:limit_test], test_y[:limit_test]
    main, startup, test, loss, logits = build(learning_rate)
    main.random_seed = startup.random_seed = seed
    scope, exe = paddlec.Scope(), paddlec.Executor()
    exe.run(startup, scope=scope)
    accuracies = []
    for epoch in range(epochs):
        start = time.time()
        order = np.random.RandomState(seed * 1000 + epoch).permutation(len(train_x))
        total = 0.0
        with paddlec.progress.bar(total=len(order), desc="epoch %d/%d" % (epoch + 1, epochs), progress=progress) as bar:
            for begin in range(0, len(order), batch_size):
                idx = order[begin:begin + batch_size]
                (value,) = exe.run(main, feed={"img": train_x[idx], "label": train_y[idx]}, fetch_list=[loss],
                                   scope=scope)
                total += float(value) * len(idx)
                bar.update(len(idx))
                bar.set_postfix(loss="%.4f" % (total / (begin + len(idx))), refresh=False)
        accuracies.append(evaluate(exe, test, logits, scope, test_x, test_y))
        if log:
            log("epoch %d/%d: train loss %.4f, test accuracy %.2f%%, %.1f s" % (
                epoch + 1, epochs, total / len(order), 100 * accuracies[-1], time.time() - start))
    return accuracies


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit-train", type=int, default=0)
    parser.add_argument("--limit-test", type=int, default=0)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args()
    train(args.epochs, args.batch_size, args.lr, args.seed, args.limit_train, args.limit_test, log=print,
          progress=False if args.quiet else None)


if __name__ == "__main__":
    main()
