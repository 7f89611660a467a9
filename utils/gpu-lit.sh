#!/usr/bin/env bash
#===- gpu-lit.sh - the whole lit suite on a GPU host without MLIR ---------===#
#
#   utils/gpu-lit.sh [TREE] [LIT OPTIONS...]   (default device-carry/lit)
#
# Runs the lit suite, GPU tests included, on a machine with CUDA (and
# PyTorch for test/Torch) but without MLIR or LLVM's tools, over the tree
# utils/prepare-gpu-lit.sh put together elsewhere. It writes the tree's
# site configuration for this checkout and this machine, then runs
# `lit -sv` on it. On a machine with MLIR, `scripts/test.sh` (or
# `ninja -C build check-gdn`) runs the same suite; the only tests that
# cannot run over a carried tree are those that install or configure the
# build tree itself (`REQUIRES: build-tree`), which lit reports UNSUPPORTED.
#
#   utils/gpu-lit.sh device-carry/lit                  # everything
#   utils/gpu-lit.sh device-carry/lit --filter=Integration/gpu-parallel
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tree="$(cd "${1:-$root/device-carry/lit}" && pwd)"
shift || true
if [ ! -x "$tree/bin/gdn-opt" ] || [ ! -f "$tree/llvm/lit.py" ]; then
  echo "error: $tree is not a tree from utils/prepare-gpu-lit.sh (no bin/gdn-opt or llvm/lit.py)" >&2
  exit 1
fi
# Tools built from other compiler sources than this checkout's would test
# the wrong compiler: refuse them (GDN_GPU_LIT_ANY_TREE=1 runs anyway).
if [ -f "$tree/compiler-sources" ]; then
  built=$(cat "$tree/compiler-sources")
  here=$("$root/utils/compiler-sources-digest.sh")
  if [ "$built" != "$here" ] && [ "${GDN_GPU_LIT_ANY_TREE:-0}" != 1 ]; then
    echo "error: $tree was built from other compiler sources ($built) than this checkout's" \
         "($here); rebuild it with utils/prepare-gpu-lit.sh, or set GDN_GPU_LIT_ANY_TREE=1" >&2
    exit 1
  fi
fi
mkdir -p "$tree/test"
python3 - "$root" "$tree" "$(command -v cmake || true)" <<'EOF'
import sys
root, tree, cmake = sys.argv[1:4]
values = {
    "llvm_tools_dir": f"{tree}/llvm/bin",
    "gdn_src_root": root,
    "gdn_obj_root": tree,
    "gdn_tools_dir": f"{tree}/bin",
    "gdn_have_gdnrt": "ON",
    "cmake_command": cmake,
    "cmake_generator": "Ninja",
    "cmake_make_program": "ninja",
    "cmake_build_type": "Release",
    "host_c_compiler": "gcc",
    "host_cxx_compiler": "g++",
    "gdn_ccache": "",
    "host_cxx_flags": "",
}
with open(f"{tree}/test/lit.site.cfg.py", "w") as f:
    f.write("# Written by utils/gpu-lit.sh for a carried tree.\n")
    for key, value in values.items():
        f.write(f"config.{key} = {value!r}\n")
    f.write("import lit.llvm\nlit.llvm.initialize(lit_config, config)\n")
    f.write(f"lit_config.load_config(config, {root + '/test/lit.cfg.py'!r})\n")
EOF
export PYTHONPATH="$tree/llvm${PYTHONPATH:+:$PYTHONPATH}"
exec python3 "$tree/llvm/lit.py" -sv "$tree/test" "$@"
