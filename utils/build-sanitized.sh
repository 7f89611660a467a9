#!/usr/bin/env bash
#===- build-sanitized.sh - the project under ASan, UBSan and libFuzzer ----===#
#
#   utils/build-sanitized.sh [TARGETS...]   (default: everything)
#
# Configures build-sanitize/ (SANITIZE_BUILD_DIR overrides) with clang-22:
# every project library, tool, gdnrt and unit test compiled with
# AddressSanitizer and UndefinedBehaviorSanitizer (any report aborts) and
# libFuzzer's coverage, plus the fuzz targets (tools/gdn-compile-fuzzer, tools/gdn-run-fuzzer). MLIR
# itself is Debian's libMLIR.so, not instrumented. utils/sanitize.sh runs
# the hermetic suite on this build; utils/fuzz.sh runs the fuzzers.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SANITIZE_BUILD_DIR:-$root/build-sanitize}"
command -v clang++-22 >/dev/null ||
  { echo "build-sanitized: clang++-22 is missing; run scripts/install-deps.sh" >&2; exit 1; }

# LLVM's own switches: -fsanitize=address, UBSan (its flags are LLVM's
# build's and not exported, so they are given here: without vptr, which
# needs RTTI, and function, which needs it for calls through libMLIR.so's
# pointers; without recovery: any report aborts), libFuzzer's coverage, and
# shared libraries linked without -z defs (the sanitizers' runtime comes
# with the executable).
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_SANITIZER="Address;Undefined" -DLLVM_USE_SANITIZE_COVERAGE=ON \
    -DLLVM_UBSAN_FLAGS="-fsanitize=undefined -fno-sanitize=vptr,function -fno-sanitize-recover=all" \
    -DCMAKE_EXE_LINKER_FLAGS="-fuse-ld=lld" -DCMAKE_SHARED_LINKER_FLAGS="-fuse-ld=lld" \
    -DGDN_LINK_MLIR_DYLIB=ON -DGDN_ENABLE_FUZZERS=ON
fi
ninja -C "$build" "$@"
