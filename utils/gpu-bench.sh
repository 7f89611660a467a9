#!/usr/bin/env bash
#===- gpu-bench.sh - time generated functions on the GPU -----------------===#
#
# Runs on the GPU machine over what utils/prepare-gpu-bench.sh prepared:
# builds gdnrt and each function with the generic harness
# (test/Integration/harness/run_function.cu), then times each at the
# reference packings of docs/spec.md (CUDA events, median, random inputs).
#
#===------------------------------------------------------------------------===#
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
benches="${1:-$root/device-carry/bench}"
work="${OUT:-/tmp}/gpu-bench"
iterations="${ITERATIONS:-20}"
# The packings: 8 sequences of 4096, 4 of 8192, one of 32768, 4 of 2048.
packings="${PACKINGS:-4096,4096,4096,4096,4096,4096,4096,4096 8192,8192,8192,8192 32768 2048,2048,2048,2048}"
mkdir -p "$work"
nvcc=${NVCC:-nvcc}
gdnrt="$work/gdnrt"
GDN_PREBUILT= bash "$root/utils/gpu-gdnrt.sh" "$gdnrt" || exit 1
for dir in "$benches"/*/; do
  name=$(basename "$dir")
  "$nvcc" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I "$root/kernels/include" -I "$root/runtime/include" \
    -I "$dir" -DGDN_FN="$(cat "$dir/function")" -DGDN_HEADER="\"kernels.h\"" \
    "$dir/kernels.cu" "$root/test/Integration/harness/run_function.cu" \
    -cudart shared -L "$gdnrt" -lgdnrt -Xlinker "-rpath=$gdnrt" \
    -o "$work/$name" >"$work/$name.build.log" 2>&1 &
done
wait
status=0
for dir in "$benches"/*/; do
  name=$(basename "$dir")
  if [ ! -x "$work/$name" ]; then
    cat "$work/$name.build.log"; echo "FAIL build $name"; status=1; continue
  fi
  index=0
  for shape in $(cat "$dir/shapes"); do
    [ "$shape" = "-" ] || export "GDN_ARG${index}_SHAPE=$shape"
    index=$((index + 1))
  done
  for lengths in $packings; do
    "$work/$name" bench "$lengths" "$iterations" | sed "s/^BENCH /BENCH $name /" || status=1
  done
  for i in $(seq 0 $((index - 1))); do unset "GDN_ARG${i}_SHAPE"; done
done
exit $status
