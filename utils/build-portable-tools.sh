#!/usr/bin/env bash
#===- build-portable-tools.sh - gdn-opt, gdn-run, gdn-translate to carry ---===#
#
#   utils/build-portable-tools.sh [OUT]   (default device-carry/tools)
#
# Builds the three tools against MLIR's and LLVM's static archives
# (GDN_LINK_MLIR_DYLIB=OFF, in build-portable/) and copies them, stripped,
# to OUT/bin: about 20 MB that need only the C and C++ runtime, so a machine
# without MLIR (the GPU host) can run the compiler's half of a GPU suite
# itself: `BUILD_DIR=OUT utils/prepare-parallel-gpu-tests.sh ...` there
# instead of carrying its inputs and references, which are far larger than
# the tools.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PORTABLE_BUILD_DIR:-$root/build-portable}"
out="${1:-$root/device-carry/tools}"

# Static links of MLIR are several times faster with lld, when it is there
# (for every kind of target: LLVM's options then assume lld throughout).
linker=()
if command -v ld.lld >/dev/null; then
  linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld
          -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld)
fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" "${linker[@]}" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc-12 -DCMAKE_CXX_COMPILER=g++-12 \
    -DGDN_LINK_MLIR_DYLIB=OFF
fi
ninja -C "$build" gdn-opt gdn-run gdn-translate
mkdir -p "$out/bin"
for tool in gdn-opt gdn-run gdn-translate; do
  strip -o "$out/bin/$tool" "$build/bin/$tool"
  # Anything beyond the C and C++ runtime would not be on the GPU host.
  if ldd "$out/bin/$tool" | grep -vqE 'linux-vdso|ld-linux|lib(c|m|stdc\+\+|gcc_s)\.so'; then
    echo "error: $tool links more than the C and C++ runtime:" >&2
    ldd "$out/bin/$tool" >&2
    exit 1
  fi
done
echo "portable tools in $out/bin ($(du -sh "$out/bin" | cut -f1))"
