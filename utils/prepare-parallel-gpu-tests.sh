#!/usr/bin/env bash
#===- prepare-parallel-gpu-tests.sh - the parallel layers' GPU cases ------===#
#
#   utils/prepare-parallel-gpu-tests.sh [OUT]   (default device-carry/parallel)
#
# The compiler's half of the parallel GPU suite, run here (the GPU machine
# has no MLIR). For each layer and packing it draws one set of global
# inputs (A_log slow enough that states cross ranks: exp(A_log) from e^-7 to
# e^-2.5) and cotangents, then for each way of distributing the layer (P = 1,
# SP, headwise CP contiguous and zigzag, chunkwise CP with both chains and a
# P that divides no head count, mode=auto, SP x CP, zigzag with and without
# gdn-hoist-layouts):
#
#  - forward cases: the f32-projection layer (docs/precision.md) through
#    the pass and gdn-pipeline, emitted as CUDA, with each rank's inputs and
#    the float64 result of the same P-rank program for that rank
#    (gdn-run --rank-files);
#  - train cases: the generated forward and backward, with each rank's
#    inputs, cotangents and gdn-run's float64 results and gradients of the
#    same pair (gdn-run --run-backward --rank-files).
#
# utils/gpu-parallel.sh builds and checks them on the GPU machine: every
# rank against gdn-run, then the ranks put together against the P = 1 run.
#
# With GDN_PARALLEL_BENCH=1 it prepares, instead, the layer of
# Qwen3-Next-80B-A3B (hidden 2048, 16 key and 32 value heads of 128) in each
# distribution, forward and backward, for gpu-parallel.sh's timings
# (bench/<name>/: the emitted CUDA and the arguments' shapes); the bytes
# per rank it measures compare with utils/cp-cost-table.sh's.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out="${1:-$root/device-carry/parallel}"
bin="$build/bin"
# OUT is replaced whole: only when it is empty or this script made it.
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -f "$out/.prepared-parallel-cases" ]; then
  echo "error: $out holds files this script did not write; give an empty or new folder" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out"
touch "$out/.prepared-parallel-cases"

# A packing for contiguous shards (total 480: P = 2, 3, 4, 8 and 2 x 2 divide
# it; a sequence of 300 spans a whole shard at P = 4, so a rank both
# receives and hands on a state) and one for zigzag shards (every slot a
# multiple of 2P = 4). Lengths 0, 1, 63, 64 sit on and across shard edges.
contiguous="--seqlens=5,300,0,1,63,64,47"
contiguous_padded="--seqlens=5,290,0,1,60,64,40 --slots=8,300,4,1,63,64,40"
zigzag="--seqlens=4,300,0,8,64,68,36"
zigzag_padded="--seqlens=3,290,0,8,60,68,30 --slots=4,300,0,8,64,68,36"

