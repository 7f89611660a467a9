#!/usr/bin/env bash
#===- backward-memory-table.sh - the memory table of docs/backward.md -----===#
#
# Prints, for each example layer (both gqa16x32: 16 q/k heads, 32 v heads,
# K = V = 128, 8192 conv channels, bf16) and each save policy of
# gdn-generate-backward, the bytes per token the forward keeps for the
# backward, and what that is per layer at 8K, 32K and 128K tokens, as a
# markdown table. The numbers come from the pass's own remarks
# (report-memory=true), so the table in docs/backward.md is what the
# compiler saves; test/Docs/backward-memory-table.test checks that they
# agree.
#
# Usage: utils/backward-memory-table.sh [build-dir]
#
#===------------------------------------------------------------------------===#
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-${BUILD_DIR:-$root/build}}/bin"

echo "| layer | save= | values saved | bytes per token | MiB per layer, T = 8K | T = 32K | T = 128K |"
echo "|---|---|---|---|---|---|---|"
for example in qwen3_next_80b_a3b_layer qwen3_5_layer; do
  for save in activations operands inputs none; do
    remark=$("$bin/gdn-opt" --gdn-expand-layer \
      "--gdn-generate-backward=save=$save report-memory=true" \
      "$root/examples/$example.mlir" -o /dev/null 2>&1 | grep -o 'save=[a-z]*: .*')
    # save=S: @F_forward saves N value(s), B bytes per token and C bytes besides...
    values=$(sed -E 's/^.* saves ([0-9]+) value.*$/\1/' <<<"$remark")
    bytes=$(sed -E 's/^.*, ([0-9]+) bytes per token.*$/\1/' <<<"$remark")
    awk -v l="$example" -v s="$save" -v n="$values" -v b="$bytes" 'BEGIN {
      printf "| %s | %s | %d | %d | %.1f | %.1f | %.1f |\n", l, s, n, b,
             b * 8192 / 1048576, b * 32768 / 1048576, b * 131072 / 1048576 }'
  done
done
