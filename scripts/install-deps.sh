#!/usr/bin/env bash
#===- install-deps.sh - install what the build needs on Debian 12 ---------===#
#
# Installs LLVM/MLIR 22 (Debian's packages), Ninja, CMake, ccache and
# GoogleTest. CUDA 13 and g++-12 come with the machine image. Skips apt
# entirely when everything is present, so it is cheap to call before every
# build.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

packages=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
          ninja-build cmake ccache g++-12 python3 libgtest-dev)

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
