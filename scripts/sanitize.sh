#!/usr/bin/env bash
#===- sanitize.sh - the hermetic suite under ASan and UBSan ---------------===#
#
#   scripts/sanitize.sh [LIT_ARGS...]
#
# Builds the project with AddressSanitizer and UndefinedBehaviorSanitizer
# (scripts/build-sanitized.sh, build-sanitize/) and runs the lit suite on
# that build: every tool, library, gdnrt and unit test the suite runs is
# instrumented, and any report fails its test (UBSan does not recover;
# LeakSanitizer is on). Tests that build other programs against the tree
# are UNSUPPORTED there (feature `sanitized`). Prints lit's summary.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SANITIZE_BUILD_DIR:-$root/build-sanitize}"
"$root/scripts/build-sanitized.sh"
# Debian's libMLIR.so is not instrumented but shares std containers and
# LLVM's bump allocators with the project's code, whose annotations ASan
# would misread (the project's inline copy poisons a slab that libMLIR.so's
# copy then allocates from without unpoisoning): both kinds are off.
# Everything else reports, with a stack, and fails.
export ASAN_OPTIONS="detect_container_overflow=0:allow_user_poisoning=0:detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/build_tools/lsan-suppressions.txt"
ninja -C "$build" gdn-doc >/dev/null
/usr/lib/llvm-22/bin/lit "${@:--sv}" "$build/test"
