#!/usr/bin/env python3
"""Emits configs/lenet.pbtxt's network from Python: two blocks of 3x3 convolution, batch norm,
relu and 2x2 max pooling, then fc 128 (relu) and fc 10, softmax, cross entropy and a mean loss.
Usage: python3 configs/lenet.py -o lenet.pbtxt (.pb / .json by extension)."""

import argparse
import sys

try:
    import paddlec
    from paddlec import layers
except ImportError:  # the package lives in .venv after scripts/setup.sh
    sys.exit("configs/lenet.py needs the paddlec package: run scripts/setup.sh, then . .venv/bin/activate")


def conv_block(x, filters, name):
    conv = layers.conv2d(x, filters, 3, padding=1, bias_attr=False, name=name)
    bn = layers.batch_norm(conv, momentum=0.9, name=name + ".bn")
    return layers.pool2d(layers.relu(bn, name=name + ".relu"), pool_size=2, pool_type="max", pool_stride=2,
                         name=name + ".pool")


def build():
    """The main program; parameters get their initializers when the program is compiled."""
    main = paddlec.Program()
    with paddlec.program_guard(main, paddlec.Program()):
        img = layers.data("img", [1, 28, 28])
        label = layers.data("label", [1], dtype="int64")
        x = conv_block(img, 32, "conv1")
        x = conv_block(x, 64, "conv2")
        x = layers.fc(x, 128, act="relu", name="fc1")
        logits = layers.fc(x, 10, name="fc2")
        prob = layers.softmax(logits, name="prob")
        layers.mean(layers.cross_entropy(prob, label, name="cross_entropy"), name="loss")
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
