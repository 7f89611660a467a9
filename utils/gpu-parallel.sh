#!/usr/bin/env bash
#===- gpu-parallel.sh - the parallel layers on one GPU ---------------------===#
#
#   utils/gpu-parallel.sh [CASES]   (default device-carry/parallel)
#
# Runs on the GPU machine over what utils/prepare-parallel-gpu-tests.sh
# prepared: builds gdnrt (runtime/build.sh) and every case with the
# multi-rank harness (test/Integration/harness/run_ranks.cu, sm_90a), then
# runs each case on its S x P ranks as threads of one process through
# gdnrt's threads backend: every rank against gdn-run's float64 result for
# that rank (forward) or its results and gradients (train), three runs bit
# for bit; then the ranks' results put together against the P = 1 case's
# (a value without a layout, such as a weight's gradient, the same on every
# rank). P = 1 cases run first. A case listed in
# test/Integration/known-gaps.txt that misses its bound is checked again at
# the bound listed there (XFAIL), and fails the run if it no longer misses.
# Then the faults: a rank that never calls, or that leaves at once, must
# make the other ranks' entry points fail within the timeout, naming the
# collective and the rank (run_ranks fault).
# Prints one summary line per check as it ends (a run cut short still
# shows how far it got); exits non-zero if any fails.
# GDN_PREBUILT as in gpu-integration.sh.
#
# GDN_PARALLEL_LAUNCH=processes runs each case's ranks as processes of
# gdnrt-launch instead, one GPU each, joined by NCCL: the checks and the
# gathers as above, a case with more ranks than the machine has GPUs
# skipped (eight for the widest). Under NCCL the entry point only enqueues
# its collectives, so a fault shows when the check waits on the stream:
# gdnrt names the collective it stopped in and, through the progress board
# beside gdnrt-launch's rendezvous file, the rank that never entered it
# (docs/reliability.md). GDN_PARALLEL_FAULTS=0 skips the faults.
# gdnrt-launch is built here from runtime/tools/ (GDNRT_LAUNCH names
# another).
#
#===------------------------------------------------------------------------===#
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cases="${1:-$root/device-carry/parallel}/cases"
bench="${1:-$root/device-carry/parallel}/bench"
work="${OUT:-/tmp}/gpu-parallel"
# A fresh folder: a binary or a result of an earlier run must never stand in
# for one that failed to build or run.
rm -rf "$work" && mkdir -p "$work"
nvcc=${NVCC:-nvcc}
flags=(-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I "$root/kernels/include" -I "$root/runtime/include")
# One line per check, printed as it ends.
result() { echo "$1"; }
status=0

# How a case's ranks start: threads of the harness's process, or processes
# of gdnrt-launch (set_start: the prefix of a case's command).
launch_mode=${GDN_PARALLEL_LAUNCH:-threads}
case "$launch_mode" in
  threads) ;;
  processes)
    launch=${GDNRT_LAUNCH:-$work/gdnrt-launch}
    if [ -z "${GDNRT_LAUNCH:-}" ] &&
        ! ${CXX:-g++} -std=c++17 -O2 "$root/runtime/tools/gdnrt-launch.cpp" -o "$launch" \
          >"$work/gdnrt-launch.build.log" 2>&1; then
      cat "$work/gdnrt-launch.build.log"
      echo "FAIL build gdnrt-launch"
      exit 1
    fi
    # The GPUs this process may use: CUDA_VISIBLE_DEVICES's, else every one.
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
      gpus=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
    else
      gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    fi
    echo "ranks as processes of $launch, NCCL, $gpus GPU(s)"
    ;;
  *) echo "error: GDN_PARALLEL_LAUNCH must be threads or processes, got '$launch_mode'" >&2; exit 2 ;;
esac

gdnrt="$work/gdnrt"
bash "$root/utils/gpu-gdnrt.sh" "$gdnrt" || exit 1
link=(-cudart shared -L "$gdnrt" -lgdnrt -Xlinker "-rpath=$gdnrt")

