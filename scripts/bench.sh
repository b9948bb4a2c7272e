#!/usr/bin/env bash
# paddlec's benchmarks (never part of the tests). Prints median timings; quote them, not single runs.
#   scripts/bench.sh [--device=cpu|gpu] [--quick] [--no-paddle]
#   scripts/bench.sh --peers [--busy N] [--threads T] [--rounds R] [--quick]
#   scripts/bench.sh --data-parallel [--epochs N]
# Needs a Release build in build/ (scripts/setup.sh) and hyperfine (installed by setup.sh).
# On the CPU the single-op cases (depthwise_conv2d, LSTM) are also timed with PaddlePaddle's CPU wheel
# (scripts/bench_paddle.py), from the benchmark-only virtualenv below, where pip installs the wheel on
# first use; --no-paddle skips that.
# --peers runs scripts/bench_peers.py instead: paddlec beside ONNX Runtime, PyTorch eager and
# PaddlePaddle's static executor on the same networks, shapes and thread count (default 2), with
# ratios, LeNet's peak training memory and the 5-epoch Adam MLP run (7 runs, medians per epoch);
# --busy N repeats each timed case, right after its quiet run, beside N busy background processes
# and prints each tool's slowdown (paired per round, like the ratios), with how long the busy
# processes shared a CPU during paddlec's runs; every figure is the median of R rounds (default 3)
# in which each tool runs once, so that the machine's noise bursts hit all tools, and each ratio is
# followed by the range of the rounds' own ratios. The MLP rows
# also give each tool's share of the CPU's fp32 FMA peak (`paddlec_bench peak`), the ceiling no
# GEMM-bound step passes.
# The peers live in a benchmark-only virtualenv created here with pip ($PADDLEC_BENCH_VENV, default
# ~/.cache/paddlec/bench-venv); nothing in the tests uses it.
# --data-parallel trains configs/mlp.pbtxt on Fashion-MNIST (default 5 epochs) in 1 process and as
# 2 ranks of mpirun (--data-parallel), printing each run's accuracy, samples/s and time in allreduce,
# with the machine's load beside them (docs/scaling.md quotes it).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${PADDLEC_BUILD_DIR:-build}"
DEVICE=cpu
MIN_TIME=2
PEERS=0
BUSY=0
THREADS=2
ROUNDS=3
PADDLE=1
DATA_PARALLEL=0
EPOCHS=5
PADDLE_VERSION=3.3.1
VENV="${PADDLEC_BENCH_VENV:-$HOME/.cache/paddlec/bench-venv}"
while [ $# -gt 0 ]; do
  case "$1" in
    --device=*) DEVICE="${1#--device=}" ;;
    --quick) MIN_TIME=0.5 ;;
    --no-paddle) PADDLE=0 ;;
    --peers) PEERS=1 ;;
    --data-parallel) DATA_PARALLEL=1 ;;
    --epochs=*) EPOCHS="${1#--epochs=}" ;;
    --busy=*) BUSY="${1#--busy=}" ;;
    --busy) BUSY="${2:?--busy needs a count}"; shift ;;
    --threads=*) THREADS="${1#--threads=}" ;;
    --rounds=*) ROUNDS="${1#--rounds=}" ;;
    --rounds) ROUNDS="${2:?--rounds needs a count}"; shift ;;
    --threads) THREADS="${2:?--threads needs a count}"; shift ;;
    *) echo "error: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ "$BUSY" != 0 ] && [ "$PEERS" = 0 ]; then echo "error: --busy goes with --peers" >&2; exit 2; fi
if [ "$PEERS" = 1 ]; then
  if ! "$VENV/bin/python" -c "import numpy, onnx, onnxruntime, torch, paddle" 2>/dev/null; then
    echo "== creating the benchmark-only virtualenv $VENV (numpy, onnx, onnxruntime, torch, paddlepaddle)"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q numpy onnx onnxruntime torch paddlepaddle
  fi
  exec "$VENV/bin/python" scripts/bench_peers.py --build "$BUILD" --threads "$THREADS" --busy "$BUSY" \
    --rounds "$ROUNDS" --min-time "$MIN_TIME"
