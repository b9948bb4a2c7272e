#!/usr/bin/python3
"""Prints docs/scaling.md's table: data-parallel step time vs rank count for paddlec's three bench
networks, from a per-rank compute time and the ring allreduce model

    t_allreduce(N) = 2 (N - 1) / N * bytes / bw  +  2 (N - 1) * alpha        (ring, bandwidth + latency)
    t_tree(N)      = 2 * bytes / bw              +  2 ceil(log2 N) * alpha   (NCCL's double binary tree)
    t_step(N)      = t_compute + max(0, t_allreduce(N) - overlap * t_backward)

bw is the per-GPU bus bandwidth of the link the ring crosses (NVLink inside one 8-GPU node,
InfiniBand between nodes), alpha the per-hop latency. The figures and their sources are in
docs/scaling.md; this script only does the arithmetic, so the table can be regenerated when they change.

    scripts/scaling_model.py [--compute-ms mlp=0.15,lenet=0.25,resnet=1.8] [--backward-share 0.6]
"""
import argparse
import math

# Gradient bytes per step (float32): the trained parameters of configs/mlp.pbtxt, configs/lenet.pbtxt and
# paddlec_bench's ResNet-20 (tools/bench/bench.cc), as `paddlec train --data-parallel` reports them.
GRAD_BYTES = {"mlp": 535818 * 4, "lenet": 421930 * 4, "resnet": 272464 * 4}

# name: (bus bandwidth per GPU in bytes/s, per-hop latency in s)
LINKS = {
    "NVLink 4 (8 GPUs, one node)": (450e9, 2e-6),
    "InfiniBand NDR (64, 512 GPUs)": (50e9, 5e-6),
}


def ring(n, nbytes, bw, alpha):
    return 2 * (n - 1) / n * nbytes / bw + 2 * (n - 1) * alpha


def tree(n, nbytes, bw, alpha):
    return 2 * nbytes / bw + 2 * math.ceil(math.log2(n)) * alpha


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compute-ms", default="mlp=0.15,lenet=0.25,resnet=1.8",
                    help="per-rank compute time of one step (forward+backward+update), ms")
    ap.add_argument("--grad-bytes", default="", help="override gradient bytes, e.g. resnet=1090000")
    ap.add_argument("--backward-share", type=float, default=0.0,
                    help="share of the compute time an allreduce overlaps (0: one bucket, started after backward)")
    args = ap.parse_args()
    compute = {k: float(v) * 1e-3 for k, v in (kv.split("=") for kv in args.compute_ms.split(","))}
    grads = dict(GRAD_BYTES)
    for kv in filter(None, args.grad_bytes.split(",")):
        k, v = kv.split("=")
        grads[k] = int(v)
    print("| network | grad MB | compute ms | GPUs | link | ring allreduce ms | step ms (ring) | efficiency (ring) "
          "| tree allreduce ms | step ms (tree) | efficiency (tree) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for net in ("mlp", "lenet", "resnet"):
        t = compute[net]
        for n in (8, 64, 512):
            link = list(LINKS)[0 if n == 8 else 1]
            bw, alpha = LINKS[link]
            r = ring(n, grads[net], bw, alpha)
            tr = tree(n, grads[net], bw, alpha)
            step = t + max(0.0, r - args.backward_share * t)
            step_tree = t + max(0.0, tr - args.backward_share * t)
            print(f"| {net} | {grads[net] / 1e6:.2f} | {t * 1e3:.2f} | {n} | {link} | {r * 1e3:.3f} | {step * 1e3:.3f} "
                  f"| {t / step:.0%} | {tr * 1e3:.3f} | {step_tree * 1e3:.3f} | {t / step_tree:.0%} |")


if __name__ == "__main__":
    main()