rank_count() { # dir -> how many ranks its program runs on
  local count
  count=$(find "$1/ranks" -maxdepth 1 -name 'rank[0-9]*' -type d | wc -l)
  echo $((count > 0 ? count : 1))
}
start=() # the command prefix that starts a case's ranks (set_start)
set_start() { # dir
  start=()
  [ "$launch_mode" = processes ] || return 0
  start=("$launch" -n "$(rank_count "$1")" --timeout 600 --)
}
too_wide() { # dir -> true when its ranks, as processes, need more GPUs than there are
  [ "$launch_mode" = processes ] && [ "$(rank_count "$1")" -gt "$gpus" ]
}

build() { # dir exe
  if [ -n "${GDN_PREBUILT:-}" ] && [ -x "$GDN_PREBUILT/$(basename "$2")" ]; then
    cp "$GDN_PREBUILT/$(basename "$2")" "$2" && echo prebuilt >"$2.build.log"
    return
  fi
  local backward=()
  [ -f "$1/backward" ] && backward=(-DGDN_BACKWARD_FN="$(cat "$1/backward")")
  "$nvcc" "${flags[@]}" -I "$1" -DGDN_FN="$(cat "$1/function")" "${backward[@]}" \
    -DGDN_HEADER="\"kernels.h\"" "$1/kernels.cu" \
    "$root/test/Integration/harness/run_ranks.cu" "${link[@]}" -o "$2" >"$2.build.log" 2>&1 ||
    rm -f "$2"
}
# nvcc is the slow part; the GPU machine has cores to spare.
jobs=${GDN_BUILD_JOBS:-$(nproc)}
for dir in "$cases"/*/ "$bench"/*/; do
  [ -d "$dir" ] || continue
  while [ "$(jobs -r | wc -l)" -ge "$jobs" ]; do sleep 1; done
  build "$dir" "$work/$(basename "$dir")" &
done
wait

run_case() { # dir
  local dir=$1 name exe mode rtol against
  name=$(basename "$dir")
  exe="$work/$name"
  if [ ! -x "$exe" ]; then
    tail -n 30 "$exe.build.log"
    result "FAIL build $name"
    status=1
    return
  fi
  mode=check; [ -f "$dir/backward" ] && mode=train
  if too_wide "$dir"; then
    result "SKIP $mode $name: $(rank_count "$dir") ranks as processes need as many GPUs, this machine has $gpus"
    return
  fi
  rtol=$(cat "$dir/rtol")
  # A known gap: its bound, and the tensors it covers when the line names
  # them (third column "grad5,grad6": those alone get the bound, every
  # other check keeps its own; otherwise the bound replaces RTOL).
  local gap gapTensors gapRtol gapOverrides=""
  gap=$(awk -v c="$name" '$1 == c { print $2 }' "$root/test/Integration/known-gaps.txt")
  gapTensors=$(awk -v c="$name" '$1 == c && $3 ~ /^(grad|result)[0-9]/ { print $3 }' \
    "$root/test/Integration/known-gaps.txt")
  gapRtol=$gap
  if [ -n "$gapTensors" ]; then
    gapRtol=$rtol
    gapOverrides=$(tr ',' '\n' <<<"$gapTensors" | sed "s/\$/=$gap/" | paste -sd, -)
  fi
  rm -rf "$work/$name-out" && mkdir -p "$work/$name-out"
  set_start "$dir"
  if "${start[@]}" "$exe" "$mode" "$dir/ranks" "$dir/ranks" "$work/$name-out" "$rtol" \
      >"$work/$name.log" 2>&1; then
    if [ -n "$gap" ]; then
      result "XPASS $mode $name: within $rtol now, remove it from test/Integration/known-gaps.txt"
      status=1
    else
      result "PASS $mode $name"
    fi
  elif [ -n "$gap" ] && GDN_TOLERANCE_OVERRIDES=$gapOverrides "${start[@]}" "$exe" "$mode" \
      "$dir/ranks" "$dir/ranks" "$work/$name-out" "$gapRtol" >"$work/$name.gap.log" 2>&1; then
    if [ -n "$gapTensors" ]; then
      result "XFAIL $mode $name: $gapTensors over their bounds, within the known-gap bound $gap (test/Integration/known-gaps.txt)"
    else
      result "XFAIL $mode $name: over $rtol, within its known-gap bound $gap (test/Integration/known-gaps.txt)"
    fi
  else
    grep -E "FAIL|error" "$work/$name.log" | head -n 20
    result "FAIL $mode $name"
    status=1
  fi
  against=()
  [ -f "$dir/against" ] && against=("$work/$(cat "$dir/against")-out/rank0")
  if "$exe" gather "$work/$name-out" "$dir/ranks" "$rtol" "${against[@]}" \
      >"$work/$name.gather.log" 2>&1; then
    result "PASS gather $name${against[0]:+ (against $(cat "$dir/against"))}"
  else
    grep -E "FAIL" "$work/$name.gather.log" | head -n 20
    result "FAIL gather $name"
    status=1
  fi
}
for dir in "$cases"/*_p1_*/ "$cases"/*_p1z_*/; do
  [ -d "$dir" ] && run_case "$dir"