fi
B="$BUILD/paddlec_bench"
P="$BUILD/paddlec"
if [ "$DATA_PARALLEL" = 1 ]; then
  ROOT_FLAG=$([ "$(id -u)" = 0 ] && echo --allow-run-as-root || true)
  TRAIN=(train configs/mlp.pbtxt --dataset=fashion-mnist --epochs="$EPOCHS" --no-progress)
  echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "== 1 process, 1 thread: paddlec ${TRAIN[*]} --threads=1"
  time "$P" "${TRAIN[@]}" --threads=1
  echo "== load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "== 1 process, $(nproc) threads: paddlec ${TRAIN[*]}"
  time "$P" "${TRAIN[@]}"
  echo "== load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "== 2 ranks, 1 thread each: mpirun -np 2 paddlec ${TRAIN[*]} --data-parallel --threads=1"
  time mpirun -np 2 --oversubscribe $ROOT_FLAG "$P" "${TRAIN[@]}" --data-parallel --threads=1
  echo "== load $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), device $DEVICE"
if [ "$DEVICE" = cpu ]; then
  echo "== GEMM (1024^3, float32)"
  "$B" sgemm --n 1024 --min-time "$MIN_TIME"
  echo "== per-op dispatch (1,000 scale ops on one element)"
  "$B" dispatch --ops 1000 --min-time "$MIN_TIME"
fi
echo "== forward (steady state): 'forward' runs the config as written (batch_norm computing batch"
echo "   statistics), 'inference' compiles it with --inference (is_test, conv+bn+relu fused)"
for cfg in configs/mlp.pbtxt configs/lenet.pbtxt; do
  for mode in forward inference; do
    for bs in 1 64 256; do "$B" "$mode" "$cfg" --batch "$bs" --device "$DEVICE" --min-time "$MIN_TIME"; done
  done
done
echo "== training step (forward + backward + adam)"
for cfg in configs/mlp.pbtxt configs/lenet.pbtxt; do
  for bs in 64 512; do "$B" train "$cfg" --batch "$bs" --device "$DEVICE" --min-time "$MIN_TIME"; done
done
for bs in 64 512; do "$B" resnet --batch "$bs" --device "$DEVICE" --min-time "$MIN_TIME"; done
if [ "$DEVICE" != cpu ]; then
  echo "== training step replayed as a CUDA graph (--cuda-graph)"
  for cfg in configs/mlp.pbtxt configs/lenet.pbtxt; do
    for bs in 64 512; do "$B" train "$cfg" --batch "$bs" --device "$DEVICE" --cuda-graph --min-time "$MIN_TIME"; done
  done
fi

if [ "$DEVICE" != cpu ]; then
  echo "== PyTorch, same models and steps (when python3 has torch)"
  if python3 scripts/bench_torch.py --device cuda --min-time "$MIN_TIME" > "$TMP/torch.txt"; then
    cat "$TMP/torch.txt"
    echo "== ratio (paddlec time / PyTorch time; below 1 means paddlec is faster)"
    for cfg in mlp.pbtxt lenet.pbtxt resnet; do
      for bs in 64 512; do
        p=$("$B" $([ "$cfg" = resnet ] && echo resnet || echo "train configs/$cfg") --batch "$bs" --device "$DEVICE" \
             --min-time "$MIN_TIME" | awk '{print $(NF-3)}')
        t=$(grep -E "torch-train $cfg +batch=$bs " "$TMP/torch.txt" | awk '{print $(NF-3)}')
        awk -v p="$p" -v t="$t" -v c="$cfg" -v b="$bs" 'BEGIN { printf "%-12s batch=%-4s paddlec %8.3f ms  torch %8.3f ms  ratio %.2f\n", c, b, p, t, p / t }'
      done
    done
  else
    echo "(no torch on this machine: no comparison)"
  fi
