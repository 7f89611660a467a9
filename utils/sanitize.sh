#!/usr/bin/env bash
#===- sanitize.sh - the hermetic suite under ASan and UBSan ---------------===#
#
#   utils/sanitize.sh [LIT_ARGS...]
#
# Builds the project with AddressSanitizer and UndefinedBehaviorSanitizer
# (utils/build-sanitized.sh, build-sanitize/) and runs the lit suite on
# that build: every tool, library, gdnrt and unit test the suite runs is
# instrumented, and any report fails its test (UBSan does not recover;
# LeakSanitizer is on). Tests that build other programs against the tree
# are UNSUPPORTED there (feature `sanitized`). Prints lit's summary.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SANITIZE_BUILD_DIR:-$root/build-sanitize}"
"$root/utils/build-sanitized.sh"
source "$root/build_tools/sanitizer-env.sh"
ninja -C "$build" gdn-doc >/dev/null
/usr/lib/llvm-22/bin/lit "${@:--sv}" "$build/test"
