#!/usr/bin/env bash
#===- demo.sh - the main job: compile a real layer ------------------------===#
#
# Installs what is missing, builds, and runs gdn-opt's default pipeline on the
# Qwen3-Next-80B-A3B GDN layer of examples/, printing the result. Pass another
# example as the first argument to compile that one instead.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" >/dev/null
example="${1:-$root/examples/qwen3_next_80b_a3b_layer.mlir}"
exec "${BUILD_DIR:-$root/build}/bin/gdn-opt" --gdn-pipeline "$example"
