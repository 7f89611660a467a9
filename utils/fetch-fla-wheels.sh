#!/usr/bin/env bash
#===- fetch-fla-wheels.sh - FLA for the GPU machine's baseline ------------===#
#
# The GPU machine cannot reach PyPI. This downloads, here, the pure-Python
# wheels the FLA baseline needs (flash-linear-attention, fla-core, einops) into
# .whl/ (git-ignored through .git/info/exclude), to be carried to the GPU
# machine and installed there with
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 -d .whl \
  flash-linear-attention==0.6.0 fla-core==0.6.0 einops
ls .whl