# layer | packing name | gdn-run packing options
packings=(
  "layer_qwen3_next_small|contiguous|$contiguous"
  "layer_qwen3_next_small|zigzag|$zigzag"
  "layer_qwen3_5_small_padded|contiguous|$contiguous_padded"
  "layer_qwen3_5_small_padded|zigzag|$zigzag_padded"
  "layer_qwen3_next_small_h4|contiguous4|$contiguous"
)
# case suffix | packing name | distributing passes (one word each: split on |)
distributions=(
  "p1|contiguous|"
  "sp2|contiguous|--gdn-sequence-parallel=ranks=2"
  "hw2|contiguous|--gdn-context-parallel=ranks=2 mode=headwise"
  "cw2|contiguous|--gdn-context-parallel=ranks=2 mode=chunkwise"
  "cw3|contiguous|--gdn-context-parallel=ranks=3 mode=chunkwise"
  "cw4scan|contiguous|--gdn-context-parallel=ranks=4 mode=chunkwise chain=scan"
  "auto4|contiguous|--gdn-context-parallel=ranks=4 mode=auto"
  "sp2cw2|contiguous|--gdn-sequence-parallel=ranks=2|--gdn-context-parallel=ranks=2 mode=chunkwise"
  # Eight ranks of 60 tokens, what a node of eight GPUs runs.
  "cw8|contiguous|--gdn-context-parallel=ranks=8 mode=chunkwise"
  "p1z|zigzag|"
  "hwz2|zigzag|--gdn-context-parallel=ranks=2 mode=headwise layout=zigzag"
  "cwz2|zigzag|--gdn-context-parallel=ranks=2 mode=chunkwise layout=zigzag"
  "hwz2h|zigzag|--gdn-context-parallel=ranks=2 mode=headwise layout=zigzag|--gdn-hoist-layouts"
  "cwz2h|zigzag|--gdn-context-parallel=ranks=2 mode=chunkwise layout=zigzag|--gdn-hoist-layouts"
  # 4 key heads: SP 2 x headwise CP 2 leaves each rank one.
  "p1|contiguous4|"
  "sp2hw2|contiguous4|--gdn-sequence-parallel=ranks=2|--gdn-context-parallel=ranks=2 mode=headwise"
)
kinds="${GDN_PARALLEL_KINDS:-forward train}"
only="${GDN_PARALLEL_CASES:-}" # a grep -E pattern of case names, to prepare fewer

# A_log of the small layers' 4 value heads (and the h4 layer's 8), as .npy
# files gdn-run reads.
slow="$out/slow-decay"
for heads in 4 8; do
  mkdir -p "$slow/$heads"
  values="-7.0, -5.5, -4.0, -2.5"
  [ "$heads" = 8 ] && values="-7.0, -6.25, -5.5, -4.75, -4.0, -3.25, -2.5, -2.5"
  cat >"$slow/$heads/a_log.mlir" <<EOF
func.func @a_log() -> tensor<${heads}xf32> {
  %a = arith.constant dense<[$values]> : tensor<${heads}xf32>
  return %a : tensor<${heads}xf32>
}
EOF
  "$bin/gdn-run" "$slow/$heads/a_log.mlir" --outputs "$slow/$heads" >/dev/null
done

expand="--gdn-expand-layer=f32-projections=true"
if [ "${GDN_PARALLEL_BENCH:-}" = 1 ]; then
  source="$root/test/Integration/Inputs/layer_qwen3_next_gqa16x32.mlir"
  layer=layer_qwen3_next_gqa16x32
  shapes="Tx2048 - 12288x2048 64x2048 8192x4 32 32 128 2048x4096"
  for distribution in "${distributions[@]}"; do
    IFS='|' read -r suffix dpacking first second <<<"$distribution"
    case "$suffix" in p1z | cw3) continue ;; esac # 32K tokens: no P = 3 shards
    [ "$dpacking/$suffix" = contiguous4/p1 ] && continue # listed once already
    passes=()
    [ -n "$first" ] && passes+=("$first")
    [ -n "$second" ] && passes+=("$second")
    dir="$out/bench/${layer}_$suffix"
    mkdir -p "$dir"
    "$bin/gdn-opt" "$expand" "${passes[@]}" --gdn-generate-backward "$source" \
      --gdn-pipeline -o "$dir/fused.mlir"
    "$bin/gdn-translate" --gdn-to-cuda "$dir/fused.mlir" -o "$dir/kernels.cu"
    "$bin/gdn-translate" --gdn-to-cuda-header "$dir/fused.mlir" -o "$dir/kernels.h"
    echo "gdn_${layer}_forward" >"$dir/function"
    echo "gdn_${layer}_backward" >"$dir/backward"
    echo "$shapes" >"$dir/shapes"
    echo "prepared bench ${layer}_$suffix"
  done
  exit 0
