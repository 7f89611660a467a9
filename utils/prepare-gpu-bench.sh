#!/usr/bin/env bash
#===- prepare-gpu-bench.sh - generated functions to time on the GPU ------===#
#
# Emits, for each program below, the CUDA of one generated function (forward
# or backward) and the argument shapes utils/gpu-bench.sh times it at
# (GDN_ARG<i>_SHAPE, T = tokens, N = sequences). No inputs travel: the bench
# draws random ones on the GPU.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out="${1:-$root/device-carry/bench}"
bin="$build/bin"
rm -rf "$out"
mkdir -p "$out"

# name | program (test/Integration/Inputs) | function | argument shapes, in
# order (- for cu_seqlens, which the bench makes from the lengths)
benches=(
  # The GDN core of gqa16x32 (conv input, conv, a, b, A_log, dt_bias, S0):
  # forward, and the backward gdn-generate-backward makes (the forward's
  # arguments, then the cotangents of o and of the final state).
  "core_gqa16x32|core_gqa16x32|core_gqa16x32|Tx8192 8192x4 Tx32 Tx32 32 32 Nx32x128x128 -"
  "core_gqa16x32_backward|core_gqa16x32|core_gqa16x32_backward|Tx8192 8192x4 Tx32 Tx32 32 32 Nx32x128x128 - Tx32x128 Nx32x128x128"
  # The whole Qwen3-Next layer (x, cu_seqlens, in_proj_qkvz, in_proj_ba,
  # conv, A_log, dt_bias, norm, out_proj): the forward that saves what the
  # backward reads (save=inputs: o and the two projections' outputs), and
  # the backward (then o, qkvz, ba and the cotangent of y).
  "layer_gqa16x32_forward|layer_qwen3_next_gqa16x32|layer_qwen3_next_gqa16x32_forward|Tx2048 - 12288x2048 64x2048 8192x4 32 32 128 2048x4096"
  "layer_gqa16x32_backward|layer_qwen3_next_gqa16x32|layer_qwen3_next_gqa16x32_backward|Tx2048 - 12288x2048 64x2048 8192x4 32 32 128 2048x4096 Tx32x128 Tx12288 Tx64 Tx2048"
)
for entry in "${benches[@]}"; do
  IFS='|' read -r name program function shapes <<<"$entry"
  dir="$out/$name"
  mkdir -p "$dir"
  source="$root/test/Integration/Inputs/$program.mlir"
  "$bin/gdn-opt" --gdn-expand-layer --gdn-generate-backward --gdn-pipeline "$source" -o "$dir/fused.mlir"
  "$bin/gdn-translate" --gdn-to-cuda "$dir/fused.mlir" -o "$dir/kernels.cu"
  "$bin/gdn-translate" --gdn-to-cuda-header "$dir/fused.mlir" -o "$dir/kernels.h"
  echo "gdn_$function" >"$dir/function"
  echo "$shapes" >"$dir/shapes"
  echo "prepared $name"
done
