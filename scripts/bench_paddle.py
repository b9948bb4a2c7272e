#!/usr/bin/env python3
"""PaddlePaddle's own CPU time for the single-op cases scripts/bench.sh times with paddlec_bench.

Same shapes and settings: a 3x3 depthwise conv2d (padding 1, groups = channels) and an inference-mode
LSTM (the rnn op Paddle's nn.LSTM runs) over a time-major sequence. Paddle runs eagerly under no_grad
(its default mode), so each timing includes one op dispatch, as paddlec's includes one plan step.
Prints lines like paddlec_bench's:
  paddle depthwise_conv2d 3x3 c=256   28x28  stride=1 batch=1       0.123 ms
  paddle lstm T=32  batch=64   input=128  hidden=256  layers=1    1.234 ms
Usage: python scripts/bench_paddle.py depthwise|lstm [--batch B] ... [--min-time S]
Runs with an interpreter that has paddle (scripts/bench.sh uses its benchmark-only virtualenv); exits 3
without.
"""
import argparse
import statistics
import sys
import time

try:
    import numpy as np
    import paddle
    import paddle.nn.functional as F
except ImportError:
    print("paddle is not installed: no PaddlePaddle comparison", file=sys.stderr)
    sys.exit(3)


def median_ms(fn, min_time, min_reps=5):
    for _ in range(3):
        fn()
    times, start = [], time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def depthwise(a):
    rng = np.random.RandomState(0)
    x = paddle.to_tensor(rng.rand(a.batch, a.channels, a.size, a.size).astype("float32"))
    w = paddle.to_tensor(rng.rand(a.channels, 1, 3, 3).astype("float32"))

    def run():
        y = F.conv2d(x, w, stride=a.stride, padding=1, groups=a.channels)
        y.numpy()  # waits for the result, as paddlec_bench synchronizes

    ms = median_ms(run, a.min_time)
    print(f"paddle depthwise_conv2d 3x3 c={a.channels:<4} {a.size:>3}x{a.size:<3} stride={a.stride} "
          f"batch={a.batch:<4} {ms:9.3f} ms")


def lstm(a):
    rng = np.random.RandomState(0)
    net = paddle.nn.LSTM(a.input, a.hidden, num_layers=a.layers, time_major=True)
    net.eval()
    x = paddle.to_tensor(rng.rand(a.seq, a.batch, a.input).astype("float32"))
    h0 = paddle.to_tensor(rng.rand(a.layers, a.batch, a.hidden).astype("float32"))
    c0 = paddle.to_tensor(rng.rand(a.layers, a.batch, a.hidden).astype("float32"))

    def run():
        y, _ = net(x, (h0, c0))
        y.numpy()

    ms = median_ms(run, a.min_time)
    print(f"paddle lstm T={a.seq:<3} batch={a.batch:<4} input={a.input:<4} hidden={a.hidden:<4} layers={a.layers} "
          f"{ms:9.3f} ms  {ms * 1e3 / a.seq:8.1f} us/step")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["depthwise", "lstm"])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--channels", type=int, default=256)
    p.add_argument("--size", type=int, default=28)
    p.add_argument("--stride", type=int, default=1)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--input", type=int, default=128)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--min-time", type=float, default=1.0)
    a = p.parse_args()
    paddle.set_device("cpu")
    with paddle.no_grad():
        depthwise(a) if a.mode == "depthwise" else lstm(a)


if __name__ == "__main__":
    main()
