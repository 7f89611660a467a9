#!/usr/bin/env bash
#===- runtime/build.sh - build libgdnrt.so without CMake or MLIR ----------===#
#
#   runtime/build.sh OUT_DIR
#
# For machines that have the CUDA toolkit (with NCCL) but not the compiler's
# build: the GPU test machine builds the runtime its harnesses link this way.
# CXX (default g++-12 if present, else g++) and CUDA_HOME (default
# /usr/local/cuda) may be overridden.
#
#===------------------------------------------------------------------------===#
set -euo pipefail
out="${1:?usage: runtime/build.sh OUT_DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cuda="${CUDA_HOME:-/usr/local/cuda}"
cxx="${CXX:-$(command -v g++-12 || command -v g++)}"
mkdir -p "$out"
"$cxx" -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -pthread \
  -I"$here/include" -I"$cuda/include" \
  "$here"/lib/*.cpp \
  -L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcudart -lcublasLt -lnccl \
  -Wl,-soname,libgdnrt.so -o "$out/libgdnrt.so"
echo "built $out/libgdnrt.so"
