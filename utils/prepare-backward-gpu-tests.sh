#!/usr/bin/env bash
#===- prepare-backward-gpu-tests.sh - data for the backward GPU check -----===#
#
# The GPU machine has no MLIR: this script does gdn-run's part here. For each
# case below it fuses the program (gdn-opt --gdn-fuse --canonicalize: the
# gdn_kernel.prologue op, whose gradient rule recomputes the conv output in
# float64 as the fused kernel does), draws inputs and cotangents with
# gdn-run, rounds each cotangent to its result's storage type (what a bf16
# backward receives), and runs gdn-run --gradients again on exactly those
# to get the float64 gradients. Everything is stored as float32 .npy
# (inputs and rounded cotangents exactly; gradients to 6e-8) and
# gzip-compressed, under OUT/<case>/, with OUT/cases listing the cases; the
# GPU side is utils/backward-gpu-run.sh.
#
#   utils/prepare-backward-gpu-tests.sh OUT [--bundle]
#
# BACKWARD_CASES (names separated by spaces) prepares only those cases.
#
# --bundle also copies what the GPU run needs from this tree (the script,
# kernels/include, runtime/include and the harness) to OUT/src, so that OUT alone can travel
# to a GPU machine whose checkout lacks them: run OUT/src/utils/
# backward-gpu-run.sh OUT there.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out="${1:?usage: prepare-backward-gpu-tests.sh OUT [--bundle]}"
bundle="${2:-}"
bin="$build/bin"
inputs="$root/test/Integration/Inputs"
rm -rf "$out"
mkdir -p "$out"

# case | program | harness config | gdn-run options | result dtypes (the
# cotangents' storage). Lengths cover 0, 1, 63, 64, 65, padding and
# sequences that row blocks (64+ rows each) cut mid-way; conv widths 2, 3, 4
# with and without initial and final conv states.
cases=(
  "prologue_gqa16x32|prologue_gqa16x32|gqa16x32|--seqlens=0,1,63,64,65,7 --seed=21|bf16,bf16,bf16,f32,f32"
  "prologue_states_padded|prologue_states_padded|small_w4_all|--seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 --seed=22|bf16,bf16,bf16,f32,f32,bf16"
  "prologue_states_long|prologue_states_padded|small_w4_all|--seqlens=1000,3,130,0,2 --slots=1000,8,136,0,3 --seed=23|bf16,bf16,bf16,f32,f32,bf16"
  "prologue_final_state|prologue_final_state|small_w4_final|--seqlens=0,1,2,3,130,64,300 --seed=24|bf16,bf16,bf16,f32,f32,bf16"
  "prologue_width3|prologue_width3|small_w3_all|--seqlens=0,1,2,3,63,64,65,7 --slots=8,8,8,8,64,72,72,8 --seed=25|bf16,bf16,bf16,f32,f32,bf16"
  "prologue_width3_plain|prologue_width3_plain|small_w3_plain|--seqlens=1,63,64,65,0,2,200 --seed=26|bf16,bf16,bf16,f32,f32"
  "prologue_width2|prologue_width2|small_w2_final|--seqlens=0,1,2,3,130,64 --seed=27|bf16,bf16,bf16,f32,f32,bf16"
  "prologue_width2_initial|prologue_width2_initial|small_w2_initial|--seqlens=0,1,63,64,65,130 --slots=4,1,64,72,66,136 --seed=28|bf16,bf16,bf16,f32,f32"
  "epilogue_gqa16x32|epilogue_gqa16x32|epilogue|--seqlens=100 --seed=29|bf16"
)

# .npy helpers without numpy: round cotangents to their storage, store as
# float32.
npy_tool() {
  python3 - "$@" <<'EOF'
import struct, sys

def read(path):
    data = open(path, 'rb').read()
    length = data[8] | (data[9] << 8)
    header = data[10:10 + length].decode('latin1')
    descr = header.split("'descr': '")[1].split("'")[0]
    shape = header.split("'shape': (")[1].split(")")[0]
    return descr, shape, data[10 + length:]

def write(path, descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, shape)
    header += ' ' * ((64 - (10 + len(header) + 1) % 64) % 64) + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) +
                header.encode('latin1') + payload)

