#!/usr/bin/env bash
#===- prepare-gpu-tests.sh - everything the GPU run needs, built here -----===#
#
# The GPU machine has CUDA but no MLIR. This script does the compiler's part
# on this machine: for each case of test/Integration/Inputs it draws inputs and
# computes the float64 reference with gdn-run on the *unfused* program, fuses
# it (gdn-opt --gdn-pipeline) and emits the CUDA source and header
# (gdn-translate). The result, under device-carry/integration/<case>/, is what
# utils/gpu-integration.sh builds and checks on the GPU, where it also
# builds gdnrt from runtime/ (the entry points call it).
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out="${1:-$root/device-carry/integration}"
bin="$build/bin"
rm -rf "$out"
mkdir -p "$out"

# case-name | program | gdn-run options (lengths include 0, 1, 63, 64, 65) |
# gdn-fuse options (empty: the gdn-pipeline defaults) | backward (non-empty:
# the case is the program's generated backward, @<program>_backward, made
# by gdn-generate-backward after gdn-expand-layer, with save=<this field>
# unless it is just "backward"; inputs are drawn for it,
# so saved activations and cotangents are random tensors of their roles) |
# the results computed wholly or partly without the offsets (comma-separated:
# they may hold numbers when the offsets are invalid; every other result must
# be NaN) | gdn-expand-layer options (non-empty: the case is the program
# expanded with them; a forward one is checked against that program in
# float64 on the same inputs, since those options are about precision) |
# reference (f64: check a forward case against its program in float64, not
# against gdn-run's bf16 storage, whose own rounding would be counted twice).
# Sizes stay small: inputs travel to the GPU machine as float32 .npy files.
cases=(
  "prologue_gqa16x32|prologue_gqa16x32|--seqlens=1,63,64,65,0,100 --seed=1|"
  "prologue_states_padded|prologue_states_padded|--seqlens=0,1,63,64,65,7 --slots=8,8,64,72,72,8 --seed=3|"
  "prologue_states_long|prologue_states_padded|--seqlens=1000,3 --slots=1000,8 --seed=2|"
  "epilogue_gqa16x32|epilogue_gqa16x32|--seqlens=150 --seed=4|"
  # A sequence starting 2 rows before row 128 (a chunk boundary for 32- to
  # 128-row chunks), after a long one that range boundaries fall inside.
  "prologue_states_tile_edge|prologue_states_padded|--seqlens=126,5,200,1 --slots=126,5,200,1 --seed=5|"
  "prologue_final_state|prologue_final_state|--seqlens=0,1,2,3,130,64 --seed=6|"
  # Conv widths 3 and 2: the window's other unrolls and tails.
  "prologue_width3|prologue_width3|--seqlens=0,1,2,3,63,64,65,7 --slots=8,8,8,8,64,72,72,8 --seed=8|"
  "prologue_width2|prologue_width2|--seqlens=0,1,2,3,130,64 --seed=9|"
  # 4-row chunks over 4000 rows: more chunks than the GPU holds blocks, so
  # every row block walks several chunks and carries its conv window (and
  # its sequences' states) across chunk and range boundaries.
  "prologue_states_chunks|prologue_states_padded|--seqlens=700,1,65,1500,0,1,1700 --slots=704,8,72,1504,8,1,1703 --seed=7|threads=256 tokens-per-block=4 rows-in-flight=4"
  # The whole forward core: prologue + chunked delta rule, o and final
  # states, with initial states; chunk edges at 63/64/65 and a sequence
  # over several chunks.
  "core_gqa16x32|core_gqa16x32|--seqlens=1,64,0,65,130 --seed=10|"
  "core_gqa2x4_padded|core_gqa2x4_padded|--seqlens=0,1,63,64,65,130,7 --slots=8,8,64,72,72,136,8 --seed=11|"
  # Few long sequences: the entry point splits the chains at run time (8
  # scan blocks for 132 SMs: segments of 8 chunks, warm-ups before each).
  "core_gqa2x4_split|core_gqa2x4_padded|--seqlens=2500,3,0,700 --slots=2500,8,8,704 --seed=14|||||f64"
  # One value head per key head: the wgmma scan computes P itself and the
  # workspace holds none (scores = "scan"); a long sequence splits.
  "core_mha4|core_mha4|--seqlens=1,64,0,65,130,2000 --seed=16|"
  # Its backward: with one value head per key head and bf16 gradients the
  # reverse scan and the chunk gradients run as one fused kernel
  # (kFusedBackwardWgmma); the long sequence splits its chains.
  "core_mha4_backward|core_mha4|--seqlens=1,64,0,65,130,2000 --seed=17||backward|"
  # Whole layers at P = 1: the projections run on gdnrt_linear (cuBLASLt)
  # and split_qkvz as device copies, between the kernels, in one entry point.
  "layer_qwen3_next_small|layer_qwen3_next_small|--seqlens=1,63,64,65,0,130 --seed=12|"
  # (f32 projection outputs: a bf16 layer misses 5e-3 against float64 in
  # exact arithmetic already, docs/precision.md.)
  "layer_qwen3_next_small_f32p_split|layer_qwen3_next_small|--seqlens=1800,1 --seed=15||||f32-projections=true"
  "layer_qwen3_5_small_padded|layer_qwen3_5_small_padded|--seqlens=0,1,63,64,65,130,7 --slots=8,8,64,72,72,136,8 --seed=13|"
  # The delta-rule backward (gdn_kernel.delta_rule_grad): bf16 gradients of
  # q, k, v, fp32 of g, beta and the initial states, against gdn-run's
  # sweep within docs/spec.md's gradient tolerance (the rtol file below).
  "delta_rule_grad_gqa2x4_padded|delta_rule_grad_gqa2x4_padded|--seqlens=0,1,63,64,65,130,300 --slots=8,8,64,72,72,136,300 --seed=20|"
  # A whole core's backward with every option: conv bias, initial conv
  # states and their gradients, the final conv states' cotangents, beta
  # with negative eigenvalues, the gated RMSNorm; recomputed prologue,
  # delta-rule backward, prologue backward and epilogue backward kernels.
  # Results 8 and 9 (z's and the norm weight's gradients) come from the
  # gated RMSNorm backward on the saved output, which reads no offsets.
  "core_states_backward|core_states|--seqlens=0,1,63,64,65,130,300 --seed=21||backward|8,9"
  # Whole layers' backward at P = 1: the recomputed forward, the backward
  # kernels, the projections' gradients on gdnrt (cuBLASLt) and the merges
  # as copies, in one entry point. Computed without the offsets: the norm
  # weight's and out_proj's gradients, and z's rows of in_proj_qkvz's
  # (qwen3_next) or in_proj_z's (qwen3_5).
  "layer_qwen3_next_small_backward|layer_qwen3_next_small|--seqlens=1,63,64,65,0,130 --seed=22||backward|1,6,7"
  "layer_qwen3_5_small_padded_backward|layer_qwen3_5_small_padded|--seqlens=0,1,63,64,65,130,7 --slots=8,8,64,72,72,136,8 --seed=23||backward|2,8,9"
  # The same layers with f32 projection outputs (docs/precision.md): the
  # f32 GEMM outputs and copies, the prologue's f32 conv input, the norm's
  # f32 gate, and in the backward the kernels reading them.
  "layer_qwen3_next_small_f32p|layer_qwen3_next_small|--seqlens=1,63,64,65,0,130 --seed=12||||f32-projections=true"
  "layer_qwen3_5_small_padded_f32p|layer_qwen3_5_small_padded|--seqlens=0,1,63,64,65,130,7 --slots=8,8,64,72,72,136,8 --seed=13||||f32-projections=true"
  "layer_qwen3_next_small_f32p_backward|layer_qwen3_next_small|--seqlens=1,63,64,65,0,130 --seed=22||backward|1,6,7|f32-projections=true"
  "layer_qwen3_5_small_padded_f32p_backward|layer_qwen3_5_small_padded|--seqlens=0,1,63,64,65,130,7 --slots=8,8,64,72,72,136,8 --seed=23||backward|2,8,9|f32-projections=true"
  # save=operands: the backward reads the saved q, k, v, g, beta and normed
  # output; no recomputed prologue or norm, the prologue's gradient still
  # one kernel.
  "layer_qwen3_next_small_f32p_operands_backward|layer_qwen3_next_small|--seqlens=1,63,64,65,0,130 --seed=24||operands|1,6,7|f32-projections=true"
  # The data-movement ops' copy calls (2D, 3D, one 2D per row).
  "copies_split_regroup|copies_split_regroup|--seqlens=300 --seed=14|"
  # The backward's calls: gdn.linear_grad (x of rank 3 and 2) on gdnrt,
  # merge_qkv / merge_qkvz as copies, and the sum of the input projections'
  # x gradients folded into an accumulating GEMM; 4000 tokens, so the weight
  # gradients' token sums are long and the five runs must match bit for bit.
  "backward_projections|backward_projections|--seqlens=4000 --seed=15|"
)
for entry in "${cases[@]}"; do
  IFS='|' read -r name program options fuse backward packing_free expand reference <<<"$entry"
  source="$root/test/Integration/Inputs/$program.mlir"
  dir="$out/$name"
  mkdir -p "$dir/in" "$dir/expected"
  function="$program"
  expand_pass="--gdn-expand-layer${expand:+=$expand}"
  if [ -n "$expand" ] && [ -z "$backward" ]; then
    "$bin/gdn-opt" "$expand_pass" "$source" -o "$dir/program.mlir"
    source="$dir/program.mlir"
  fi
  if [ -n "$backward" ]; then
    generate=--gdn-generate-backward
    [ "$backward" = backward ] || generate="--gdn-generate-backward=save=$backward"
    "$bin/gdn-opt" "$expand_pass" "$generate" "$source" -o "$dir/program.mlir"
    source="$dir/program.mlir"
    function="${program}_backward"
    options="$options --entry=$function"
  fi
  # shellcheck disable=SC2086
  "$bin/gdn-run" "$source" $options --save-inputs "$dir/in" --outputs "$dir/expected" >"$dir/reference.txt"
  if { [ -n "$expand" ] || [ "$reference" = f64 ]; } && [ -z "$backward" ]; then
    sed 's/bf16/f64/g; s/f32/f64/g' "$source" >"$dir/program-f64.mlir"
    rm -rf "$dir/expected"
    # shellcheck disable=SC2086
    "$bin/gdn-run" "$dir/program-f64.mlir" $options --inputs "$dir/in" --outputs "$dir/expected" \
      >"$dir/reference.txt"
  fi
  if [ -z "$fuse" ]; then
    "$bin/gdn-opt" --gdn-pipeline "$source" -o "$dir/fused.mlir"
  else
    "$bin/gdn-opt" --gdn-expand-layer "--gdn-fuse=$fuse" --canonicalize --cse "$source" -o "$dir/fused.mlir"
  fi
  "$bin/gdn-translate" --gdn-to-cuda "$dir/fused.mlir" -o "$dir/kernels.cu"
  "$bin/gdn-translate" --gdn-to-cuda-header "$dir/fused.mlir" -o "$dir/kernels.h"
  echo "gdn_$function" >"$dir/function"
  if [ -n "$packing_free" ]; then echo "$packing_free" >"$dir/packing-free"; fi
  # Generated backwards are held to docs/spec.md's gradient tolerance
  # (backward_projections, GEMMs and copies only, to the stricter 5e-3).
  case "$function" in *_grad_* | *_backward) echo 8e-3 >"$dir/rtol" ;; esac
  echo "prepared $name ($(du -sh "$dir" | cut -f1))"
done

# Tile variants of the gqa16x32 prologue, for the benchmark (each is also
# checked on the first case's inputs): threads, tokens per block, rows in flight.
rm -rf "$out/../variants"
variants="${GDN_PROLOGUE_VARIANTS:-512,32,8 256,32,8 256,128,8}"
for variant in $variants; do
  IFS=, read -r threads tokens rows <<<"$variant"
  dir="$out/../variants/t${threads}_b${tokens}_r${rows}"
  rm -rf "$dir" && mkdir -p "$dir"
  "$bin/gdn-opt" "--gdn-fuse=threads=$threads tokens-per-block=$tokens rows-in-flight=$rows" \
    --canonicalize "$root/test/Integration/Inputs/prologue_gqa16x32.mlir" -o "$dir/fused.mlir"
  "$bin/gdn-translate" --gdn-to-cuda "$dir/fused.mlir" -o "$dir/kernels.cu"
  "$bin/gdn-translate" --gdn-to-cuda-header "$dir/fused.mlir" -o "$dir/kernels.h"
  echo "gdn_prologue_gqa16x32" >"$dir/function"
done
echo "prepared prologue variants: $variants"