fi

# Single ops of the model zoo, with PaddlePaddle's own time for the same shapes (same threads).
DEPTHWISE_CASES=("--channels 256 --size 28 --stride 1" "--channels 32 --size 112 --stride 1")
LSTM_CASES=("--seq 1 --input 256 --hidden 256" "--seq 32 --input 128 --hidden 256" "--seq 32 --input 128 --hidden 256 --layers 2")
echo "== depthwise_conv2d (MobileNet-style 3x3 layer) and LSTM (rnn op, inference)"
for c in "${DEPTHWISE_CASES[@]}"; do
  for bs in 1 64; do "$B" depthwise $c --batch "$bs" --device "$DEVICE" --min-time "$MIN_TIME"; done
done
for c in "${LSTM_CASES[@]}"; do
  for bs in 1 64; do "$B" lstm $c --batch "$bs" --device "$DEVICE" --min-time "$MIN_TIME"; done
done
if [ "$DEVICE" = cpu ] && [ "$PADDLE" = 1 ]; then
  PY="$VENV/bin/python"
  if ! "$PY" -c "import paddle" 2>/dev/null; then
    echo "(installing paddlepaddle==$PADDLE_VERSION into the benchmark-only virtualenv $VENV for the comparison)"
    { [ -x "$PY" ] || python3 -m venv "$VENV"; } && "$VENV/bin/pip" install -q --disable-pip-version-check \
      "paddlepaddle==$PADDLE_VERSION" >/dev/null || echo "(pip failed: no PaddlePaddle comparison)"
  fi
  if "$PY" -c "import paddle" 2>/dev/null; then
    echo "== PaddlePaddle $("$PY" -c 'import paddle; print(paddle.__version__)') (CPU, eager, no_grad), same shapes and $(nproc) threads"
    for c in "${DEPTHWISE_CASES[@]}"; do
      for bs in 1 64; do
        OMP_NUM_THREADS=$(nproc) "$PY" scripts/bench_paddle.py depthwise $c --batch "$bs" --min-time "$MIN_TIME" 2>/dev/null
      done
    done
    for c in "${LSTM_CASES[@]}"; do
      for bs in 1 64; do
        OMP_NUM_THREADS=$(nproc) "$PY" scripts/bench_paddle.py lstm $c --batch "$bs" --min-time "$MIN_TIME" 2>/dev/null
      done
    done
  fi
fi

if [ "$DEVICE" = cpu ]; then
  echo "== compile of a synthetic 10,000-op program (end to end, hyperfine)"
  /usr/bin/python3 scripts/gen_synthetic.py --ops 10000 -o "$TMP/big.pbtxt"
  # A bare ProgramDesc binary, what a PaddlePaddle .pdmodel is.
  "$P" compile "$TMP/big.pbtxt" --passes=validate --emit=program -o "$TMP/big.pdmodel"
  hyperfine -N --warmup 3 --min-runs 15 --export-markdown "$TMP/compile.md" \
    "$P compile $TMP/big.pdmodel" "$P compile $TMP/big.pbtxt" 2>/dev/null | grep -E "Time|compile" || true
  echo "== start-up"
  printf 'blocks { idx: 0 parent_idx: -1 vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2 } } } } ops { type: "relu" inputs { parameter: "X" arguments: "x" } outputs { parameter: "Out" arguments: "y" } } }\n' > "$TMP/tiny.pbtxt"
  /usr/bin/python3 -c "import numpy as np; np.save('$TMP/x.npy', np.ones(2, dtype=np.float32))"
  hyperfine -N --warmup 5 --min-runs 30 "$P --version" "$P run $TMP/tiny.pbtxt --feed x=$TMP/x.npy" 2>/dev/null \
    | grep -E "Time|version|run" || true
fi
