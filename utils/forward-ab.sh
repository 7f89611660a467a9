#!/usr/bin/env bash
#===- forward-ab.sh - A/B the delta-rule forward's builds on the GPU ------===#
#
# Runs on the GPU machine over binaries built elsewhere (the build machine's
# nvcc makes binaries that run there), so that one device call compares
# several variants of the forward under the same GPU and power state:
#
#   DIR/bench_NAME      delta_rule_bench built against one variant's
#                       runtime/include (NAME = base for the reference)
#   DIR/timeline_NAME   optional: test/Integration/harness/scan_timeline.cu
#                       against that variant's headers marked by
#                       utils/scan-timeline.py
#
# For every variant: `digest` against base's (o, final states and the
# workspace of nine configs: a schedule change must keep every bit), then
# `check` for each variant but base (CHECK=0 skips it), then ROUNDS
# (default 2) rounds of `targets` with BENCH_SETTLE=cold (3 s idle before
# every row) and BENCH_ONLY (default "default": the rows the compiler
# picks), the variants alternating within each round, then the timelines.
# The summary comes last: each row's medians per variant and round (the
# forward, then the prepare kernel and the scan block timed alone), and
# each variant's ratio to base. Logs go to AB_WORK (default /tmp/ab), all
# of them also into one file, $OUT/forward-ab.log, where OUT is set (the
# device tool brings back at most eight files).
#
#   utils/forward-ab.sh device-carry/ab
#
#===------------------------------------------------------------------------===#
set -uo pipefail

dir=${1:?usage: forward-ab.sh DIR (with DIR/bench_base and DIR/bench_NAME)}
work="${AB_WORK:-/tmp/ab}"
mkdir -p "$work"
rounds=${ROUNDS:-2}
only=${BENCH_ONLY-default}
[ -x "$dir/bench_base" ] || {
  echo "forward-ab: no $dir/bench_base: build delta_rule_bench against the reference headers as bench_base" >&2
  exit 2
}
# This script's own logs of an earlier run (the machine may be the same).
rm -f "$work"/digest_*.log "$work"/digest_*.diff "$work"/check_*.log \
  "$work"/targets_*.log "$work"/timeline_*.log "$work"/summary.txt
variants=(base)
for bench in "$dir"/bench_*; do
  name=${bench##*/bench_}
  [ "$name" = base ] || variants+=("$name")
done
status=0
summary=()

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null

# Digests: every variant must compute base's bits.
for name in "${variants[@]}"; do
  "$dir/bench_$name" digest >"$work/digest_$name.log" 2>&1 ||
    { summary+=("FAIL digest $name"); status=1; }
done
for name in "${variants[@]:1}"; do
  if diff <(grep DIGEST "$work/digest_base.log") \
          <(grep DIGEST "$work/digest_$name.log") >"$work/digest_$name.diff"; then
    summary+=("PASS digest $name equals base ($(grep -c DIGEST "$work/digest_base.log") configs)")
  else
    summary+=("DIFFER digest $name (see $work/digest_$name.diff)")
  fi
done

if [ "${CHECK:-1}" != 0 ]; then
  for name in "${variants[@]:1}"; do
    if "$dir/bench_$name" check >"$work/check_$name.log" 2>&1; then
      summary+=("PASS check $name: $(grep -c '^PASS' "$work/check_$name.log") PASS")
    else
      summary+=("FAIL check $name: $(grep -c '^FAIL' "$work/check_$name.log") FAIL (see $work/check_$name.log)")
      status=1
    fi
  done
fi

for round in $(seq 1 "$rounds"); do
  for name in "${variants[@]}"; do
    BENCH_SETTLE=cold BENCH_ONLY=$only "$dir/bench_$name" targets 50 \
      >"$work/targets_${name}_$round.log" 2>&1 ||
      { summary+=("FAIL targets $name round $round"); status=1; }
  done
done

for name in "${variants[@]}"; do
  if [ -x "$dir/timeline_$name" ]; then
    "$dir/timeline_$name" >"$work/timeline_$name.log" 2>&1 ||
      summary+=("FAIL timeline $name")
  fi
done

# The table: one line per variant and row, the rounds' medians side by side,
# and the ratio of the rounds' mean to base's; then each timeline's means
# per phase and the PASS / FAIL lines.
{
python3 - "$work" "$rounds" "${variants[@]}" <<'PY'
import os, re, sys
work, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times = {}
for name in names:
    for r in range(1, rounds + 1):
        log = '%s/targets_%s_%d.log' % (work, name, r)
        if not os.path.exists(log):  # a FAIL line says why
            continue
        for line in open(log):
            m = re.match(r'BENCH (.*?)\s+([0-9.]+) ms .*?prepare ([0-9.]+), scan ([0-9.]+)', line)
            if m:
                times.setdefault(m.group(1).strip(), {}).setdefault(name, []).append(
                    tuple(float(m.group(k)) for k in (2, 3, 4)))
for row, per in times.items():
    mean = lambda runs: sum(run[0] for run in runs) / len(runs)
    column = lambda runs, k: ' / '.join('%.4f' % run[k] for run in runs)
    base = per.get('base')
    for name in names:
        if name not in per:
            continue
        ratio = ' %+.1f%%' % (100 * (mean(per[name]) / mean(base) - 1)) if base and name != 'base' else ''
        print('AB %-32s %-8s %s (prepare %s, scan %s)%s' % (
            row, name, column(per[name], 0), column(per[name], 1),
            column(per[name], 2), ratio))
PY
for name in "${variants[@]}"; do
  [ -f "$work/timeline_$name.log" ] &&
    { echo "== timeline $name"; grep -A3 'mean cycles' "$work/timeline_$name.log"; }
done
printf '%s\n' "${summary[@]}"
} | tee "$work/summary.txt"
if [ -n "${OUT:-}" ]; then
  for log in "$work"/summary.txt "$work"/*.log "$work"/*.diff; do
    [ -f "$log" ] && { echo "==== ${log##*/}"; cat "$log"; }
  done >"$OUT/forward-ab.log"
fi
exit $status