fi
for entry in "${packings[@]}"; do
  IFS='|' read -r layer packing options <<<"$entry"
  source="$root/test/Integration/Inputs/$layer.mlir"
  inputs="$out/inputs/$layer-$packing"
  mkdir -p "$inputs/fixed"
  # A_log is argument 5 of the Qwen3-Next layer, 8 of the Qwen3.5 one.
  a_log=5; [ "$layer" = layer_qwen3_5_small_padded ] && a_log=8
  heads=4; [ "$layer" = layer_qwen3_next_small_h4 ] && heads=8
  cp "$slow/$heads/result0.npy" "$inputs/fixed/arg$a_log.npy"
  "$bin/gdn-opt" "$expand" "$source" -o "$inputs/p1.mlir"
  # shellcheck disable=SC2086
  "$bin/gdn-run" "$inputs/p1.mlir" $options --seed=31 --inputs "$inputs/fixed" \
    --gradients --save-inputs "$inputs/global" >/dev/null
  for distribution in "${distributions[@]}"; do
    IFS='|' read -r suffix dpacking first second <<<"$distribution"
    [ "$dpacking" = "$packing" ] || continue
    passes=()
    [ -n "$first" ] && passes+=("$first")
    [ -n "$second" ] && passes+=("$second")
    for kind in $kinds; do
      name="${layer}_${suffix}_$kind"
      if [ -n "$only" ] && ! grep -qE "$only" <<<"$name"; then continue; fi
      dir="$out/cases/$name"
      mkdir -p "$dir"
      "$bin/gdn-opt" "$expand" "${passes[@]}" "$source" -o "$dir/program.mlir"
      function="$layer"
      if [ "$kind" = train ]; then
        "$bin/gdn-opt" --gdn-generate-backward "$dir/program.mlir" -o "$dir/train.mlir"
        mv "$dir/train.mlir" "$dir/program.mlir"
        # The same generated pair in float64: the GPU's rounding alone is
        # measured, not the interpreter's bf16 storage on top.
        sed 's/bf16/f64/g; s/f32/f64/g' "$dir/program.mlir" >"$dir/program-f64.mlir"
        "$bin/gdn-run" "$dir/program-f64.mlir" --entry="$layer" --run-backward \
          --inputs "$inputs/global" --cotangents "$inputs/global" \
          --rank-files "$dir/ranks" >"$dir/reference.txt"
        echo "gdn_${layer}_forward" >"$dir/function"
        echo "gdn_${layer}_backward" >"$dir/backward"
        # docs/spec.md's gradient bounds: 8e-3, and 2e-2 for A_log's and
        # dt_bias's (the argument after A_log).
        echo 8e-3 >"$dir/rtol"
        printf 'grad%d 2e-2\ngrad%d 2e-2\n' "$a_log" "$((a_log + 1))" >"$dir/ranks/tolerances"
      else
        # The float64 result of the same P-rank program: its storage
        # rounding is not counted twice.
        sed 's/bf16/f64/g; s/f32/f64/g' "$dir/program.mlir" >"$dir/program-f64.mlir"
        "$bin/gdn-run" "$dir/program-f64.mlir" --inputs "$inputs/global" \
          --rank-files "$dir/ranks" >"$dir/reference.txt"
        echo "gdn_$function" >"$dir/function"
        echo 5e-3 >"$dir/rtol"
      fi
      # The reference the ranks put together are compared with.
      reference="${layer}_p1_$kind"; [ "$packing" = zigzag ] && reference="${layer}_p1z_$kind"
      [ "$name" = "$reference" ] || echo "$reference" >"$dir/against"
      "$bin/gdn-opt" --gdn-pipeline "$dir/program.mlir" -o "$dir/fused.mlir"
      "$bin/gdn-translate" --gdn-to-cuda "$dir/fused.mlir" -o "$dir/kernels.cu"
      "$bin/gdn-translate" --gdn-to-cuda-header "$dir/fused.mlir" -o "$dir/kernels.h"
      if grep -q "No whole-function entry point" "$dir/kernels.h"; then
        grep "No whole-function entry point" "$dir/kernels.h" >&2
        echo "prepare-parallel-gpu-tests: $name has no entry point" >&2
        exit 1
      fi
      echo "prepared $name ($(du -sh "$dir" | cut -f1))"
    done
  done
done
