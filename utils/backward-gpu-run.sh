#!/usr/bin/env bash
#===- backward-gpu-run.sh - check and time the backward kernels on a GPU -===#
#
# The GPU side of utils/prepare-backward-gpu-tests.sh (nvcc 13, an sm_90a GPU;
# no MLIR): builds test/Integration/harness/backward_check.cu against
# kernels/include and runtime/include (or takes a prebuilt one from
# BACKWARD_CHECK_BIN), runs `check` on the prepared cases (gdn-run's float64
# gradients, docs/spec.md tolerances, 5 runs byte-identical, packed == alone,
# padding, invalid metadata) then `bench` (reference shape, against a device
# copy of the same bytes). Logs go to $OUT/backward (or /tmp/backward); the
# summary comes last.
#
#   utils/backward-gpu-run.sh DATA [REPS]
#
# NVCC overrides the compiler; NVCC_CCBIN sets its host compiler (g++-12 on
# the build machine).
#
#===------------------------------------------------------------------------===#
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data="${1:?usage: backward-gpu-run.sh DATA [REPS]}"
reps="${2:-20}"
work="${OUT:-/tmp}/backward"
mkdir -p "$work"
nvcc=${NVCC:-nvcc}
ccbin=(); [ -n "${NVCC_CCBIN:-}" ] && ccbin=(-ccbin "$NVCC_CCBIN")
summary=()
status=0

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null
echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"

exe="${BACKWARD_CHECK_BIN:-}"
if [ -z "$exe" ]; then
  exe="$work/backward_check"
  if "$nvcc" "${ccbin[@]}" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \
       -Xptxas -v -I "$root/kernels/include" -I "$root/runtime/include" -I "$root/test/Integration/harness" \
       "$root/test/Integration/harness/backward_check.cu" -o "$exe" >"$work/build.log" 2>&1; then
    summary+=("PASS build backward_check")
  else
    cat "$work/build.log"
    echo "FAIL build backward_check"
    exit 1
  fi
fi

# The prepared cases, decompressed.
rm -rf "$work/data"
mkdir -p "$work/data"
cp -r "$data"/. "$work/data/"
rm -rf "$work/data/src"
find "$work/data" -name '*.npy.gz' -exec gunzip {} +

if "$exe" check "$work/data" 2>&1 | tee "$work/check.log"; then
  summary+=("PASS backward check")
else
  summary+=("FAIL backward check (see $work/check.log)")
  status=1
fi

if "$exe" bench "$reps" 2>&1 | tee "$work/bench.log"; then
  summary+=("PASS backward bench ran")
else
  summary+=("FAIL backward bench (see $work/bench.log)")
  status=1
fi

echo
echo "=== summary ==="
grep -h "^FAIL\|^PASS check\|checks passed" "$work/check.log" 2>/dev/null
grep -h "^BENCH\|^FAIL\|^PASS bench" "$work/bench.log" 2>/dev/null
printf '%s\n' "${summary[@]}"
exit $status
