#!/usr/bin/env bash
#===- test.sh - install, build and run the whole test suite ---------------===#
#
# The README's test command and what CI runs. Runs the lit suite through
# `ninja check-gdn` (which rebuilds what the tests need), prints a plain
# "N passed, N failed" line, then runs the fuzzers for a bounded number of
# inputs (utils/fuzz.sh). Exits non-zero when any test or fuzzer fails.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
LIT_OPTS="${LIT_OPTS:--sv}" ninja -C "$build" check-gdn 2>&1 | tee "$log" ||
  status=$?

count() { # count LABEL -> the number after "LABEL:" in lit's summary, or 0
  sed -n "s/^ *$1 *: *\([0-9][0-9]*\).*/\1/p" "$log" | tail -n 1 | grep . || echo 0
}
passed=$(( $(count Passed) + $(count "Expectedly Failed") ))
failed=$(( $(count Failed) + $(count "Unexpectedly Passed") + $(count Unresolved) + $(count "Timed Out") ))
skipped=$(( $(count Unsupported) + $(count Skipped) ))
echo "lit: ${passed} passed, ${failed} failed, ${skipped} skipped"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then
  exit 1
fi

# The fuzzers, for a fixed number of inputs from a fixed seed (repeatable),
# under ASan and UBSan (docs/reliability.md); utils/fuzz.sh SECONDS runs
# them longer.
"$root/utils/fuzz.sh" --runs "${GDN_FUZZ_RUNS:-3000}"
