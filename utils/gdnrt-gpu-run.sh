#!/usr/bin/env bash
#===- gdnrt-gpu-run.sh - the runtime's GPU suite and GEMM benchmark -------===#
#
#   utils/gdnrt-gpu-run.sh prepare   # here: copy the built binaries into
#                                      # gpu-run/gdnrt (carry "gpu-run")
#   utils/gdnrt-gpu-run.sh run       # on the GPU machine
#
# `run` executes the whole suite of one process (OneRank.*: every collective
# on NCCL, the executor's copies and GEMMs, gdnrt_linear, communicators made
# every way, the error paths; Threads.*: the threads backend with 1 to 4
# thread ranks on device 0 and, with several GPUs, ranks spread over them),
# the communicator test under gdnrt-launch -n 1, gdnrt_run_ranks under
# gdnrt-launch -n 2 --threads and -n 1, the multi-rank suite under
# gdnrt-launch -n <GPUs> when there are at least two, and the GEMM
# benchmark. Logs go to $OUT when it is set.
#
#===------------------------------------------------------------------------===#
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/gpu-run/gdnrt"

case "${1:-}" in
prepare)
  mkdir -p "$dir"
  cp "$root/build/unittests/GDNRuntimeGpuTests" "$root/build/bin/gdnrt-launch" "$dir/"
  echo "prepared $dir: carry [\"gpu-run\"] and run utils/gdnrt-gpu-run.sh run"
  ;;
run)
  out="${OUT:-/tmp}/gdnrt"
  mkdir -p "$out"
  status=0
  gpus=$(nvidia-smi -L | wc -l)
  echo "== $gpus GPU(s)"
  echo "== the suite of one process (OneRank.*, Threads.*; MultiRank.* skips)"
  "$dir/GDNRuntimeGpuTests" 2>&1 | tee "$out/one-rank.log" | tail -n 25
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  grep -q "FAILED" "$out/one-rank.log" && status=1
  grep -E "^\[ +(OK|FAILED|SKIPPED) +\] Threads\." "$out/one-rank.log"
  echo "== gdnrt-launch -n 1 (communicator from the environment)"
  "$dir/gdnrt-launch" -n 1 --timeout 120 -- "$dir/GDNRuntimeGpuTests" \
    --gtest_filter=OneRank.CommunicatorsEveryWay --gtest_brief=1 2>&1 |
    tee "$out/launch-one.log" | tail -n 3
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  for mode in "-n 2 --threads" "-n 1"; do
    echo "== gdnrt-launch $mode: gdnrt_run_ranks"
    # shellcheck disable=SC2086
    "$dir/gdnrt-launch" $mode --timeout 300 -- "$dir/GDNRuntimeGpuTests" \
      --gtest_filter=Threads.RunRanksRunsOneProgramEitherWay --gtest_brief=1 \
      2>&1 | tee "$out/run-ranks${mode// /_}.log" | tail -n 3
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
  if [ "$gpus" -ge 2 ]; then
    for rendezvous in file tcp; do
      echo "== gdnrt-launch -n $gpus --rendezvous $rendezvous: MultiRank"
      "$dir/gdnrt-launch" -n "$gpus" --rendezvous "$rendezvous" --timeout 300 -- \
        "$dir/GDNRuntimeGpuTests" --gtest_filter='MultiRank.*' --gtest_brief=1 \
        2>&1 | tee "$out/multi-$rendezvous.log" | tail -n 6
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
  else
    echo "== MultiRank skipped: one GPU"
  fi
  echo "== GEMM benchmark"
  "$dir/GDNRuntimeGpuTests" --benchmark 2>&1 | tee "$out/gemm.log" || status=1
  exit $status
  ;;
*)
  echo "usage: $0 prepare|run" >&2
  exit 2
  ;;
esac
