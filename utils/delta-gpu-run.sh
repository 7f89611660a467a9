#!/usr/bin/env bash
#===- delta-gpu-run.sh - check and time the delta-rule kernels on a GPU ----===#
#
# What runs on the GPU machine (nvcc 13, sm_90a H200, torch; no MLIR needed):
# builds test/Integration/harness/delta_rule_bench.cu against kernels/include
# and runtime/include, runs `check` (float64 CPU reference, padding, packed ==
# alone, determinism) then `bench` (reference shapes, every variant) and `split`
# (the configuration generated code runs: chains split by the host rule) and
# `fused` (the experimental one-kernel forward), then FLA's
# chunk_gated_delta_rule on the same shapes when the fla package imports (from
# PYTHONPATH, or installed here from .whl/, see fetch-fla-wheels.sh). Logs go to
# $OUT/delta (or /tmp/delta); the summary comes last, with FLA's time over ours
# per shape (RATIO lines). NVCC overrides the compiler; NVCC_CCBIN sets its host
# compiler (g++-12 on the build machine). MODES picks the phases (default "check
# bench split fused targets fla"; e.g. MODES="split fla" for the split bench and
# FLA alone). BENCH_SETTLE=cold|hot, passed on to delta_rule_bench and the FLA
# script, puts the GPU in the same power state before every row (unset: the rows
# before decide; docs/performance.md, Method), and BENCH_ONLY times only the
# rows whose name contains it. BENCH_EXE runs a delta_rule_bench built
# beforehand (on the build machine, whose nvcc makes binaries that run there)
# instead of building one: minutes of device time.
#
#===------------------------------------------------------------------------===#
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${OUT:-/tmp}/delta"
mkdir -p "$work"
nvcc=${NVCC:-nvcc}
ccbin=(); [ -n "${NVCC_CCBIN:-}" ] && ccbin=(-ccbin "$NVCC_CCBIN")
exe="$work/delta_rule_bench"
summary=()
status=0
modes=" ${MODES:-check bench split fused targets fla} "
want() { [[ "$modes" == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null
echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
# The SM clock and power every 100 ms over the run (the summary prints their
# spread): at its power limit the H200's clock drops, and the times with it.
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 \
  >"$work/clocks.csv" 2>/dev/null &
sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT

if [ -n "${BENCH_EXE:-}" ]; then
  [ -x "$BENCH_EXE" ] || { echo "FAIL BENCH_EXE=$BENCH_EXE is not an executable: build delta_rule_bench there first, or unset BENCH_EXE"; exit 1; }
  exe=$BENCH_EXE
  summary+=("PASS delta_rule_bench given: $BENCH_EXE (not built here)")
elif "$nvcc" "${ccbin[@]}" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \
     -Xptxas -v -I "$root/kernels/include" -I "$root/runtime/include" \
     "$root/test/Integration/harness/delta_rule_bench.cu" -o "$exe" >"$work/build.log" 2>&1; then
  summary+=("PASS build delta_rule_bench")
  # Registers and spills of the delta-rule kernels, one line per kernel.
  awk '/Compiling entry function/ { name = $0; keep = name ~ /deltaChunk/ }
       keep && /spill stores/ { spills = $0; sub(/.*frame, /, "", spills) }
       keep && /Used [0-9]+ registers/ {
         kernel = name; sub(/.*deltaChunk/, "deltaChunk", kernel); sub(/Kernel.*/, "Kernel", kernel)
         config = name; sub(/.*ConfigI/, "", config); sub(/EEEE.*/, "", config)
         gsub(/Li/, " ", config); gsub(/Lb/, " ", config); gsub(/E/, "", config)
         regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
         printf "ptxas %s <H HV d Vt init final stages groups firstversion> =%s: %s registers, %s\n", kernel, config, regs, spills
       }' "$work/build.log" | sort -u
else
  cat "$work/build.log"
  echo "FAIL build delta_rule_bench"
  exit 1
fi

if ! want check; then
  summary+=("SKIP delta check (MODES)")
elif "$exe" check 2>&1 | tee "$work/check.log"; then
  summary+=("PASS delta check")
else
  summary+=("FAIL delta check (see $work/check.log)")
  status=1
  # Diagnosis: the same check with plain shared loads instead of ldmatrix.
  if "$nvcc" "${ccbin[@]}" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \
       -DGDN_MMA_LDMATRIX=0 -I "$root/kernels/include" -I "$root/runtime/include" \
       "$root/test/Integration/harness/delta_rule_bench.cu" -o "$exe.plain" \
       >"$work/build.plain.log" 2>&1 &&
     "$exe.plain" check >"$work/check.plain.log" 2>&1; then
    summary+=("INFO delta check passes with GDN_MMA_LDMATRIX=0: ldmatrix is at fault")
  else
    summary+=("INFO delta check fails with GDN_MMA_LDMATRIX=0 too (see $work/check.plain.log)")
  fi
fi

# One bench mode of delta_rule_bench (50 iterations), logged to
# $work/<mode>.log, unless MODES leaves it out.
run_bench() {
  local mode=$1 label=$2
  if ! want "$mode"; then
    summary+=("SKIP $label (MODES)")
  elif "$exe" "$mode" 50 2>&1 | tee "$work/$mode.log"; then
    summary+=("PASS $label ran")
  else
    summary+=("FAIL $label (see $work/$mode.log)")
    status=1
  fi
}
run_bench bench "delta bench"
# What generated code runs: the wide wgmma tile with chains split by the
# host rule (target mixes, slow gates, exact segments).
run_bench split "delta split bench"
# The experimental one-kernel forward against the two kernels.
run_bench fused "delta fused bench"
# The target shapes as generated code runs them, beside the previous
# defaults.
run_bench targets "delta targets bench"

# The FLA wheels of utils/fetch-fla-wheels.sh, when carried along in .whl/.
if ! python3 -c "import fla" 2>/dev/null && ls "$root"/.whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target "$work/site" "$root"/.whl/*.whl &&
    export PYTHONPATH="$work/site${PYTHONPATH:+:$PYTHONPATH}"
fi
if ! want fla; then
  summary+=("SKIP FLA baseline (MODES)")
elif python3 -c "import fla" 2>/dev/null; then
  if FLA_DISABLE_BACKEND_DISPATCH=1 python3 "$root/utils/bench_delta_vs_fla.py" 2>&1 |
       tee "$work/fla.log"; then
    summary+=("PASS FLA baseline ran")
  else
    summary+=("FAIL FLA baseline (see $work/fla.log)")
    status=1
  fi
else
  summary+=("SKIP FLA baseline (python cannot import fla; put the wheel on PYTHONPATH)")
fi

kill $sampler 2>/dev/null
echo
echo "=== summary ==="
grep -h "^FAIL" "$work/check.log" 2>/dev/null
grep -h "^BENCH" "$work/bench.log" "$work/split.log" "$work/fused.log" \
  "$work/targets.log" 2>/dev/null
grep -h "^FLA " "$work/fla.log" 2>/dev/null
python3 - "$work/clocks.csv" <<'PY' 2>/dev/null
import sys
rows = [line.split(",") for line in open(sys.argv[1])]
sm = sorted(float(r[0]) for r in rows if len(r) == 2)
watts = sorted(float(r[1]) for r in rows if len(r) == 2)
at = lambda v, f: v[int(f * (len(v) - 1))]
print(f"GPU over the run: SM clock p10 {at(sm, .1):.0f} p50 {at(sm, .5):.0f} "
      f"max {sm[-1]:.0f} MHz; power p50 {at(watts, .5):.0f} p90 {at(watts, .9):.0f} "
      f"max {watts[-1]:.0f} W")
PY
# Per shape: what generated code runs (the targets mode's "default" rows,
# else the split bench's first row) against FLA's CUDA-graph time from the
# same script.
python3 - "$work/targets.log" "$work/split.log" "$work/fla.log" <<'PY' 2>/dev/null
import re, sys
ours = {}
for path in sys.argv[1:3]:
    try:
        lines = open(path).readlines()
    except OSError:
        continue
    for line in lines:
        m = re.match(r"BENCH (\S+) (\S+)\s+(\d+x\d+)\s+([\d.]+) ms .*\[split \d+, gates x 1\]", line)
        if m and (path == sys.argv[2] or m[2] == "default"):
            ours.setdefault((m[1], m[3]), float(m[4]))
for line in open(sys.argv[3]):
    m = re.match(r"FLA (\S+)\s+(\d+x\d+)\s+warm [\d.]+ ms\s+graph ([\d.]+) ms", line)
    if m and (m[1], m[2]) in ours:
        o = ours[(m[1], m[2])]
        print(f"RATIO {m[1]:9} {m[2]:9} ours {o:.4f} ms  FLA {float(m[3]):.4f} ms  FLA/ours {float(m[3]) / o:.2f}x")
PY
printf '%s\n' "${summary[@]}"
exit $status
