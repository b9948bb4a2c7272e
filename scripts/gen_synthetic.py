#!/usr/bin/python3
"""Writes a synthetic N-op ProgramDesc textproto for compile-time benchmarks.

A chain of blocks of four ops (mul, elementwise_add with a bias, relu, scale): each op has one or two
inputs, one output and a few attributes, like the layers of real networks, so parsing, validation and
shape inference see realistic work. Usage: scripts/gen_synthetic.py --ops 10000 -o big.pbtxt
"""
import argparse


def var(name, dims, persistable=False):
    d = " ".join(f"dims: {x}" for x in dims)
    p = " persistable: true" if persistable else ""
    return f'  vars {{ name: "{name}" type {{ type: LOD_TENSOR lod_tensor {{ tensor {{ data_type: FP32 {d} }} }} }}{p} }}\n'


def op(type_, inputs, outputs, attrs=""):
    ins = "".join(f' inputs {{ parameter: "{k}" arguments: "{v}" }}' for k, v in inputs)
    outs = "".join(f' outputs {{ parameter: "{k}" arguments: "{v}" }}' for k, v in outputs)
    return f'  ops {{ type: "{type_}"{ins}{outs}{attrs} }}\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ops", type=int, default=10000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    w = a.width
    parts = ["blocks {\n  idx: 0\n  parent_idx: -1\n", var("x0", [-1, w])]
    ops = []
    i = 0
    layer = 0
    cur = "x0"
    while len(ops) < a.ops:
        layer += 1
        wname, bname = f"w{layer}", f"b{layer}"
        parts.append(var(wname, [w, w], True))
        parts.append(var(bname, [w], True))
        steps = [
            ("mul", [("X", cur), ("Y", wname)], 'attrs { name: "x_num_col_dims" type: INT i: 1 }'),
            ("elementwise_add", [("X", None), ("Y", bname)], 'attrs { name: "axis" type: INT i: 1 }'),
            ("relu", [("X", None)], ""),
            ("scale", [("X", None)], 'attrs { name: "scale" type: FLOAT f: 0.5 } attrs { name: "bias" type: FLOAT f: 0.1 }'),
        ]
        for type_, ins, attrs in steps:
            if len(ops) >= a.ops:
                break
            i += 1
            out = f"t{i}"
            ins = [(k, v if v is not None else cur) for k, v in ins]
            parts.append(var(out, [-1, w]))
            ops.append(op(type_, ins, [("Out", out)], " " + attrs if attrs else ""))
            cur = out
    parts.extend(ops)
    parts.append("}\n")
    with open(a.output, "w") as f:
        f.write("".join(parts))


if __name__ == "__main__":
    main()
