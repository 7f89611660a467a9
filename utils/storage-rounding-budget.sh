#!/usr/bin/env bash
#===- storage-rounding-budget.sh - what bf16 storage costs a layer -------===#
#
# Runs the small Qwen3-Next layer of the GPU suite through gdn-run in exact
# arithmetic with different storage types for its intermediates, on the same
# inputs, and prints each variant's relative RMS error against the program
# stored in float64: all bf16 (what every bf16 implementation stores), only
# the core chain in bf16 (projection output through q, k, v and o, which the
# ops' type rules tie together), only the gated RMSNorm's output, only the
# layer's output. No GPU needed (docs/precision.md).
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${BUILD_DIR:-$root/build}/bin"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
lengths="--seqlens=1,63,64,65,0,130,200"
"$bin/gdn-opt" --gdn-expand-layer "$root/test/Integration/Inputs/layer_qwen3_next_small.mlir" |
  sed -e 's/@layer_qwen3_next_small/@f/' >"$work/bf16.mlir"
python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
lines = open(f"{work}/bf16.mlir").read().split("\n")

def last(s, old, new):
    k = s.rfind(old)
    return s[:k] + new + s[k + len(old):]

def find(op):
    return next(i for i, line in enumerate(lines) if op in line)

norm, out = find("gdn.gated_rmsnorm "), find("= gdn.linear %5")

def write(name, text):
    open(f"{work}/{name}.mlir", "w").write(text)

def to64(line):
    return line.replace("bf16", "f64")

write("f64", "\n".join(to64(l) for l in lines))
# The layer's output alone in bf16.
v = [to64(l) for l in lines]
v[out] = last(v[out], "-> tensor<?x256xf64>", "-> tensor<?x256xbf16>")
v = [l.replace("-> tensor<?x256xf64> {", "-> tensor<?x256xbf16> {")
      .replace("return %6 : tensor<?x256xf64>", "return %6 : tensor<?x256xbf16>") for l in v]
write("output", "\n".join(v))
# The gated RMSNorm's output alone in bf16.
v = [to64(l) for l in lines]
v[norm] = last(v[norm], "-> tensor<?x4x128xf64>", "-> tensor<?x4x128xbf16>")
v[out] = v[out].replace(": (tensor<?x4x128xf64>", ": (tensor<?x4x128xbf16>", 1)
write("norm", "\n".join(v))
# Everything up to the delta rule's o in bf16, the rest in f64.
v = list(lines)
v[norm] = last(v[norm], "-> tensor<?x4x128xbf16>", "-> tensor<?x4x128xf64>")
v[out] = v[out].replace(": (tensor<?x4x128xbf16>", ": (tensor<?x4x128xf64>", 1)
v[out] = last(v[out], "-> tensor<?x256xbf16>", "-> tensor<?x256xf64>")
v = [l.replace("-> tensor<?x256xbf16> {", "-> tensor<?x256xf64> {")
      .replace("return %6 : tensor<?x256xbf16>", "return %6 : tensor<?x256xf64>") for l in v]
write("core", "\n".join(v))
PY
# What gdn-expand-layer{f32-projections} stores (docs/precision.md).
"$bin/gdn-opt" --gdn-expand-layer=f32-projections=true "$root/test/Integration/Inputs/layer_qwen3_next_small.mlir" |
  sed -e 's/@layer_qwen3_next_small/@f/' >"$work/f32p.mlir"
"$bin/gdn-run" "$work/bf16.mlir" --entry=f $lengths --seed=12 --save-inputs "$work/in" --outputs "$work/out-bf16" >/dev/null
for variant in f64 core norm output f32p; do
  "$bin/gdn-run" "$work/$variant.mlir" --entry=f $lengths --inputs "$work/in" --outputs "$work/out-$variant" >/dev/null
done
python3 - "$work" <<'PY'
import ast, math, struct, sys
work = sys.argv[1]

def load(path):
    data = open(path, "rb").read()
    size = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + size].decode())
    count = math.prod(header["shape"])
    code = {"<f4": "f", "<f8": "d"}[header["descr"]]
    return struct.unpack(f"<{count}{code}", data[10 + size:10 + size + count * struct.calcsize(code)])

reference = load(f"{work}/out-f64/result0.npy")
norm = sum(r * r for r in reference)
for variant, what in [("bf16", "every intermediate in bf16"),
                      ("core", "projection output .. o in bf16, the rest f64"),
                      ("norm", "only the gated RMSNorm's output in bf16"),
                      ("output", "only the layer's output in bf16"),
                    ("f32p", "f32-projections: qkvz in f32, the rest as the bf16 program")]:
    values = load(f"{work}/out-{variant}/result0.npy")
    error = math.sqrt(sum((v - r) ** 2 for v, r in zip(values, reference)) / norm)
    print(f"{error:.3e}  {what}")
PY
