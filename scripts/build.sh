#!/usr/bin/env bash
#===- build.sh - configure and build the project --------------------------===#
#
# Configures build/ once (Ninja, g++-12, Debian's MLIR 22, libMLIR.so) and
# builds every tool. Extra arguments go to the configure step, e.g.
# `scripts/build.sh -DCMAKE_BUILD_TYPE=Debug`. BUILD_DIR overrides build/.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"

if [ ! -f "$build/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc-12 -DCMAKE_CXX_COMPILER=g++-12 \
    -DGDN_LINK_MLIR_DYLIB=ON "$@"
fi
ninja -C "$build"
