#!/usr/bin/env bash
#===- fuzz.sh - run the fuzzers over the sanitized build ------------------===#
#
#   utils/fuzz.sh [SECONDS]        each fuzzer for SECONDS (default 600)
#   utils/fuzz.sh --runs N         each fuzzer for N inputs from a fixed
#                                    seed: repeatable, what the test command
#                                    runs
#
# Builds gdn-compile-fuzzer and gdn-run-fuzzer (utils/build-sanitized.sh:
# ASan, UBSan, libFuzzer) and runs each from a corpus seeded from the test
# suite: every .mlir under test/ and examples/ (split at `// -----` like
# -split-input-file) for the compiler, and offsets as .npy files and
# --seqlens/--slots strings (valid, zero-length, padded, invalid) for the
# interpreter. A timed run's corpus grows in build-sanitize/fuzz/<fuzzer>/
# corpus across runs (a counted run starts from the seeds alone); a crash,
# sanitizer report (build_tools/sanitizer-env.sh), timeout or out-of-memory
# leaves its input in build-sanitize/fuzz/<fuzzer>/ and fails the script.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SANITIZE_BUILD_DIR:-$root/build-sanitize}"
limit=(-max_total_time=600)
case "${1:-}" in
--runs) limit=(-runs="${2:?--runs N}" -seed=1) ;;
"") ;;
*) limit=(-max_total_time="$1") ;;
esac

mkdir -p "$build"
"$root/utils/build-sanitized.sh" gdn-compile-fuzzer gdn-run-fuzzer >"$build/fuzz-build.log" 2>&1 ||
  { tail -n 40 "$build/fuzz-build.log"; echo "fuzz: the build failed" >&2; exit 1; }

seed_compile() { # dir
  local n=0
  while IFS= read -r -d '' file; do
    # One seed per -split-input-file chunk.
    awk -v out="$1/seed-$n" '
      /^\/\/ -----/ { chunk++; next }
      { print > (out "-" chunk) }' "$file"
    n=$((n + 1))
  done < <(find "$root/test" "$root/examples" -name '*.mlir' -print0)
}
seed_run() { # dir
  local npy="$root/test/Interpreter/Inputs/make_npy.py"
  python3 "$npy" "$1/valid.npy" '<i4' 4 0 5 5 12
  python3 "$npy" "$1/decreasing.npy" '<i4' 4 0 5 3 12
  python3 "$npy" "$1/fractional.npy" '<f8' 4 0 2.5 5 8
  python3 "$npy" "$1/wide.npy" '<i8' 3 0 4294967296 4294967300
  python3 "$npy" "$1/huge-negative.npy" '<f8' 3 0 -3e284 8
  printf '#5,0,1,64' >"$1/seqlens"
  printf '#5,0,1,63;8,0,8,64' >"$1/slots"
  printf '#3,4;2' >"$1/short-slots"
}

source "$root/build_tools/sanitizer-env.sh"
status=0
for fuzzer in gdn-compile-fuzzer gdn-run-fuzzer; do
  dir="$build/fuzz/$fuzzer"
  rm -rf "$dir/seeds" && mkdir -p "$dir/corpus" "$dir/seeds"
  # A counted run starts from the seeds alone, so it repeats; a timed one
  # grows the corpus kept across runs.
  corpus="$dir/corpus"
  [ "${limit[0]}" = "${limit[0]#-runs=}" ] || { corpus="$dir/counted-run"; rm -rf "$corpus"; mkdir -p "$corpus"; }
  if [ "$fuzzer" = gdn-compile-fuzzer ]; then seed_compile "$dir/seeds"; else seed_run "$dir/seeds"; fi
  echo "fuzz: $fuzzer (${limit[*]}), $(ls "$dir/seeds" | wc -l) seeds"
  if "$build/bin/$fuzzer" "${limit[@]}" -max_len=65536 -timeout=60 -rss_limit_mb=4096 \
      -artifact_prefix="$dir/" -print_final_stats=1 "$corpus" "$dir/seeds" \
      >"$dir/log" 2>&1; then
    echo "fuzz: $fuzzer: $(grep -E '^stat::number_of_executed_units' "$dir/log" | awk '{print $2}') inputs, no failure"
  else
    grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$dir/log" | head -n 20 || true
    echo "fuzz: $fuzzer FAILED (log: $dir/log)"
    status=1
  fi
done
exit $status
