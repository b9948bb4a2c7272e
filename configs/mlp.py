#!/usr/bin/env python3
"""Emits configs/mlp.pbtxt's network from Python: a 784-512-256-10 MLP with relu, softmax with
cross entropy and a mean loss. Usage: python3 configs/mlp.py -o mlp.pbtxt (.pb / .json by extension)."""

import argparse
import sys

try:
    import paddlec
    from paddlec import layers, ops
except ImportError:  # the package lives in .venv after scripts/setup.sh
    sys.exit("configs/mlp.py needs the paddlec package: run scripts/setup.sh, then . .venv/bin/activate")


def build():
    """The main program; parameters get their initializers when the program is compiled."""
    main = paddlec.Program()
    with paddlec.program_guard(main, paddlec.Program()):
        img = layers.data("img", [784])
        label = layers.data("label", [1], dtype="int64")
        hidden = layers.fc(img, 512, act="relu", name="fc1")
        hidden = layers.fc(hidden, 256, act="relu", name="fc2")
        logits = layers.fc(hidden, 10, name="fc3")
        # The op function directly, to name both outputs as the hand-written config does.
        block = main.global_block()
        loss_vec = ops.softmax_with_cross_entropy(logits=logits, label=label, softmax=block.create_var(name="prob"),
                                                  loss=block.create_var(name="loss_vec"))
        layers.mean(loss_vec, name="loss")
    return main


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-o", "--output", default="-", help="output file (default: text on stdout)")
    args = parser.parse_args(argv)
    program = build()
    if args.output == "-":
        sys.stdout.write(program.to_string())
    else:
        program.save(args.output)


if __name__ == "__main__":
    main()
