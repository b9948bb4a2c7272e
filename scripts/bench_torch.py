#!/usr/bin/env python3
"""PyTorch's time for the networks scripts/bench.sh times with paddlec, for a side-by-side ratio.

The models mirror configs/mlp.pbtxt, configs/lenet.pbtxt and paddlec_bench's ResNet-20-style stack
(same layers, shapes, losses and an Adam step). Prints lines like paddlec_bench's:
  torch-train mlp.pbtxt batch=64  0.812 ms
Usage: python3 scripts/bench_torch.py [--device cuda|cpu] [--min-time 2]
Runs with whatever python3 has torch (the GPU machine's image does); exits 3 without torch.
"""
import argparse
import statistics
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("torch is not installed: no PyTorch comparison", file=sys.stderr)
    sys.exit(3)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 256), nn.Linear(256, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32)
        self.c2, self.b2 = nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64)
        self.fc1, self.fc2 = nn.Linear(64 * 7 * 7, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.b1(self.c1(x))), 2)
        x = F.max_pool2d(F.relu(self.b2(self.c2(x))), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (self.proj(x) if self.proj is not None else x))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        blocks, cin = [], 16
        for stage in range(3):
            cout = 16 << stage
            for b in range(3):
                blocks.append(Block(cin, cout, 2 if stage > 0 and b == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, 10, bias=False)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1).flatten(1))


def time_step(model, shape, batch, device, min_time):
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.rand((batch,) + shape, device=device)
    y = torch.randint(0, 10, (batch,), device=device)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for _ in range(5):
        step()
    sync()
    times, start = [], time.perf_counter()
    while len(times) < 10 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        step()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--min-time", type=float, default=2.0)
    a = ap.parse_args()
    torch.manual_seed(0)
    cases = [("mlp.pbtxt", Mlp, (784,), (64, 512)), ("lenet.pbtxt", LeNet, (1, 28, 28), (64, 512)),
             ("resnet", ResNet, (3, 32, 32), (64, 512))]
    for name, cls, shape, batches in cases:
        for bs in batches:
            ms = time_step(cls(), shape, bs, a.device, a.min_time)
            print(f"torch-train {name:<12} batch={bs:<4} {ms:9.3f} ms  {bs / ms * 1e3:9.0f} samples/s", flush=True)


if __name__ == "__main__":
    main()