done
for dir in "$cases"/*/; do
  [ -d "$dir" ] || continue
  case "$(basename "$dir")" in *_p1_* | *_p1z_*) continue ;; esac
  run_case "$dir"
done

# Faults: a rank that never calls, or that destroys its communicator at
# once, makes the others' entry points fail within the timeout, naming the
# collective and the rank, on a chunkwise and a headwise program.
for name in layer_qwen3_next_small_cw2_forward layer_qwen3_next_small_hw2_forward; do
  [ -x "$work/$name" ] || continue
  if [ "${GDN_PARALLEL_FAULTS:-1}" = 0 ]; then
    result "SKIP faults $name: GDN_PARALLEL_FAULTS=0"
    continue
  fi
  too_wide "$cases/$name" && continue
  set_start "$cases/$name"
  # Processes take longer to join than threads (a CUDA context each, then
  # NCCL's set-up), all within the timeout.
  timeout_ms=2000; [ "$launch_mode" = processes ] && timeout_ms=10000
  for kind in absent abort; do
    if GDN_HARNESS_TIMEOUT_MS=$timeout_ms timeout 120 "${start[@]}" "$work/$name" fault \
        "$cases/$name/ranks" "$kind" \
        >"$work/$name.fault-$kind.log" 2>&1; then
      result "PASS fault $kind $name"
    else
      grep -E "FAIL" "$work/$name.fault-$kind.log" | head -n 10
      result "FAIL fault $kind $name"
      status=1
    fi
  done
done

# Timings (GDN_PARALLEL_BENCH=1 cases): forward and backward of each
# distribution on its ranks at once, with the bytes each rank sends.
for dir in "$bench"/*/; do
  [ -d "$dir" ] || continue
  name=$(basename "$dir")
  exe="$work/$name"
  [ -x "$exe" ] || { tail -n 30 "$exe.build.log"; result "FAIL build $name"; status=1; continue; }
  read -r -a shapes <"$dir/shapes"
  env_shapes=()
  for i in "${!shapes[@]}"; do
    [ "${shapes[$i]}" = - ] || env_shapes+=("GDN_ARG${i}_SHAPE=${shapes[$i]}")
  done
  for lengths in ${GDN_BENCH_LENGTHS:-8192,8192,8192,8192 2048,2048,2048,2048}; do
    if env "${env_shapes[@]}" "$exe" bench "$lengths" "${GDN_BENCH_ITERS:-20}" \
        >>"$work/$name.bench.log" 2>&1; then
      result "$name: $(grep BENCH "$work/$name.bench.log" | tail -n 1)"
    else
      tail -n 5 "$work/$name.bench.log"
      result "FAIL bench $name $lengths"
      status=1
    fi
  done
done

exit $status
