#!/usr/bin/env python3
"""Fashion-MNIST read as sequences of rows by a recurrent network: every image is a sequence of its
28-pixel rows with the trailing blank rows dropped (so lengths differ), fed as a LoD batch. An fc
projects each row; a GRU cell (fc, sigmoid and tanh ops) in a layers.DynamicRNN reads the rows in
order, and the state after each image's last row is classified by a last fc.

    python3 configs/dynamic_rnn_rows.py --epochs 3                       # the full run (README: Sequences)
    python3 configs/dynamic_rnn_rows.py --train 2000 --test 500 --epochs 1   # a quick one
    python3 configs/dynamic_rnn_rows.py -o rnn.pb      # the forward program, for `paddlec train rnn.pb`
"""

import os
import sys

try:
    import paddlec
    from paddlec import layers, ops
except ImportError:  # the package lives in .venv after scripts/setup.sh
    sys.exit("configs/dynamic_rnn_rows.py needs the paddlec package: run scripts/setup.sh, then . .venv/bin/activate")

# The rows are read, fed and trained on as configs/sequence_rows.py does.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sequence_rows  # noqa: E402

ROW = sequence_rows.ROW


def gru_cell(x, h, size):
    """One GRU step: gates u, r = sigmoid(fc([x, h])), candidate c = tanh(fc([x, r * h])), and the
    new state h + u * (c - h)."""
    gates = layers.fc([x, h], 2 * size, act="sigmoid", name="gru_gates")
    update = ops.slice(input=gates, axes=[1], starts=[0], ends=[size])
    reset = ops.slice(input=gates, axes=[1], starts=[size], ends=[2 * size])
    candidate = layers.fc([x, reset * h], size, act="tanh", name="gru_candidate")
    return h + update * (candidate - h)


def network(hidden=128, projection=64):
    """The forward network in the current program: (logits, label, loss)."""
    rows = layers.data("rows", [ROW], lod_level=1)
    label = layers.data("label", [1], dtype="int64")
    projected = layers.fc(rows, projection, act="relu", name="row")  # keeps the sequences
    drnn = layers.DynamicRNN()
    with drnn.block():
        x = drnn.step_input(projected)
        h = drnn.memory(shape=[hidden], value=0.0)
        drnn.update_memory(h, gru_cell(x, h, hidden))
    last = drnn.final_memory(h)  # the state after each image's last row
    logits = layers.fc(last, 10, name="out")
    loss = layers.mean(layers.softmax_with_cross_entropy(logits, label), name="loss")
    return logits, label, loss


def build(hidden=128, projection=64, seed=1):
    """(main, startup, test program, loss, accuracy)."""
    main, startup = paddlec.Program(), paddlec.Program()
    main.random_seed = startup.random_seed = seed
    with paddlec.program_guard(main, startup):
        logits, label, loss = network(hidden, projection)
        acc = layers.accuracy(layers.softmax(logits), label)
        test = main.clone(for_test=True)
        paddlec.optimizer.Adam(learning_rate=2e-3).minimize(loss)
    return main, startup, test, loss, acc


def feed(images, labels):
    rows, _, lod = sequence_rows.as_sequences(images)
    return {"rows": (rows, lod), "label": labels.reshape(-1, 1)}


def train(train_limit=None, test_limit=None, epochs=3, batch_size=128, seed=1, log=print):
    """Trains and evaluates with configs/sequence_rows.py's loop; returns (test accuracy, median step
    ms, steps)."""
    return sequence_rows.train(train_limit, test_limit, epochs, batch_size, seed, log, build=build, feed=feed)


def main(argv=None):
    parser = sequence_rows.arguments(__doc__)
    parser.add_argument("-o", "--output", help="write the forward program here (.pb, .pbtxt or .json) instead "
                        "of training: `paddlec train` reads each image as a sequence of rows when its input is one")
    args = parser.parse_args(argv)
    if args.output:
        main_program = paddlec.Program()
        with paddlec.program_guard(main_program, paddlec.Program()):
            network()
        main_program.save(args.output)
        return
    train(args.train, args.test, args.epochs, args.batch_size)


if __name__ == "__main__":
    main()
