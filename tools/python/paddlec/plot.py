"""Loss and accuracy curves from ``paddlec train --metrics FILE.jsonl`` (one JSON object per
evaluation: epoch, step, train_loss, test_loss, test_accuracy, ...), drawn with matplotlib.

    python -m paddlec.plot m.jsonl -o curves.png [--title TEXT]

Several files draw one line each (labelled by file name), to compare runs.
"""

import argparse
import json
import os
import sys

__all__ = ["read_metrics", "plot"]


def read_metrics(path):
    """The records of a metrics file, in order; ValueError naming the line for a malformed one."""
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError("%s:%d: not a JSON object: %s" % (path, number, e.msg)) from None
            missing = [k for k in ("step", "train_loss", "test_loss", "test_accuracy") if k not in record]
            if missing:
                raise ValueError("%s:%d: the record lacks %s (is it a paddlec train --metrics file?)"
                                 % (path, number, ", ".join(missing)))
            records.append(record)
    if not records:
        raise ValueError("%s holds no records" % path)
    return records


def plot(paths, output, title=None):
    """Draws the loss (train and test) and test accuracy against the training step of each metrics
    file into ``output`` (PNG, SVG or PDF by its extension)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    runs = [(os.path.basename(p), read_metrics(p)) for p in paths]
    fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for i, (name, records) in enumerate(runs):
        color = "C%d" % i
        steps = [r["step"] for r in records]
        label = "" if len(runs) == 1 else name + ": "
        loss_ax.plot(steps, [r["train_loss"] for r in records], color=color, marker="o", markersize=3,
                     label=label + "train")
        loss_ax.plot(steps, [r["test_loss"] for r in records], color=color, linestyle="--", marker="s",
                     markersize=3, label=label + "test")
        acc_ax.plot(steps, [100 * r["test_accuracy"] for r in records], color=color, marker="o", markersize=3,
                    label=name)
        for r in records:
            if r.get("epoch_end"):
                acc_ax.axvline(r["step"], color="#cccccc", linewidth=0.8, zorder=0)
    loss_ax.set(xlabel="step", ylabel="loss", title="loss")
    acc_ax.set(xlabel="step", ylabel="test accuracy (%)", title="test accuracy")
    loss_ax.legend()
    if len(runs) > 1:
        acc_ax.legend()
    for ax in (loss_ax, acc_ax):
        ax.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.savefig(output, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m paddlec.plot", description=__doc__.splitlines()[0])
    parser.add_argument("metrics", nargs="+", help="metrics files written by paddlec train --metrics")
    parser.add_argument("-o", "--output", required=True, help="the image to write (.png, .svg or .pdf)")
    parser.add_argument("--title", help="a title above the plots")
    args = parser.parse_args(argv)
    try:
        plot(args.metrics, args.output, args.title)
    except (OSError, ValueError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
