#!/usr/bin/env bash
#===- prepare-torch-gpu.sh - what the PyTorch extension's GPU check needs ===#
#
#   utils/prepare-torch-gpu.sh OUT [WHEELS...]
#
# The GPU machine has CUDA and PyTorch but neither the compiler nor a
# network. This builds, here, everything utils/torch_compare.py needs
# there, under OUT (carry it):
#
#   OUT/cache/      libgdnrt.so and one compiled library per program
#                   (python/gdn_torch/compiler.py: the two small layers of
#                   the transformers comparison, the Qwen3-Next layer at its
#                   real size, the delta rule at 2x4 and 16x32 heads, with
#                   and without an initial state, with and without final
#                   states, with their own L2 norms of q and k);
#   OUT/python/     the gdn_torch package (its C++ half is built there, by
#                   torch.utils.cpp_extension, on first use);
#   OUT/scripts/    torch_compare.py and its cuda_timing.py, layer_ab.py
#                   and profile_kernels.py;
#   OUT/whl/        the wheels given (transformers; FLA's under whl/fla/);
#   and, where TORCH_PYTHON names a python with the GPU machine's torch
#   version (CPU-only is fine), the native half prebuilt
#   (OUT/cache/gdn_torch_ops-<torch version>.so: no build there) and
#   OUT/reference.pt, the exact program's results on the comparison's
#   inputs (torch_compare.py --device cpu, through gdn-run).
#
# Then, on the GPU machine, from the repository root:
#   pip install --no-index --no-deps --target /tmp/site OUT/whl/*.whl
#   pip install --no-index --no-deps --target /tmp/fla OUT/whl/fla/*.whl
#   PYTHONPATH=/tmp/site GDN_TORCH_CACHE=OUT/cache \
#     GDN_RUNTIME_INCLUDE=kernels/include:runtime/include \
#     python3 OUT/scripts/torch_compare.py --fla-site /tmp/fla [--reference OUT/reference.pt]
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: prepare-torch-gpu.sh OUT [WHEELS...]}"
shift
build="${BUILD_DIR:-$root/build}"
export GDN_OPT="${GDN_OPT:-$build/bin/gdn-opt}" GDN_TRANSLATE="${GDN_TRANSLATE:-$build/bin/gdn-translate}"
mkdir -p "$out/cache" "$out/python" "$out/scripts" "$out/whl/fla"

# Always rebuilt: a libgdnrt.so from an older tree would be loaded by every
# program library of the cache (they link it from beside them).
bash "$root/runtime/build.sh" "$out/cache"
export GDN_GDNRT_DIR="$out/cache"

compile() { python3 "$root/python/gdn_torch/compiler.py" "$@" --cache "$out/cache"; }
# Recompiled every time: the compiler may have learnt to lower more.
rm -rf "$out"/cache/layer_* "$out"/cache/delta_rule_*
compile layer --projections qwen3_next --hidden 256 --key-heads 2 --value-heads 4 &
compile layer --projections qwen3_5 --hidden 256 --key-heads 2 --value-heads 4 &
wait
# The same with bf16 projection outputs (torch_compare.py --bf16-projections).
compile layer --projections qwen3_next --hidden 256 --key-heads 2 --value-heads 4 --bf16-projections &
compile layer --projections qwen3_5 --hidden 256 --key-heads 2 --value-heads 4 --bf16-projections &
wait
compile delta-rule --key-heads 2 --value-heads 4 &
compile delta-rule --key-heads 16 --value-heads 32 &
wait
# chunk_gated_delta_rule without an initial state runs the program that
# takes none.
compile delta-rule --key-heads 2 --value-heads 4 --zero-state &
compile delta-rule --key-heads 16 --value-heads 32 --zero-state &
wait
# ... and without output_final_state, the one that returns o alone.
compile delta-rule --key-heads 2 --value-heads 4 --no-final-state &
compile delta-rule --key-heads 16 --value-heads 32 --no-final-state &
wait
compile delta-rule --key-heads 2 --value-heads 4 --zero-state --no-final-state &
compile delta-rule --key-heads 16 --value-heads 32 --zero-state --no-final-state &
wait
# ... and use_qk_l2norm_in_kernel, the one that normalises q and k itself.
compile delta-rule --key-heads 2 --value-heads 4 --zero-state --no-final-state --qk-l2norm &
compile delta-rule --key-heads 16 --value-heads 32 --zero-state --no-final-state --qk-l2norm &
wait
compile layer --projections qwen3_next --hidden 2048 --key-heads 16 --value-heads 32 &
compile layer --projections qwen3_next --hidden 2048 --key-heads 16 --value-heads 32 --bf16-projections &
# What the forward keeps under save=operands (utils/profile_kernels.py layer --save operands).
compile layer --projections qwen3_next --hidden 2048 --key-heads 16 --value-heads 32 --save operands &
wait

rm -rf "$out/python/gdn_torch"
cp -r "$root/python/gdn_torch" "$out/python/"
find "$out/python" -name __pycache__ -prune -exec rm -rf {} +
cp "$root/utils/torch_compare.py" "$root/utils/cuda_timing.py" "$root/utils/layer_ab.py" \
  "$root/utils/profile_kernels.py" "$out/scripts/"
for wheel in "$@"; do
  case "$(basename "$wheel")" in
    fla_core-*|flash_linear_attention-*) cp "$wheel" "$out/whl/fla/" ;;
    *) cp "$wheel" "$out/whl/" ;;
  esac
done
if [ -n "${TORCH_PYTHON:-}" ]; then
  # No GPU here: name the target, and let cpp_extension find the toolkit.
  TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
    GDN_RUNTIME_INCLUDE="$root/runtime/include" PYTHONPATH="$root/python" \
    "$TORCH_PYTHON" -c "import gdn_torch, sys; gdn_torch.build_extension(sys.argv[1])" "$out/cache"
  GDN_TORCH_CACHE="$out/cache" GDN_RUN="${GDN_RUN:-$build/bin/gdn-run}" \
    "$TORCH_PYTHON" "$root/utils/torch_compare.py" --device cpu --save-reference "$out/reference.pt"
fi
du -sh "$out"
