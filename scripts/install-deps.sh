#!/usr/bin/env bash
#===- install-deps.sh - install what the build needs on Debian 12 ---------===#
#
# Installs LLVM/MLIR 22 (Debian's packages), Ninja, CMake, ccache,
# GoogleTest, and clang-22 with its sanitizer runtimes and lld. CUDA 13 and
# g++-12 come with the machine image. Skips apt entirely when everything is
# present, so it is cheap to call before every build.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

# clang-22 and its sanitizer and libFuzzer runtimes build the fuzzers and
# the sanitized tree (utils/build-sanitized.sh); libzstd-dev lets the
# portable tools link LLVM's archives (utils/build-portable-tools.sh).
packages=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
          ninja-build cmake ccache g++-12 python3 libgtest-dev
          clang-22 libclang-rt-22-dev lld-22 libzstd-dev)

missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