def to_bf16(x):
    bits = struct.unpack('<I', struct.pack('<f', x))[0]
    if x != x:
        return x
    bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000
    return struct.unpack('<f', struct.pack('<I', bits))[0]

def f64_values(descr, payload):
    if descr == '<f8':
        return list(struct.unpack('<%dd' % (len(payload) // 8), payload))
    if descr == '<f4':
        return list(struct.unpack('<%df' % (len(payload) // 4), payload))
    return None

mode = sys.argv[1]
if mode == 'round':  # round FILE KIND: to bf16 or f32 values, still float64
    path, kind = sys.argv[2], sys.argv[3]
    descr, shape, payload = read(path)
    values = f64_values(descr, payload)
    if kind == 'bf16':
        # Through float32 first, as the GPU harness converts: any value the
        # two sides agree on will do, since both then use exactly it.
        values = [to_bf16(struct.unpack('<f', struct.pack('<f', v))[0]) for v in values]
    else:
        values = [struct.unpack('<f', struct.pack('<f', v))[0] for v in values]
    write(path, '<f8', shape, struct.pack('<%dd' % len(values), *values))
elif mode == 'f32':  # f32 FILE...: float64 files to float32
    for path in sys.argv[2:]:
        descr, shape, payload = read(path)
        if descr != '<f8':
            continue
        values = f64_values(descr, payload)
        write(path, '<f4', shape, struct.pack('<%df' % len(values), *values))
EOF
}

for entry in "${cases[@]}"; do
  IFS='|' read -r name program config options kinds <<<"$entry"
  if [ -n "${BACKWARD_CASES:-}" ] && [[ " $BACKWARD_CASES " != *" $name "* ]]; then
    continue
  fi
  dir="$out/$name"
  mkdir -p "$dir/in" "$dir/expected"
  if [ "$config" = epilogue ]; then
    cp "$inputs/$program.mlir" "$dir/program.mlir"
  else
    "$bin/gdn-opt" --gdn-fuse --canonicalize "$inputs/$program.mlir" -o "$dir/program.mlir"
  fi
  # shellcheck disable=SC2086
  "$bin/gdn-run" "$dir/program.mlir" --gradients $options \
    --save-inputs "$dir/in" --outputs "$dir/expected" >/dev/null
  IFS=, read -r -a kind <<<"$kinds"
  for i in "${!kind[@]}"; do
    npy_tool round "$dir/in/cotangent$i.npy" "${kind[$i]}"
  done
  "$bin/gdn-run" "$dir/program.mlir" --gradients --inputs "$dir/in" \
    --cotangents "$dir/in" --outputs "$dir/expected" >"$dir/reference.txt"
  rm -f "$dir"/expected/result*.npy
  npy_tool f32 "$dir"/in/*.npy "$dir"/expected/*.npy
  gzip -1 "$dir"/in/*.npy "$dir"/expected/*.npy
  echo "$config" >"$dir/config"
  echo "$name" >>"$out/cases"
  echo "prepared $name ($(du -sh "$dir" | cut -f1))"
done

if [ "$bundle" = --bundle ]; then
  mkdir -p "$out/src/utils" "$out/src/runtime" "$out/src/kernels" "$out/src/test/Integration"
  cp "$root/utils/backward-gpu-run.sh" "$out/src/utils/"
  cp -r "$root/runtime/include" "$out/src/runtime/"
  cp -r "$root/kernels/include" "$out/src/kernels/"
  cp -r "$root/test/Integration/harness" "$out/src/test/Integration/"
  echo "bundled the sources in $out/src"
fi
