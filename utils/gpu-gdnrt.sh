#!/usr/bin/env bash
#===- gpu-gdnrt.sh - libgdnrt.so for the GPU scripts' harnesses ------------===#
#
#   utils/gpu-gdnrt.sh OUT_DIR
#
# Puts libgdnrt.so in OUT_DIR for gpu-integration.sh, gpu-parallel.sh and
# gpu-bench.sh: GDN_PREBUILT's gdnrt/libgdnrt.so when that folder has one
# (built on the host, where device time is not spent on it), else built here
# by runtime/build.sh (gdnrt needs no MLIR). On a failed build prints the
# build's log and "FAIL build gdnrt", and exits 1.
#
#===------------------------------------------------------------------------===#
set -uo pipefail
out="${1:?usage: utils/gpu-gdnrt.sh OUT_DIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$out"
if [ -n "${GDN_PREBUILT:-}" ] && [ -f "$GDN_PREBUILT/gdnrt/libgdnrt.so" ]; then
  cp "$GDN_PREBUILT/gdnrt/libgdnrt.so" "$out/"
elif ! bash "$root/runtime/build.sh" "$out" >"$out/build.log" 2>&1; then
  cat "$out/build.log"
  echo "FAIL build gdnrt"
  exit 1
fi
