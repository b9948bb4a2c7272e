#!/usr/bin/python3
"""Writes the seed corpora of the libFuzzer targets (scripts/fuzz.sh) into OUT/<target>/.

Programs come from configs/ and testdata/ as they are; .npy, .pdiparams and checkpoint.json seeds
are generated here (the repository holds no such files, and generated ones stay small): every dtype
and layout the readers know, and the edge cases (0-d, empty, LoD, big-endian, Fortran order).
Usage: scripts/fuzz_seeds.py OUT
"""
import io
import json
import pathlib
import shutil
import struct
import sys
import zipfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_SEED = 64 * 1024


def programs(out_program, out_pir):
    for path in sorted(list(ROOT.glob("configs/**/*")) + list(ROOT.glob("testdata/**/*"))):
        if not path.is_file() or path.stat().st_size > MAX_SEED or path.suffix not in (".pbtxt", ".pb", ".json"):
            continue
        name = str(path.relative_to(ROOT)).replace("/", "_")
        text = path.read_bytes()
        is_pir = path.suffix == ".json" and b'"base_code"' in text[:200]
        shutil.copyfile(path, (out_pir if is_pir else out_program) / name)


def npy_seeds(out):
    arrays = {
        "f32_2x3": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f64_vec": np.linspace(-1, 1, 5),
        "i64_scalar": np.array(7, dtype=np.int64),
        "i32_empty": np.zeros((0, 3), dtype=np.int32),
        "bool": np.array([True, False, True]),
        "u8_img": np.arange(16, dtype=np.uint8).reshape(1, 4, 4),
        "f16": np.array([1.5, -2.0], dtype=np.float16),
        "f32_fortran": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "f32_bigendian": np.arange(4, dtype=">f4"),
        "i8_4d": np.ones((1, 2, 1, 2), dtype=np.int8),
    }
    for name, a in arrays.items():
        buf = io.BytesIO()
        np.save(buf, a)
        (out / f"{name}.npy").write_bytes(buf.getvalue())
    for npz in sorted(ROOT.glob("testdata/**/*.npz")):
        with zipfile.ZipFile(npz) as z:
            for member in z.namelist():
                data = z.read(member)
                if member.endswith(".npy") and len(data) <= MAX_SEED:
                    (out / f"{npz.stem}_{pathlib.Path(member).name}").write_bytes(data)


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def record(dtype_enum, dims, data, lod=()):
    """One tensor record of PaddlePaddle's save_combine stream (docs/formats.md, "Parameters")."""
    desc = b"\x08" + varint(dtype_enum) + b"".join(b"\x10" + varint(d) for d in dims)
    out = struct.pack("<IQ", 0, len(lod))
    for level in lod:
        raw = struct.pack(f"<{len(level)}Q", *level)
        out += struct.pack("<Q", len(raw)) + raw
    return out + struct.pack("<Ii", 0, len(desc)) + desc + data


def params_seeds(out):
    FP32, INT64, FP64, INT32, BOOL = 5, 3, 6, 2, 0
    p0 = record(FP32, [2, 3], np.arange(6, dtype="<f4").tobytes())
    p1 = record(INT64, [4], np.arange(4, dtype="<i8").tobytes(), lod=([0, 2, 4],))
    seeds = {
        "one_fp32": p0,
        "two_declared": p0 + p1,
        "fp64_scalar": record(FP64, [], struct.pack("<d", 3.5)),
        "int32_empty": record(INT32, [0, 5], b""),
        "bool_and_more": record(BOOL, [3], b"\x01\x00\x01") + p0 + p1,
        "eight": b"".join(record(FP32, [i + 1], np.ones(i + 1, dtype="<f4").tobytes()) for i in range(8)),
    }
    for name, data in seeds.items():
        (out / f"{name}.pdiparams").write_bytes(data)


def checkpoint_seeds(out):
    base = {"formatVersion": 1, "epoch": "2", "step": "94", "seed": "7", "batchSize": "64",
            "parameters": ["fc_0.b_0", "fc_0.w_0", "learning_rate_0"], "testAccuracy": 0.8125, "generation": "3"}
    seeds = {"full": base, "minimal": {"formatVersion": 1}, "no_generation": {k: v for k, v in base.items() if k != "generation"}}
    for name, value in seeds.items():
        (out / f"{name}.json").write_text(json.dumps(value, indent=1) + "\n")


def main():
    out = pathlib.Path(sys.argv[1])
    dirs = {t: out / t for t in ("program", "pir", "npy", "params", "checkpoint")}
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    programs(dirs["program"], dirs["pir"])
    npy_seeds(dirs["npy"])
    params_seeds(dirs["params"])
    checkpoint_seeds(dirs["checkpoint"])
    for t, d in dirs.items():
        print(f"fuzz seeds: {t}: {len(list(d.iterdir()))} files")


if __name__ == "__main__":
    main()
